"""The results site: many reports (implementations and their runs) as one static site, self-contained files.

``python -m conformance_tests site REPORT.json... --out DIR`` writes:

- ``index.html``: the grid, one row per implementation (a backend name) and one column per clause, grouped by
  family, the families some newest run failed first, then the spec's order, with each clause's level; a cell is
  the clause outcome of the implementation's newest run (ordered by ``run.started``), a cell whose report row
  records a ``deviation`` is marked. Each family also has a summary column (its worst outcome per
  implementation); a family is folded to that column unless it is open: of the failing families, the smallest
  first, as many are open as fit ``OPEN_COLUMNS`` clause columns; a click on a family's name or summary cell
  opens or folds it, and any filter opens them all.
  Filters by outcome, level and family (inline JS, state in the URL hash:
  ``#outcome=failed&level=must&family=data``, and ``open=`` the families opened or folded by hand);
- ``impl/<safe name>.html``: an implementation's badge (as ``badge.json`` says it), the verdict of its newest
  run, its history (one row per run, with what changed since the previous run as ``report diff`` computes it)
  and a small inline SVG chart of the passed tests per run; ``impl/<safe name>.badge.json`` beside it;
- ``clause/<safe id>.html``: a clause's id, title, level, family, source and its English and Chinese sentence
  from the packaged spec, and the outcome of each implementation's newest run;
- ``runs/<safe name>/<n>/report.json`` and ``index.html``: each run's own report, written from the report's data
  as read and validated, and its page rendered from that data (nothing of a report folder is copied: an HTML
  file found there is never read, and a report file that is a link is refused), so that every link works
  offline and no script but the kit's runs in the site;
- ``site.json``: what the site holds; it also marks the folder as a site this command may replace.

The site is written into a fresh folder beside ``DIR`` and put in its place at the end, so a failed build leaves
the previous site as it was. ``DIR`` must be absent, empty, or a site this command built.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import sys
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..spec import Clause, Spec, families, load_spec
from .badge import to_badge
from .diff import diff_reports
from .folders import safe_name
from .htmlpage import environment, to_html
from .model import CLAUSE_OUTCOMES, LEVELS
from .parts import ClauseRow, Report, full_run, outcome_count
from .rerun import shown_path
from .schema import ReportError, load_report, to_json
from .shades import BADGE_HEX, BADGE_HEX_UNKNOWN, VERDICT_CLASS, shade_of
from .site_views import (
    BadgeView,
    Cell,
    ChangesView,
    Chart,
    FamilyCell,
    FamilyGroup,
    GridRow,
    HistoryRow,
    Point,
    Series,
    VerdictView,
)

#: clause outcomes an implementation's page lists as failing in its newest run
FAILING_CLAUSE_OUTCOMES = ("failed", "flaky", "incompatible")
#: clause outcomes the grid's summary counts as failed (the blocking ones)
FAILED_CLAUSE_OUTCOMES = ("failed", "flaky")
#: the generator named in site.json; a folder whose site.json names it may be replaced by a new build
GENERATOR = "push_cache conformance site"
#: the outcome of a clause the newest run's report does not list (a run of another release)
ABSENT = "absent"
CELL_OUTCOMES = (*CLAUSE_OUTCOMES, ABSENT)
#: one short sign per cell outcome (the colour says it too; the legend names them)
SIGNS = {"passed": "✓", "failed": "✗", "flaky": "≈", "incompatible": "≠", "xfailed": "x", "not_supported": "–",
         "skipped": "s", "untested": "·", ABSENT: " "}
#: how many clause columns the grid opens by default (of the failing families, the smallest first, as many as fit):
#: 1280 px hold them beside the implementation's name, its newest verdict and every other family's summary column
OPEN_COLUMNS = 32
CHART = {"width": 480, "height": 150, "left": 44, "right": 16, "top": 14, "bottom": 28}


class SiteError(ValueError):
    """The site cannot be built (no reports, an output folder that cannot be used); the message is one line."""


@dataclass
class Run:
    report: Report
    source: Path
    order: int  # where it came on the command line (breaks ties between equal start times)
    number: int = 0  # 1, 2, ... in the implementation's history, oldest first
    folder: str = ""  # runs/<safe name>/<number>

    @property
    def json(self) -> str:
        return f"{self.folder}/report.json"

    @property
    def page(self) -> str:
        """The run's own page in the site (rendered from its report)."""
        return f"{self.folder}/index.html"

    @property
    def link(self) -> str:
        return self.page


@dataclass
class Implementation:
    name: str
    slug: str
    runs: list[Run] = field(default_factory=list)

    @property
    def page(self) -> str:
        return f"impl/{self.slug}.html"

    @property
    def badge_json(self) -> str:
        return f"impl/{self.slug}.badge.json"

    @property
    def newest(self) -> Run:
        return self.runs[-1]


@dataclass(frozen=True)
class Column:
    id: str
    family: str
    level: str
    title: str
    page: str
    label: str  # the id without "push_cache.<family>."
    spec: Clause | None


# ------------------------------------------------------------------------------------------------ the model


def _started(report: Report) -> tuple[int, float]:
    """Sort key of a run's start: runs without a readable time first, then by time (a time without an offset is
    read as UTC)."""
    text = report["run"].get("started")
    try:
        when = datetime.fromisoformat(str(text))
    except (TypeError, ValueError):
        return (0, 0.0)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (1, when.timestamp())


def _implementations(runs: list[Run]) -> list[Implementation]:
    """The implementations in the order they first come on the command line, each with its runs oldest first."""
    by_name: dict[str, Implementation] = {}
    for run in runs:
        name = run.report["backend"]["name"]
        if name not in by_name:
            by_name[name] = Implementation(name, safe_name(name))
        by_name[name].runs.append(run)
    for impl in by_name.values():
        impl.runs.sort(key=lambda r: (_started(r.report), r.order))
        for number, run in enumerate(impl.runs, 1):
            run.number = number
            run.folder = f"runs/{impl.slug}/{number}"
    return list(by_name.values())


def _columns(rows_seen: list[ClauseRow], spec: Spec) -> list[Column]:
    """One column per clause ID the given report rows name: by family (the spec's order, unknown families
    last), then the spec's clause order, then first seen."""
    known = {c.id: c for c in spec.clauses}
    spec_order = {cid: i for i, cid in enumerate(known)}
    family_order = {f: i for i, f in enumerate(families())}
    first: dict[str, ClauseRow] = {}
    for row in rows_seen:
        first.setdefault(row["id"], row)
    columns = []
    for cid, row in first.items():
        clause = known.get(cid)
        family = clause.family if clause else row["family"]
        level = clause.level.value if clause else row["level"]
        title = clause.title if clause else row["title"]
        prefix = f"push_cache.{family}."
        label = cid[len(prefix):] if cid.startswith(prefix) and len(cid) > len(prefix) else cid
        columns.append(Column(cid, family, level, title, f"clause/{safe_name(cid)}.html", label, clause))
    seen = {cid: i for i, cid in enumerate(first)}
    failing = {r["family"] if r["id"] not in known else known[r["id"]].family
               for r in rows_seen if r["outcome"] in FAILING_CLAUSE_OUTCOMES}
    columns.sort(key=lambda c: (c.family not in failing, family_order.get(c.family, len(family_order)), c.family,
                                spec_order.get(c.id, len(spec_order)), seen[c.id]))
    return columns


def _family_groups(columns: list[Column], grid: list[GridRow]) -> list[FamilyGroup]:
    """The grid's families in column order: their clause count, how many of their clauses some newest run failed,
    whether they are open by default (the failing ones, while their columns fit OPEN_COLUMNS), and per
    implementation the family's summary cell (its worst outcome, and how many clauses have it)."""
    groups: list[FamilyGroup] = []
    for i, col in enumerate(columns):
        if not groups or groups[-1]["name"] != col.family:
            groups.append({"name": col.family, "count": 0, "columns": [], "failing": 0, "open": False, "summary": []})
        groups[-1]["count"] += 1
        groups[-1]["columns"].append(i)
    for g in groups:
        cells = [[row["cells"][i] for i in g["columns"]] for row in grid]
        g["failing"] = sum(1 for i in g["columns"]
                           if any(row["cells"][i]["outcome"] in FAILING_CLAUSE_OUTCOMES for row in grid))
        g["open"] = False
        g["summary"] = [_family_cell(g["name"], mine) for mine in cells]
    budget = OPEN_COLUMNS
    for g in sorted((g for g in groups if g["failing"]), key=lambda g: g["count"]):  # as many as fit
        if g["count"] <= budget:
            g["open"] = True
            budget -= g["count"]
    return groups


def _family_cell(family: str, cells: list[Cell]) -> FamilyCell:
    counts = {o: sum(1 for c in cells if c["outcome"] == o) for o in CELL_OUTCOMES}
    worst = next((o for o in CELL_OUTCOMES if counts[o]), ABSENT)
    said = ", ".join(f"{n} {o.replace('_', ' ')}" for o, n in counts.items() if n)
    return {"outcome": worst, "sign": SIGNS.get(worst, "?"), "count": counts[worst], "all": counts[worst] == len(cells),
            "title": f"{family}: {said}"}


def _fragment(clause_id: str) -> str:
    """The fragment of a clause's row in a run's own index.html (``id="clause-<id>"``), percent-encoded."""
    return "clause-" + urllib.parse.quote(clause_id, safe="._-")


def _cell(impl: Implementation, col: Column) -> Cell:
    run = impl.newest
    row = next((r for r in run.report["clauses"] if r["id"] == col.id), None)
    outcome = row["outcome"] if row else ABSENT
    deviation = row.get("deviation") if row else None
    # the run's own page at the clause's row where the site has it, else the clause page
    href = f"{run.page}#{_fragment(col.id)}" if row else col.page
    return {"outcome": outcome, "sign": SIGNS.get(outcome, "?"), "deviation": deviation, "href": href,
            "tests": len(row["tests"]) if row else 0, "run": run}


def _verdict(report: Report) -> VerdictView:
    verdict = report["verdict"]
    return {"label": verdict["label"], "class": VERDICT_CLASS[shade_of(verdict)],
            "certified": bool(verdict["certified"]), "reasons": verdict.get("reasons") or []}


def _changes(before: Report | None, after: Report) -> ChangesView | None:
    """What changed from the previous run, as ``report diff`` computes it."""
    if before is None:
        return None
    diff = diff_reports(before, after)
    return {
        "newly_failing": [c["id"] for c in diff["clauses"]["newly_failing"]],
        "fixed": [c["id"] for c in diff["clauses"]["fixed"]],
        "tests_newly_failing": len(diff["tests"]["newly_failing"]),
        "tests_fixed": len(diff["tests"]["fixed"]),
        "changed": len(diff["clauses"]["changed"]),
        "regression": diff["regression"],
        "verdict_before": diff["before"]["verdict"],
        "verdict_after": diff["after"]["verdict"],
    }


def _history(impl: Implementation) -> list[HistoryRow]:
    out: list[HistoryRow] = []
    previous: Report | None = None
    for run in impl.runs:
        report = run.report
        out.append({
            "run": run,
            "started": report["run"].get("started") or "unknown",
            "spec": report["spec"]["version"],
            "suite": report["suite"]["version"],
            "backend_version": report["backend"].get("version") or "",
            "verdict": _verdict(report),
            "summary": report["summary"],
            "full": bool((report.get("completeness") or full_run())["full"]),
            "changes": _changes(previous, report),
        })
        previous = report
    return out


def _chart(history: list[HistoryRow]) -> Chart:
    """Coordinates of the passed (and failed) tests per run, oldest left."""
    c = CHART
    inner_w = c["width"] - c["left"] - c["right"]
    inner_h = c["height"] - c["top"] - c["bottom"]
    top = max([1] + [max(h["summary"]["passed"], h["summary"]["failed"]) for h in history])
    n = len(history)

    def x(i: int) -> float:
        return round(c["left"] + (inner_w / 2 if n == 1 else inner_w * i / (n - 1)), 1)

    def y(value: int) -> float:
        return round(c["top"] + inner_h * (1 - value / top), 1)

    series: list[Series] = []
    for key in ("passed", "failed"):
        points: list[Point] = [{"x": x(i), "y": y(outcome_count(h["summary"], key)),
                                "value": outcome_count(h["summary"], key), "number": h["run"].number,
                                "started": h["started"]} for i, h in enumerate(history)]
        series.append({"key": key, "points": points, "path": " ".join(f"{p['x']},{p['y']}" for p in points)})
    return {"width": c["width"], "height": c["height"], "left": c["left"], "right": c["right"], "top": c["top"],
            "bottom": c["bottom"], "max": top, "series": series, "y_max": y(top), "y_zero": y(0),
            "x_first": x(0), "x_last": x(n - 1), "bottom_line": c["height"] - c["bottom"]}


def _badge(report: Report) -> BadgeView:
    badge = to_badge(report)
    return {**badge, "hex": BADGE_HEX.get(badge["color"], BADGE_HEX_UNKNOWN)}


# --------------------------------------------------------------------------------------------- rendering


def _render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(outcomes=CELL_OUTCOMES, signs=SIGNS, **context)


def _pages(impls: list[Implementation], spec: Spec) -> dict[str, str]:
    """Every generated page and JSON file of the site, by its path in the site."""
    newest_rows = [row for impl in impls for row in impl.newest.report["clauses"]]
    columns = _columns(newest_rows, spec)
    all_columns = _columns(newest_rows + [row for impl in impls for run in impl.runs
                                          for row in run.report["clauses"]], spec)
    clause_page = {col.id: col.page for col in all_columns}
    grid: list[GridRow] = [{"impl": impl, "verdict": _verdict(impl.newest.report),
             "cells": [_cell(impl, col) for col in columns]} for impl in impls]
    present = {cell["outcome"] for row in grid for cell in row["cells"]}
    levels_present = [lv for lv in LEVELS if any(col.level == lv for col in columns)]
    levels_present += sorted({col.level for col in columns} - set(LEVELS))
    pages: dict[str, str] = {}
    groups = _family_groups(columns, grid)
    pages["index.html"] = _render(
        "site_index.html.j2", root="", impls=impls, columns=columns, groups=groups, grid=grid,
        filter_outcomes=[o for o in CELL_OUTCOMES if o in present], filter_levels=levels_present,
        filter_families=[g["name"] for g in groups],
        deviations=sum(1 for row in grid for cell in row["cells"] if cell["deviation"]),
        deviation_cols={col.id for row in grid for col, cell in zip(columns, row["cells"], strict=True)
                        if cell["deviation"]},
        run_count=sum(len(impl.runs) for impl in impls),
        failed_outcomes=FAILED_CLAUSE_OUTCOMES,
        spec_version=spec.version,
    )
    for impl in impls:
        history = _history(impl)
        newest = impl.newest.report
        failing = [{"id": r["id"], "outcome": r["outcome"], "level": r["level"], "deviation": r.get("deviation"),
                    "page": clause_page[r["id"]]} for r in newest["clauses"]
                   if r["outcome"] in FAILING_CLAUSE_OUTCOMES]
        badge = _badge(newest)
        pages[impl.badge_json] = json.dumps({k: badge[k] for k in ("schemaVersion", "label", "message", "color")},
                                            indent=2) + "\n"
        pages[impl.page] = _render(
            "site_impl.html.j2", root="../", impl=impl, badge=badge, verdict=_verdict(newest), newest=newest,
            history=history, chart=_chart(history), failing=failing, clause_page=clause_page,
        )
    for col in all_columns:
        rows = []
        for impl in impls:
            run = impl.newest
            row = next((r for r in run.report["clauses"] if r["id"] == col.id), None)
            rows.append({"impl": impl, "run": run, "row": row, "outcome": row["outcome"] if row else ABSENT,
                         "href": (f"{run.page}#{_fragment(col.id)}" if row else run.json)})
        pages[col.page] = _render("site_clause.html.j2", root="../", col=col, clause=col.spec, rows=rows,
                                  spec_version=spec.version)
    for impl in impls:
        for run in impl.runs:  # from the report's data alone: nothing of its folder is copied
            pages[run.json] = to_json(run.report)
            pages[run.page] = to_html(run.report, shown_path(run.source))
    pages["site.json"] = json.dumps({
        "generator": GENERATOR,
        "spec": spec.version,
        "implementations": [{
            "name": impl.name, "page": impl.page, "badge": impl.badge_json,
            "runs": [{"number": r.number, "started": r.report["run"].get("started"),
                      "spec": r.report["spec"]["version"], "verdict": r.report["verdict"]["label"],
                      "report": r.json, "page": r.page, "source": str(r.source)} for r in impl.runs],
        } for impl in impls],
        "clauses": [{"id": col.id, "page": col.page, "in_spec": col.spec is not None} for col in all_columns],
    }, indent=2, ensure_ascii=False) + "\n"
    return pages


# -------------------------------------------------------------------------------------------------- writing


def _is_site(folder: Path) -> bool:
    try:
        manifest = json.loads((folder / "site.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # a planted, deeply nested site.json is no site of ours
        return False
    return isinstance(manifest, dict) and manifest.get("generator") == GENERATOR


def _check_out(out: Path) -> None:
    if out.is_symlink():
        raise SiteError(f"{out}: is a link; name the folder itself")
    if out.exists() and not out.is_dir():
        raise SiteError(f"{out}: exists and is not a folder")
    if out.is_dir():
        try:
            empty = next(out.iterdir(), None) is None
        except OSError as exc:
            raise SiteError(f"{out}: cannot read: {exc.strerror or exc}") from None
        if not empty and not _is_site(out):
            raise SiteError(f"{out}: holds files that are not a site built by this command; name an empty or "
                            "new folder")


def _write(pages: dict[str, str], out: Path) -> dict[str, Path]:
    """Write the site into a fresh folder beside ``out``, then put it in ``out``'s place."""
    parent = out.parent
    fresh = parent / f".{out.name}.new-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(fresh)
    except OSError as exc:
        raise SiteError(f"{out}: cannot write: {exc.strerror or exc}") from None
    written: list[str] = []
    try:
        for name, text in pages.items():
            target = fresh / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written.append(name)
        if out.exists():
            old = parent / f".{out.name}.old-{os.getpid()}-{secrets.token_hex(4)}"
            os.rename(out, old)
            os.rename(fresh, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(fresh, out)
    except OSError as exc:
        shutil.rmtree(fresh, ignore_errors=True)
        raise SiteError(f"{out}: cannot write: {exc.strerror or exc}") from None
    return {name: out / name for name in written}


def build_site(report_paths: Sequence[Path], out: Path) -> dict[str, Path]:
    """Build the site of ``report_paths`` in ``out``; returns every file written, by its path in the site.

    Raises ReportError for a report that cannot be read or breaks the schema, SiteError when there is no report
    or ``out`` cannot be used (each one line)."""
    out = Path(os.path.abspath(out))
    paths: list[Path] = []
    for path in map(Path, report_paths):
        if all(os.path.abspath(path) != os.path.abspath(p) for p in paths):
            paths.append(path)
    if not paths:
        raise SiteError("no reports: name at least one report.json")
    _check_out(out)
    for path in paths:
        if path.is_symlink():  # a report folder's file may only be read as itself, never where a link leads
            raise SiteError(f"{path}: is a link; name the report file itself")
    runs = [Run(load_report(path), path, order) for order, path in enumerate(paths)]
    impls = _implementations(runs)
    spec = load_spec()
    pages = _pages(impls, spec)
    return _write(pages, out)


# ------------------------------------------------------------------------------------------------------ CLI


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, not argparse's usage block
        raise _Usage(message)


def _parser(prog: str | None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog or "python -m conformance_tests site",
        description="Build a static site of conformance results from report.json files: a grid of "
                    "implementations x clauses, a page per implementation (badge, history) and per clause.",
    )
    parser.add_argument("reports", nargs="*", type=Path, metavar="REPORT.json",
                        help="reports of one or more implementations (backends), any number of runs each")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="the site's folder: absent, empty, or a site this command built (replaced whole)")
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """``site REPORT.json... --out DIR``: 0 when the site was written, 2 (one line on stderr) for bad input."""
    parser = _parser(prog)
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except _Usage as exc:
        print(f"error: {exc} (site --help lists the options)", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    try:
        files = build_site(args.reports, args.out)
    except (ReportError, SiteError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    manifest = json.loads(files["site.json"].read_text(encoding="utf-8"))
    runs = sum(len(i["runs"]) for i in manifest["implementations"])
    print(f"site: {len(manifest['implementations'])} implementation(s), {runs} run(s), "
          f"{len(manifest['clauses'])} clause page(s): {files['index.html']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

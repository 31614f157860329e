"""The results site: many reports (implementations and their runs, of any operation of the transfer family) as
one static site, self-contained files.

``python -m conformance_tests site REPORT.json... --out DIR`` writes:

- ``index.html``: one grid per operation the reports certified (``spec.operation``; push_cache for a report
  written before the family), in the family's order, each under its operation's name when there are several.
  A grid has one row per implementation of the operation (a backend name: a backend's reports of two operations
  are two implementations, one in each grid) and one column per clause its newest runs name, described and
  ordered by that operation's packaged spec (read by the spec loader): grouped by family, the families some
  newest run failed first, then the spec's order, with each clause's level; a cell is the clause outcome of the
  implementation's newest run (ordered by ``run.started``), a cell whose report row records a ``deviation`` is
  marked. Each family also has a summary column (its worst outcome per implementation); a family is folded to
  that column unless it is open: of a grid's failing families, the smallest first, as many are open as fit
  ``OPEN_COLUMNS`` clause columns; a click on a family's name or summary cell opens or folds it, and any filter
  opens them all.
  Filters by outcome, level, family and (with several operations) operation, across every grid (inline JS,
  state in the URL hash: ``#outcome=failed&level=must&family=data&operation=pull_cache``, and ``open=`` the
  families opened or folded by hand, named ``<operation>.<family>`` when there are several grids);
- ``impl/<slug>.html``: an implementation's badge (as ``badge.json`` says it, labelled with its operation), the
  verdict of its newest run, its history (one row per run, with what changed since the previous run as
  ``report diff`` computes it) and a small inline SVG chart of the passed tests per run;
  ``impl/<slug>.badge.json`` beside it. The slug is the backend's safe name for push_cache and
  ``<safe name>@<operation>`` for the others, as the report folders are named;
- ``clause/<safe id>.html``: a clause's id, title, level, family, source and its English and Chinese sentence
  from its operation's packaged spec, and the outcome of the newest run of each implementation of that operation;
- ``runs/<slug>/<n>/report.json`` and ``index.html``: each run's own report, written from the report's data
  as read and validated, and its page rendered from that data (nothing of a report folder is copied: an HTML
  file found there is never read, and a report file that is a link is refused), so that every link works
  offline and no script but the kit's runs in the site;
- ``site.json``: what the site holds (its operations, each with its spec's release, implementations and
  clauses); it also marks the folder as a site this command may replace.

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .badge import to_badge
from .diff import diff_reports
from .htmlpage import environment, to_html
from .model import LEVELS
from .parts import Report, full_run, outcome_count
from .rerun import shown_path
from .schema import ReportError, load_report, to_json
from .shades import BADGE_HEX, BADGE_HEX_UNKNOWN
from .site_model import (
    ABSENT,
    CELL_OUTCOMES,
    FAILING_CLAUSE_OUTCOMES,
    SIGNS,
    Column,
    Implementation,
    Run,
    by_operation,
    fragment,
    implementations,
    newest_row,
    operation_grid,
    packaged_spec,
    verdict,
)
from .site_views import BadgeView, ChangesView, Chart, HistoryRow, OperationGrid, Point, Series

#: clause outcomes the grid's summary counts as failed (the blocking ones)
FAILED_CLAUSE_OUTCOMES = ("failed", "flaky")
#: the generator named in site.json; a folder whose site.json names it may be replaced by a new build
GENERATOR = "push_cache conformance site"
CHART = {"width": 480, "height": 150, "left": 44, "right": 16, "top": 14, "bottom": 28}


class SiteError(ValueError):
    """The site cannot be built (no reports, an output folder that cannot be used); the message is one line."""


# -------------------------------------------------------------------------------------- an implementation


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
            "verdict": verdict(report),
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


def _badge(impl: Implementation) -> BadgeView:
    # the badge's label is the report's operation (to_badge), so a backend's badges of two operations differ
    badge = to_badge(impl.newest.report)
    return {**badge, "hex": BADGE_HEX.get(badge["color"], BADGE_HEX_UNKNOWN)}


# --------------------------------------------------------------------------------------------- rendering


def _render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(outcomes=CELL_OUTCOMES, signs=SIGNS, **context)


def _index(grids: list[OperationGrid]) -> str:
    """The index: every operation's grid, under one set of filters offering what the grids hold."""
    cols = [col for g in grids for col in g["columns"]]
    present = {cell["outcome"] for g in grids for row in g["grid"] for cell in row["cells"]}
    levels = [lv for lv in LEVELS if any(col.level == lv for col in cols)]
    levels += sorted({col.level for col in cols} - set(LEVELS))
    return _render(
        "site_index.html.j2", root="", grids=grids, several=len(grids) > 1,
        operations=[g["operation"] for g in grids], impl_count=sum(len(g["impls"]) for g in grids),
        column_count=len(cols), run_count=sum(g["run_count"] for g in grids),
        filter_outcomes=[o for o in CELL_OUTCOMES if o in present], filter_levels=levels,
        filter_families=list(dict.fromkeys(group["name"] for g in grids for group in g["groups"])),
        deviations=sum(g["deviations"] for g in grids), failed_outcomes=FAILED_CLAUSE_OUTCOMES,
    )


def _impl_pages(impl: Implementation, clause_page: dict[str, str]) -> dict[str, str]:
    """An implementation's page and its badge.json."""
    history = _history(impl)
    newest = impl.newest.report
    failing = [{"id": r["id"], "outcome": r["outcome"], "level": r["level"], "deviation": r.get("deviation"),
                "page": clause_page[r["id"]]} for r in newest["clauses"] if r["outcome"] in FAILING_CLAUSE_OUTCOMES]
    badge = _badge(impl)
    shields = {k: badge[k] for k in ("schemaVersion", "label", "message", "color")}
    return {
        impl.badge_json: json.dumps(shields, indent=2) + "\n",
        impl.page: _render("site_impl.html.j2", root="../", impl=impl, badge=badge, verdict=verdict(newest),
                           newest=newest, history=history, chart=_chart(history), failing=failing,
                           clause_page=clause_page),
    }


def _clause_pages(grids: list[OperationGrid]) -> dict[str, str]:
    """A page per clause any run names, with the newest outcome of each implementation of its operation."""
    found: dict[str, tuple[Column, OperationGrid, list[dict[str, Any]]]] = {}
    for g in grids:
        for col in g["all_columns"]:
            # a clause ID starts with its operation's api, so two grids share one only in a hand-made report:
            # its page then lists the implementations of both
            _, _, rows = found.setdefault(col.page, (col, g, []))
            rows += [_outcome_row(impl, col) for impl in g["impls"]]
    return {page: _render("site_clause.html.j2", root="../", col=col, clause=col.spec, rows=rows,
                          operation=g["operation"], spec_version=g["spec_version"])
            for page, (col, g, rows) in found.items()}


def _outcome_row(impl: Implementation, col: Column) -> dict[str, Any]:
    run, row = impl.newest, newest_row(impl, col.id)
    return {"impl": impl, "run": run, "row": row, "outcome": row["outcome"] if row else ABSENT,
            "href": f"{run.page}#{fragment(col.id)}" if row else run.json}


def _run_files(impls: list[Implementation]) -> dict[str, str]:
    """Each run's report and page, from the report's data alone: nothing of its folder is copied."""
    pages: dict[str, str] = {}
    for impl in impls:
        for run in impl.runs:
            pages[run.json] = to_json(run.report)
            pages[run.page] = to_html(run.report, shown_path(run.source))
    return pages


def _manifest(grids: list[OperationGrid]) -> str:
    """site.json: the site's operations, implementations and clause pages. ``spec`` is the packaged spec's
    release when the site has one operation (as before the family), else null: each operation names its own."""
    clauses: dict[str, dict[str, Any]] = {}
    for g in grids:  # one entry per clause page (the first grid naming a clause describes it, as its page does)
        for col in g["all_columns"]:
            clauses.setdefault(col.page, {"id": col.id, "operation": g["operation"], "page": col.page,
                                          "in_spec": col.spec is not None})
    return json.dumps({
        "generator": GENERATOR,
        "spec": grids[0]["spec_version"] if len(grids) == 1 else None,
        "operations": [{"name": g["operation"], "spec": g["spec_version"],
                        "implementations": [impl.page for impl in g["impls"]],
                        "clauses": [col.id for col in g["all_columns"]]} for g in grids],
        "implementations": [_manifest_impl(impl) for g in grids for impl in g["impls"]],
        "clauses": list(clauses.values()),
    }, indent=2, ensure_ascii=False) + "\n"


def _manifest_impl(impl: Implementation) -> dict[str, Any]:
    return {"name": impl.name, "operation": impl.operation, "page": impl.page, "badge": impl.badge_json,
            "runs": [{"number": r.number, "started": r.report["run"].get("started"),
                      "spec": r.report["spec"]["version"], "verdict": r.report["verdict"]["label"],
                      "report": r.json, "page": r.page, "source": str(r.source)} for r in impl.runs]}


def _pages(impls: list[Implementation]) -> dict[str, str]:
    """Every generated page and JSON file of the site, by its path in the site."""
    groups = by_operation(impls)
    grids = [operation_grid(op, mine, packaged_spec(op), len(groups) > 1) for op, mine in groups.items()]
    clause_page = {col.id: col.page for g in grids for col in g["all_columns"]}
    pages = {"index.html": _index(grids)}
    for impl in impls:
        pages.update(_impl_pages(impl, clause_page))
    pages.update(_clause_pages(grids))
    pages.update(_run_files(impls))
    pages["site.json"] = _manifest(grids)
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
    pages = _pages(implementations(runs))
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
        description="Build a static site of conformance results from report.json files: per operation, a grid "
                    "of implementations x clauses, a page per implementation (badge, history) and per clause.",
    )
    parser.add_argument("reports", nargs="*", type=Path, metavar="REPORT.json",
                        help="reports of one or more implementations (a backend and the operation it certified), "
                             "any number of runs each")
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
    print(_said(manifest, files["index.html"]))
    return 0


def _said(manifest: dict[str, Any], index: Path) -> str:
    """The command's one line; a site of one operation says it as before the family did."""
    runs = sum(len(i["runs"]) for i in manifest["implementations"])
    ops = len(manifest["operations"])
    of = f" of {ops} operations" if ops > 1 else ""
    return (f"site: {len(manifest['implementations'])} implementation(s){of}, {runs} run(s), "
            f"{len(manifest['clauses'])} clause page(s): {index}")


if __name__ == "__main__":
    sys.exit(main())

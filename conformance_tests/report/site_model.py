"""The results site's model: runs, implementations (one per backend name and operation) and one grid per
operation, its clause columns described and ordered by that operation's packaged spec.

An implementation is a (backend, operation) pair: a backend's push_cache and pull_cache reports are two
implementations with a history each, never runs of one (the newer would hide the other). Its pages are named as
its report folders are (``running/finish.py``): ``<backend>`` for push_cache, the operation the kit began with,
so those pages keep the names they had before the family, and ``<backend>@<operation>`` for the others.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..spec import Clause, Spec, families, load_spec, operation_spec_path, specified_operations
from ..spec.paths import DEFAULT_OPERATION, operations
from .folders import safe_name
from .model import CLAUSE_OUTCOMES
from .parts import ClauseRow, Report, operation_of
from .shades import VERDICT_CLASS, shade_of
from .site_views import Cell, FamilyCell, FamilyGroup, GridRow, OperationGrid, VerdictView

if TYPE_CHECKING:
    from pathlib import Path

#: clause outcomes an implementation's page lists as failing in its newest run
FAILING_CLAUSE_OUTCOMES = ("failed", "flaky", "incompatible")
#: the outcome of a clause the newest run's report does not list (a run of another release)
ABSENT = "absent"
CELL_OUTCOMES = (*CLAUSE_OUTCOMES, ABSENT)
#: one short sign per cell outcome (the colour says it too; the legend names them)
SIGNS = {"passed": "✓", "failed": "✗", "flaky": "≈", "incompatible": "≠", "xfailed": "x", "not_supported": "–",
         "skipped": "s", "untested": "·", ABSENT: " "}
#: how many clause columns a grid opens by default (of the failing families, the smallest first, as many as fit):
#: 1280 px hold them beside the implementation's name, its newest verdict and every other family's summary column
OPEN_COLUMNS = 32


@dataclass
class Run:
    report: Report
    source: Path
    order: int  # where it came on the command line (breaks ties between equal start times)
    number: int = 0  # 1, 2, ... in the implementation's history, oldest first
    folder: str = ""  # runs/<slug>/<number>

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
    name: str  # the backend's name, as its reports give it
    operation: str  # the operation its reports certified (``spec.operation``)
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
    label: str  # the id without "<operation>.<family>."
    spec: Clause | None


# ------------------------------------------------------------------------------------------ implementations


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


def slug(name: str, operation: str) -> str:
    """An implementation's file name in the site: as its report folder is named (safe_name never yields "@", so
    no backend name can take another operation's slug)."""
    return safe_name(name) + ("" if operation == DEFAULT_OPERATION else f"@{safe_name(operation)}")


def implementations(runs: list[Run]) -> list[Implementation]:
    """One implementation per (backend name, operation), in the order they first come on the command line, each
    with its runs oldest first."""
    by_key: dict[tuple[str, str], Implementation] = {}
    for run in runs:
        key = (run.report["backend"]["name"], operation_of(run.report))
        if key not in by_key:
            by_key[key] = Implementation(*key, slug(*key))
        by_key[key].runs.append(run)
    for impl in by_key.values():
        impl.runs.sort(key=lambda r: (_started(r.report), r.order))
        for number, run in enumerate(impl.runs, 1):
            run.number = number
            run.folder = f"runs/{impl.slug}/{number}"
    return list(by_key.values())


def by_operation(impls: list[Implementation]) -> dict[str, list[Implementation]]:
    """The implementations of each operation: the family's operations in the schema's order, then any other a
    report names (a kit that does not specify it yet) as first seen."""
    order = {op: i for i, op in enumerate(operations())}
    seen = list(dict.fromkeys(impl.operation for impl in impls))
    ranked = sorted(seen, key=lambda op: (order.get(op, len(order)), seen.index(op)))
    return {op: [impl for impl in impls if impl.operation == op] for op in ranked}


def packaged_spec(operation: str) -> Spec | None:
    """The kit's spec of ``operation`` (read by the spec loader), None when it has none: then the columns are
    described by the reports' own rows."""
    if operation not in specified_operations():
        return None
    return load_spec(operation_spec_path(operation))


# ------------------------------------------------------------------------------------------------ columns


def columns(rows_seen: list[ClauseRow], spec: Spec | None, operation: str) -> list[Column]:
    """One column per clause ID the given report rows name: the failing families first, then by family (the
    spec's order, unknown families last), then the spec's clause order, then first seen."""
    known = {c.id: c for c in spec.clauses} if spec else {}
    first: dict[str, ClauseRow] = {}
    for row in rows_seen:
        first.setdefault(row["id"], row)
    made = [_column(cid, row, known.get(cid), operation) for cid, row in first.items()]
    spec_order = {cid: i for i, cid in enumerate(known)}
    family_order = {f: i for i, f in enumerate(families())}
    seen = {cid: i for i, cid in enumerate(first)}
    failing = {r["family"] if r["id"] not in known else known[r["id"]].family
               for r in rows_seen if r["outcome"] in FAILING_CLAUSE_OUTCOMES}
    made.sort(key=lambda c: (c.family not in failing, family_order.get(c.family, len(family_order)), c.family,
                             spec_order.get(c.id, len(spec_order)), seen[c.id]))
    return made


def _column(cid: str, row: ClauseRow, clause: Clause | None, operation: str) -> Column:
    """A clause's column: its spec's family, level and title where the spec has it, else the report row's."""
    family = clause.family if clause else row["family"]
    level = clause.level.value if clause else row["level"]
    title = clause.title if clause else row["title"]
    prefix = f"{operation}.{family}."
    label = cid[len(prefix):] if cid.startswith(prefix) and len(cid) > len(prefix) else cid
    return Column(cid, family, level, title, f"clause/{safe_name(cid)}.html", label, clause)


# ------------------------------------------------------------------------------------------------ the grid


def verdict(report: Report) -> VerdictView:
    given = report["verdict"]
    return {"label": given["label"], "class": VERDICT_CLASS[shade_of(given)],
            "certified": bool(given["certified"]), "reasons": given.get("reasons") or []}


def fragment(clause_id: str) -> str:
    """The fragment of a clause's row in a run's own index.html (``id="clause-<id>"``), percent-encoded."""
    return "clause-" + urllib.parse.quote(clause_id, safe="._-")


def newest_row(impl: Implementation, clause_id: str) -> ClauseRow | None:
    return next((r for r in impl.newest.report["clauses"] if r["id"] == clause_id), None)


def _cell(impl: Implementation, col: Column) -> Cell:
    run = impl.newest
    row = newest_row(impl, col.id)
    outcome = row["outcome"] if row else ABSENT
    # the run's own page at the clause's row where the site has it, else the clause page
    href = f"{run.page}#{fragment(col.id)}" if row else col.page
    return {"outcome": outcome, "sign": SIGNS.get(outcome, "?"), "deviation": row.get("deviation") if row else None,
            "href": href, "tests": len(row["tests"]) if row else 0, "run": run}


def _family_cell(family: str, cells: list[Cell]) -> FamilyCell:
    counts = {o: sum(1 for c in cells if c["outcome"] == o) for o in CELL_OUTCOMES}
    worst = next((o for o in CELL_OUTCOMES if counts[o]), ABSENT)
    said = ", ".join(f"{n} {o.replace('_', ' ')}" for o, n in counts.items() if n)
    return {"outcome": worst, "sign": SIGNS.get(worst, "?"), "count": counts[worst], "all": counts[worst] == len(cells),
            "title": f"{family}: {said}"}


def family_groups(cols: list[Column], grid: list[GridRow], key_prefix: str) -> list[FamilyGroup]:
    """A grid's families in column order: their clause count, how many of their clauses some newest run failed,
    whether they are open by default (the failing ones, while their columns fit OPEN_COLUMNS), and per
    implementation the family's summary cell (its worst outcome, and how many clauses have it). ``key_prefix``
    tells the families of two grids apart in the URL's ``open=`` (empty on a site of one operation, so its URLs
    stay as they were before the family)."""
    groups: list[FamilyGroup] = []
    for i, col in enumerate(cols):
        if not groups or groups[-1]["name"] != col.family:
            groups.append({"name": col.family, "key": key_prefix + col.family, "count": 0, "columns": [],
                           "failing": 0, "open": False, "summary": []})
        groups[-1]["count"] += 1
        groups[-1]["columns"].append(i)
    for g in groups:
        g["failing"] = sum(1 for i in g["columns"]
                           if any(row["cells"][i]["outcome"] in FAILING_CLAUSE_OUTCOMES for row in grid))
        g["summary"] = [_family_cell(g["name"], [row["cells"][i] for i in g["columns"]]) for row in grid]
    budget = OPEN_COLUMNS
    for g in sorted((g for g in groups if g["failing"]), key=lambda g: g["count"]):  # as many as fit
        if g["count"] <= budget:
            g["open"] = True
            budget -= g["count"]
    return groups


def operation_grid(operation: str, impls: list[Implementation], spec: Spec | None, several: bool) -> OperationGrid:
    """The grid of one operation: a row per implementation of it, a column per clause its newest runs name; and
    every clause any of its runs names (each gets a page)."""
    newest_rows = [row for impl in impls for row in impl.newest.report["clauses"]]
    shown = columns(newest_rows, spec, operation)
    every = columns(newest_rows + [row for impl in impls for run in impl.runs for row in run.report["clauses"]],
                    spec, operation)
    grid: list[GridRow] = [{"impl": impl, "verdict": verdict(impl.newest.report),
                            "cells": [_cell(impl, col) for col in shown]} for impl in impls]
    deviating = [(col.id, cell) for row in grid for col, cell in zip(shown, row["cells"], strict=True)
                 if cell["deviation"]]
    return {"operation": operation, "key": safe_name(operation), "spec_version": spec.version if spec else None,
            "impls": impls, "columns": shown, "all_columns": every,
            "groups": family_groups(shown, grid, f"{operation}." if several else ""), "grid": grid,
            "deviation_cols": {cid for cid, _ in deviating}, "deviations": len(deviating),
            "run_count": sum(len(impl.runs) for impl in impls)}

"""The results site's page models: what site.py hands its templates (an operation's grid, a grid cell, a family's
summary, a run's history row, the chart), typed like the report parts they are made from."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from .badge import Badge
from .parts import Summary
from .shades import VerdictClass

if TYPE_CHECKING:
    from .site_model import Column, Implementation, Run

#: a verdict as the pages show it ("class" is its CSS class: a Python keyword, hence the functional form)
VerdictView = TypedDict("VerdictView", {"label": str, "class": VerdictClass, "certified": bool, "reasons": list[str]})


class Cell(TypedDict):
    """One grid cell: the clause outcome of an implementation's newest run."""

    outcome: str
    sign: str
    deviation: str | None
    href: str
    tests: int
    run: Run


class FamilyCell(TypedDict):
    """A family's summary cell of one implementation: its worst outcome, and how many clauses have it."""

    outcome: str
    sign: str
    count: int
    all: bool
    title: str


class FamilyGroup(TypedDict):
    name: str
    key: str  # how the URL's open= names it: the family, or "<operation>.<family>" on a site of several operations
    count: int
    columns: list[int]
    failing: int
    open: bool
    summary: list[FamilyCell]


class GridRow(TypedDict):
    impl: Implementation
    verdict: VerdictView
    cells: list[Cell]


class OperationGrid(TypedDict):
    """One operation's grid on the index: its implementations, its clause columns (described by its packaged
    spec, ``spec_version`` None when the kit has none), and every clause its runs name (each gets a page)."""

    operation: str
    key: str  # a safe name: the grid's HTML ids
    spec_version: str | None
    impls: list[Implementation]
    columns: list[Column]
    all_columns: list[Column]
    groups: list[FamilyGroup]
    grid: list[GridRow]
    deviation_cols: set[str]
    deviations: int
    run_count: int


class ChangesView(TypedDict):
    """What changed from the previous run, as ``report diff`` computes it."""

    newly_failing: list[str]
    fixed: list[str]
    tests_newly_failing: int
    tests_fixed: int
    changed: int
    regression: bool
    verdict_before: str
    verdict_after: str


class HistoryRow(TypedDict):
    run: Run
    started: str
    spec: str
    suite: str
    backend_version: str
    verdict: VerdictView
    summary: Summary
    full: bool
    changes: ChangesView | None


class Point(TypedDict):
    x: float
    y: float
    value: int
    number: int
    started: str


class Series(TypedDict):
    key: str
    points: list[Point]
    path: str


class Chart(TypedDict):
    """The chart's frame (site.CHART) and its coordinates."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    max: int
    series: list[Series]
    y_max: float
    y_zero: float
    x_first: float
    x_last: float
    bottom_line: int


class BadgeView(Badge):
    """badge.json and the hex colour the implementation's page paints it with."""

    hex: str

"""The ``covering_array`` procedure: coverage by construction for the setup operations' inputs.

The coverage dimensions whose ``covered_by`` names the clause, with the dimensions the spec pairs them with, are
the factors of a greedy pairwise covering array (coverage/pairwise.py) over their partitions as the universe gives
them for the run's backend; each row becomes one valid layout (setup_layouts.py), pushed and judged by the clause's
expect.  The rows are the same in every run: every partition and pair of these dimensions is reached whatever the
seed.
"""

from __future__ import annotations

from typing import Any

from ..coverage import universe
from ..coverage.pairwise import Array, covering_array
from ..inputs import strategies
from ..running.context import RunContext
from ..spec import Clause
from .common import require
from .registry import Item, procedure
from .setup_layouts import Builder, buildable
from .streams import push_layout


def plan(run: RunContext, clause: Clause) -> tuple[Array, Builder] | None:
    """The clause's covering array and the builder of its rows (None: no dimension names the clause)."""
    cov = run.spec.coverage
    uni = universe(run.spec, run.signature, run.caps)
    if cov is None or uni is None:
        return None
    mine = [n for n, d in cov.dimensions.items() if d.params.get("covered_by") == clause.id]
    if not mine:
        return None
    partners = [b for a, b in cov.pairs if a in mine] + [a for a, b in cov.pairs if b in mine]
    names = mine + [n for n in dict.fromkeys(partners) if n not in mine and buildable(run.spec, cov.dimensions[n])]
    factors = {n: uni.partitions[n] for n in names}
    # every two of the clause's own dimensions (pairwise), and every spec pair that one of them is in
    pairs = [(a, b) for i, a in enumerate(mine) for b in mine[i + 1:]]
    pairs += [(a, b) for a, b in cov.pairs if (a in names and b in names) and (a, b) not in pairs]
    dom = strategies.domain(run.spec, clause.level, run.caps, run.params)
    builder = Builder(run.spec, dom, {n: cov.dimensions[n] for n in names}, clause.procedure.data_types or "same",
                      run.default_tnpl)
    return covering_array(factors, pairs, builder.realise), builder


def _items(run: RunContext, clause: Clause) -> list[Item]:
    got = plan(run, clause)
    if got is None:
        return []
    rows = len(got[0].rows)
    return [Item("covering_array", examples=rows, seconds_per_example=1)]


def _label(row: Any, layout: Any) -> str:
    return f"{layout} [covering row: {', '.join(f'{k}={v}' for k, v in row.items())}]"


@procedure("covering_array", _items)
def run_covering_array(run: RunContext, clause: Clause, item: Item) -> None:
    """Push every row of the clause's covering array once, each judged by the clause's expect."""
    __tracebackhide__ = True
    require(run, clause.requires)
    got = plan(run, clause)
    assert got is not None, f"{clause.id}: no coverage dimension names this clause (covered_by)"
    for i, (row, layout) in enumerate(got[0].rows):
        push_layout(run, clause, layout.with_(seed=i), clause.expect, _label(row, layout))

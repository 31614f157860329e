"""Coverage by construction: the pushes a coverage dimension's ``covered_by`` clause makes so that every certify
run reaches the dimension's partitions whatever the draws (today: the baseline push with every parameter that has
a default left to it, so each ``<parameter>:omitted`` is reached in every release)."""

from __future__ import annotations

from ..coverage.universe import defaulted
from ..judging.judge import judge
from ..running.context import RunContext
from ..spec import Clause
from .common import opened, per_call_bound, require
from .registry import GENERATED, Item, procedure


def covering_items(run: RunContext, clause: Clause) -> list[Item]:
    """One item per coverage dimension whose ``covered_by`` names ``clause`` (and of a kind this module covers)."""
    cov = run.spec.coverage
    if cov is None:
        return []
    return [Item(f"{name}_omitted", name, generated="omitted_defaults") for name, dim in cov.dimensions.items()
            if dim.kind == "defaults" and dim.params.get("covered_by") == clause.id]


@procedure("omitted_defaults", covering_items, GENERATED)
def run_omitted_defaults(run: RunContext, clause: Clause, item: Item) -> None:
    """The clause's scenario pushed with only the parameters that have no default (the key's batch index too, and
    those the dimension keeps ``given``), so the callee's defaults apply; judged by the clause's expect, as the same
    push with the defaults given is."""
    require(run, clause.requires)
    cov = run.spec.coverage
    assert cov is not None  # an item of this procedure names one of its dimensions
    left_out = set(defaulted(run.signature, cov.dimensions[item.data]))
    with opened(run, clause.scenario) as tb:
        # the release's parameters the dimension does not leave out, and the key's batch index (dst_batch_index is
        # no parameter)
        args = {k: v for k, v in clause.scenario.call.items()
                if k not in left_out and (k in run.params or k == "dst_batch_index")}
        push = tb.call(args, only_given=True)
        outcome = tb.push(push, bound=per_call_bound(run))
        judge(tb, push, outcome, clause.expect, clause.id, f"{item.key}: {', '.join(sorted(left_out))} left out")

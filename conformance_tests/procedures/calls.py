"""The ``call`` procedure: build the case's scenario, run its steps, inject its faults, make the call and judge
it; a refusal under an injected fault must also come in time."""

from __future__ import annotations

import time

import pytest

from ..judging.judge import fail, judge
from ..judging.judged_push import Push
from ..judging.observation import Observation
from ..running.context import RunContext
from ..spec import Case, Clause, Raises
from ..spec.model import Fault, FirstPush
from ..testbed.errors import HarnessError
from ..testbed.testbed import Outcome, Testbed
from .common import opened, per_call_bound, require, sync_timeout_s
from .registry import Item, case_items, procedure
from .steps import STEPS

#: scheduling slack on top of sync_kv_timeout per layer before a timeout counts as late
TIMEOUT_SLACK_S = 2.0
#: a hung push under an injected fault counts as one after this many times the delay and the timeout
FAULT_BOUND_FACTOR = 4
#: extra wait after an injected fault's delay has passed before the destination is read (a late write must be
#: seen). A call under no fault is read at once: a push is synchronous, so what it has not written when it returns
#: is missing there, and a stray write after it returns lands in memory the histories check after every push
SETTLE_S = 0.05


def settled_at(started: float, faults: tuple[Fault, ...]) -> float:
    """When the destination of a call that started at ``started`` under ``faults`` may be read (0: at once)."""
    return started + sum(f.seconds or 0.0 for f in faults) + SETTLE_S if faults else 0.0


@procedure("call", case_items)
def run_call(run: RunContext, clause: Clause, item: Item) -> None:
    __tracebackhide__ = True
    case: Case = item.data
    scenario = case.scenario
    require(run, [*clause.requires, *scenario.needs()])
    absent = [n for n in case.args if n in run.spec.all_parameters() and n not in run.params]
    if absent:
        pytest.skip(f"not in release {run.release}: push_cache has no parameter {', '.join(absent)}")
    style = clause.procedure.style
    with opened(run, scenario) as tb:
        for name in case.steps or clause.procedure.steps:
            STEPS[name](tb)
        if case.first is not None:
            refused_first(run, tb, case.first)
        tb.watch_freed()
        for fault in scenario.faults:
            tb.inject(fault)
        delay = sum(f.seconds or 0.0 for f in scenario.faults)
        budget = sync_timeout_s(scenario)
        push = tb.call(case.args, positional=style == "positional", only_given=style == "only_given")
        extra = FAULT_BOUND_FACTOR * (delay + budget) if scenario.faults else 0.0
        outcome = tb.push(push, bound=per_call_bound(run, extra=extra))
        if scenario.faults and outcome.exc is not None and isinstance(case.expect, Raises):
            raised_in_time(tb, push, outcome, budget, clause.id, case.name)
        judge(tb, push, outcome, case.expect, clause.id, case.name,
              settle_until=settled_at(outcome.started, scenario.faults))


def refused_first(run: RunContext, tb: Testbed, first: FirstPush) -> None:
    """The case's first push (its args, under its fault), which must be refused; its fault is cleared once its
    delay ran out, and what it wrote (a timed-out push may keep the layers it pushed) is the new "before"."""
    faults = (first.fault,) if first.fault is not None else ()
    for fault in faults:
        tb.inject(fault)
    delay = sum(f.seconds or 0.0 for f in faults)
    push = tb.call(first.args)
    extra = FAULT_BOUND_FACTOR * (delay + sync_timeout_s(tb.scenario)) if faults else 0.0
    outcome = tb.push(push, bound=per_call_bound(run, extra=extra))
    if outcome.exc is None or outcome.hung:
        raise HarnessError("the case's first push (which must be refused)", f"{outcome.describe()}: {push.code}")
    settle = settled_at(outcome.started, faults) - time.monotonic()
    if settle > 0:
        time.sleep(settle)  # a late write of the refused push lands before the call under test, not during it
    for fault in faults:
        tb.inject(Fault("clear", fault.node))
    tb.before["dst"] = tb.read_dst()


def raised_in_time(tb: Testbed, push: Push, outcome: Outcome, budget: float, clause_id: str, label: str) -> None:
    """A timeout comes when sync_kv_timeout expires: at most one timeout per layer, plus scheduling slack."""
    __tracebackhide__ = True
    transfer = Observation(tb, push, outcome).transfer
    layers = max(1, len(transfer.src_layers)) if transfer is not None else 1
    limit = layers * budget + TIMEOUT_SLACK_S
    if outcome.seconds > limit:
        fail(clause_id, label, push, f"{push.operation} raised only after {outcome.seconds:.2f}s; with sync_kv_timeout "
             f"{budget * 1000:.0f} ms and {layers} layer(s) it should raise within {limit:.1f}s")

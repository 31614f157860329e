"""Pushes from several threads at once (by_relation lays them out), each judged exactly as if it were alone over
the bytes the others wrote."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...judging import effect_problems, fail, outcome_problem, repro_lines
from ...observation import Observation
from ...testbed import Call, Outcome
from ..common import per_call_bound
from .bed import HistoryBed
from .pushes import Plan, call_for, clause_envelope, observed, overtime
from .relations import step_keys

if TYPE_CHECKING:
    from .machine import HistoryMachine

#: how long the threads of a concurrent step wait for each other at the start line
BARRIER_S = 10


def _bind(bed: HistoryBed, plan: Plan) -> None:
    assert plan.dst is not None
    bed.local, bed.remote = bed.nodes[plan.client.name], bed.nodes[plan.server.name]
    bed.src, bed.dst = plan.src.info, plan.dst.info


def _expected(bed: HistoryBed, plans: Sequence[Plan], calls: Sequence[Call],
              skip: int | None = None) -> dict[str, list[np.ndarray]]:
    """The destinations' bytes once every push of ``plans`` (but ``skip``) has landed, by the oracle: the pushes
    write disjoint targets, so in any order."""
    base = dict(bed.before)
    state: dict[str, list[np.ndarray]] = {}
    for i, (plan, call) in enumerate(zip(plans, calls, strict=True)):
        if i == skip:
            continue
        _bind(bed, plan)
        assert plan.dst is not None
        bed.before[plan.dst.name] = state.get(plan.dst.name, base[plan.dst.name])
        state[plan.dst.name] = Observation(bed, call, Outcome(None, 0.0)).expected_dst()
    bed.before.clear()
    bed.before.update(base)
    return state


def _script_for(bed: HistoryBed, plans: Sequence[Plan], calls: Sequence[Call], failing: int, mark: int) -> None:
    """The script's replay of a concurrent step whose push ``failing`` was wrong: the others first, in turn (their
    targets are disjoint), then that push, checked as the judgement checked it."""
    del bed.rec.lines[mark:]
    bed.rec.comment(f"{len(plans)} threads at once; the script makes the others first, then thread {failing}:")
    for j, (plan, call) in enumerate(zip(plans, calls, strict=True)):
        if j != failing:
            bed.rec.lines += [f"local = {plan.client.name}", call.code]
    plan = plans[failing]
    assert plan.dst is not None
    bed.rec.lines += [f"local, remote, src, dst = {plan.client.name}, {plan.server.name}, {plan.src.name}, "
                      f"{plan.dst.name}", "src_data, dst_data = snap(local, src), snap(remote, dst)",
                      "try:", f"    result = {calls[failing].code}", "except Exception as exc:  # noqa: BLE001",
                      "    outcome = exc", "else:", "    outcome = None"]


def run_together(m: HistoryMachine, plans: Sequence[Plan], label: str) -> bool:
    """The pushes of ``plans`` from threads released at once, each judged exactly as if it were alone over the
    bytes the others wrote (their destinations as the oracle has them after their pushes: disjoint targets must
    all land)."""
    h, w, bed = m.h, m.world, m.bed
    calls = [call_for(h, bed, plan) for plan in plans]
    for plan in plans:
        assert plan.dst is not None and plan.dst.name in bed.before, plan.describe()
    landed = _expected(bed, plans, calls)
    for name, arrays in landed.items():
        if name in bed.caches:
            bed.candidates[name] = [arrays]
    fns = [bed.nodes[plan.client.name].cache_manager.push_cache for plan in plans]
    results: list[Any] = [None] * len(plans)
    seconds = [0.0] * len(plans)
    barrier = threading.Barrier(len(plans))

    def run(i: int) -> None:
        args, kwargs = calls[i].build()
        barrier.wait(timeout=BARRIER_S)
        start = time.monotonic()
        try:
            fns[i](*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            results[i] = exc
        seconds[i] = time.monotonic() - start

    mark = len(bed.rec.lines)
    bed.rec.comment(f"{len(plans)} threads at once (the script makes them in turn):")
    for plan, call in zip(plans, calls, strict=True):
        bed.rec.lines.append(f"local = {plan.client.name}")
        bed.rec.lines.append(call.code)
    workers = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(plans))]
    for t in workers:
        t.start()
    for t in workers:
        t.join(per_call_bound(h.run))
    clause = h.situations["concurrent"]
    if any(t.is_alive() for t in workers):
        fail(clause.id, label, calls[0], "concurrent pushes did not return (hang)")
    h.run.counters.push_calls += len(plans)
    h.run.counters.coverage |= step_keys(h.run.spec, h.run.signature, plans, calls)
    h.run.counters.history_pushes += len(plans)
    for plan in plans:
        w.pushed_over(plan.link)
    # what the pushes that returned wrote (they promised to land); a refused push's destination is judged by its
    # own thread (the concurrent clause lets it refuse), so the others take it as it reads now: a refusal is never
    # blamed on a push that returned
    returned = [j for j in range(len(plans)) if results[j] is None]
    landed = _expected(bed, [plans[j] for j in returned], [calls[j] for j in returned])
    refused = {p.dst.name: p.dst.info for j, p in enumerate(plans) if j not in returned and p.dst is not None}
    landed.update(bed.read_caches([info for name, info in refused.items() if name not in landed]))
    reads = []
    for i, plan in enumerate(plans):
        _bind(bed, plan)
        assert plan.dst is not None
        base = dict(bed.before)
        # every other push that returned landed: this one's destination holds their writes, every other
        # destination all of its
        same = [j for j, p in enumerate(plans) if p.dst is plan.dst and (j == i or j in returned)]
        own = _expected(bed, [plans[j] for j in same], [calls[j] for j in same], skip=same.index(i))
        bed.before.update(landed)
        bed.before[plan.dst.name] = own.get(plan.dst.name, base[plan.dst.name])
        _bind(bed, plan)
        outcome = Outcome(results[i], seconds[i])
        expectation = overtime(h, plan, outcome, clause_envelope(clause))
        obs = Observation(bed, calls[i], outcome)
        problem = outcome_problem(expectation, obs)
        if problem:
            fail(clause.id, f"{label}, thread {i}", calls[i], problem)
        problems = effect_problems(expectation, obs)
        bed.before.clear()
        bed.before.update(base)
        if problems:
            # a push that returned made a valid push's promise, to land exactly (the history clause, must); the
            # concurrent clause (may) lets it refuse, not land wrong
            judged_by = h.clause.id if outcome.exc is None else clause.id
            _script_for(bed, plans, calls, i, mark)
            bed.rec.verdict = repro_lines(h.clause.expect if outcome.exc is None else expectation, judged_by, obs)
            fail(judged_by, f"{label}, thread {i}", calls[i], "wrong after concurrent pushes", problems)
        reads.append(obs)
    for obs in reads:
        observed(bed, obs)
    bed.rec.verdict = []
    return True

"""Pushes from several threads at once (by_relation lays them out), each judged exactly as if it were alone over
the bytes the others wrote (:mod:`..at_once` makes and judges them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...judging.judge import fail, repro_lines
from ...judging.judged_push import Push
from ..at_once import judge_each, landed, others_into_own, push_at_once
from ..common import per_call_bound
from .bed import HistoryBed
from .pushes import Plan, clause_envelope, observed, overtime, push_for
from .relations import step_keys

if TYPE_CHECKING:
    from .machine import HistoryMachine


def _script_for(bed: HistoryBed, pushes: Sequence[Push], failing: int, mark: int) -> None:
    """The script's replay of a concurrent step whose push ``failing`` was wrong: the others first, in turn (their
    targets are disjoint), then that push, checked as the judgement checked it."""
    del bed.rec.lines[mark:]
    bed.rec.comment(f"{len(pushes)} threads at once; the script makes the others first, then thread {failing}:")
    for j, push in enumerate(pushes):
        if j != failing:
            bed.rec.lines += [f"local = {push.local_name}", push.code]
    push = pushes[failing]
    assert push.src is not None and push.dst is not None
    bed.rec.lines += [f"local, remote, src, dst = {push.local_name}, {push.remote_name}, {push.src.name}, "
                      f"{push.dst.name}", "src_data, dst_data = snap(local, src), snap(remote, dst)",
                      "try:", f"    result = {push.code}", "except Exception as exc:  # noqa: BLE001",
                      "    outcome = exc", "else:", "    outcome = None"]


def run_together(m: HistoryMachine, plans: Sequence[Plan], label: str) -> bool:
    """The pushes of ``plans`` from threads released at once, each judged exactly as if it were alone over the
    bytes the others wrote (their destinations as the oracle has them after their pushes: disjoint targets must
    all land)."""
    h, w, bed = m.h, m.world, m.bed
    pushes = [push_for(h, bed, plan) for plan in plans]
    for plan in plans:
        assert plan.dst is not None and plan.dst.name in bed.before, plan.describe()
    for name, arrays in landed(bed, pushes, bed.before).items():
        if name in bed.caches:
            bed.candidates[name] = [arrays]
    mark = len(bed.rec.lines)
    outcomes, hung = push_at_once(bed, pushes, per_call_bound(h.run))
    clause = h.situations["concurrent"]
    if hung:
        fail(clause.id, label, pushes[0], "concurrent pushes did not return (hang)")
    calls = [push.call for push in pushes if push.call is not None]
    h.run.counters.push_calls += len(plans)
    h.run.counters.coverage |= step_keys(h.run.spec, h.run.signature, plans, calls)
    h.run.counters.history_pushes += len(plans)
    for plan in plans:
        w.pushed_over(plan.link)
    # what the pushes that returned wrote (they promised to land); a refused push's destination is judged by its
    # own thread (the concurrent clause lets it refuse), so the others take it as it reads now: a refusal is never
    # blamed on a push that returned
    returned = [j for j, out in enumerate(outcomes) if out.exc is None]
    wrote = landed(bed, [pushes[j] for j in returned], bed.before)
    refused = {p.dst.name: p.dst.info for j, p in enumerate(plans) if j not in returned and p.dst is not None}
    wrote.update(bed.read_caches([info for name, info in refused.items() if name not in wrote]))
    # every other push that returned landed: a push's destination holds their writes, every other destination all
    # of its pushes'
    models = [{**wrote, **others_into_own(bed, pushes, returned, i, bed.before)} for i in range(len(plans))]
    expectations = [overtime(h, plan, out, clause_envelope(clause)) for plan, out in zip(plans, outcomes, strict=True)]
    reads = []
    for judged in judge_each(bed, pushes, outcomes, expectations, models, [frozenset()] * len(plans)):
        i, obs = judged.index, judged.obs
        if judged.problem:
            fail(clause.id, f"{label}, thread {i}", pushes[i], judged.problem)
        if judged.problems:
            # a push that returned made a valid push's promise, to land exactly (the history clause, must); the
            # concurrent clause (may) lets it refuse, not land wrong
            returned_ok = outcomes[i].exc is None
            judged_by = h.clause.id if returned_ok else clause.id
            _script_for(bed, pushes, i, mark)
            bed.rec.verdict = repro_lines(h.clause.expect if returned_ok else expectations[i], judged_by, obs)
            fail(judged_by, f"{label}, thread {i}", pushes[i], "wrong after concurrent pushes", judged.problems)
        reads.append(obs)
    for obs in reads:
        observed(bed, obs)
    bed.rec.verdict = []
    return True

"""Pushes from several threads at once into distinct destinations, each judged exactly as if it were alone."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from ...judging import effect_problems, fail, outcome_problem
from ...observation import Observation
from ...testbed import Outcome
from ..common import per_call_bound
from .pushes import call_for, clause_envelope, expect_success, observed, overtime
from .relations import step_keys

if TYPE_CHECKING:
    from .machine import HistoryMachine

#: how long the threads of a concurrent step wait for each other at the start line
BARRIER_S = 10


def push_concurrently(m: HistoryMachine, data: Any) -> bool:
    """Pushes from several threads at once into distinct destinations, each judged as if it were alone."""
    h, w, bed = m.h, m.world, m.bed
    # over links that see their destinations and that no timeout left faulted (a vendor fails fast there)
    found = [(p, s, d) for p, s, d in m.planning.pairs(w.usable_links())
             if w.visibility(p, d) == "valid" and not w.links[p].faulted]
    dsts = list({d.name: d for _, _, d in found}.values())
    if len(dsts) < 2:
        return False
    label = m.label("concurrent")
    chosen = data.draw(st.lists(st.sampled_from(dsts), min_size=2, max_size=min(4, len(dsts)),
                                unique_by=lambda d: d.name), label="destinations")
    plans = []
    for dst in chosen:
        # no source is another push's destination: the threads would race on it
        options = [(p, s) for p, s, d in found if d is dst and s not in chosen]
        if not options:
            continue
        p, src = data.draw(st.sampled_from(options), label="source")
        plan = m.planning.plan(data, w.nodes[p[0]], w.nodes[p[1]], src, dst)
        if plan is not None:
            plans.append(replace(plan, style="keywords"))
    if len(plans) < 2:
        return False
    calls = [call_for(h, bed, plan) for plan in plans]
    for plan, call in zip(plans, calls, strict=True):
        bed.local, bed.remote, bed.src, bed.dst = None, None, plan.src.info, plan.dst.info if plan.dst else None
        expect_success(bed, call, plan.dst)
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
    reads = []
    for i, plan in enumerate(plans):
        assert plan.dst is not None
        bed.local, bed.remote = bed.nodes[plan.client.name], bed.nodes[plan.server.name]
        bed.src, bed.dst = plan.src.info, plan.dst.info
        others = tuple(p.dst.name for p in plans if p.dst is not None and p.dst is not plan.dst)
        outcome = Outcome(results[i], seconds[i])
        expectation = overtime(h, plan, outcome, clause_envelope(clause))
        obs = Observation(bed, calls[i], outcome)
        problem = outcome_problem(expectation, obs)
        if problem:
            fail(clause.id, f"{label}, thread {i}", calls[i], problem)
        problems = [p for p in effect_problems(expectation, obs) if not any(p.startswith(f"{o} ") for o in others)]
        if problems:
            fail(clause.id, f"{label}, thread {i}", calls[i], "wrong after concurrent pushes", problems)
        reads.append(obs)
    for obs in reads:
        observed(bed, obs)
    bed.rec.verdict = []
    return True

"""The ``concurrent`` procedure: several threads push the same source into distinct destination caches at once;
each destination is judged as if its push had been the only one."""

from __future__ import annotations

import threading
from typing import Any

from ..context import RunContext
from ..judging import effect_problems, fail, outcome_problem
from ..observation import Observation
from ..spec import Clause
from ..spec.value_language import Lit
from ..testbed import CacheInfo, Call, Outcome
from .common import opened, per_call_bound, require
from .registry import Item, procedure, single

#: how long the threads wait for each other at the start line
BARRIER_S = 10


@procedure("concurrent", single)
def run_concurrent(run: RunContext, clause: Clause, item: Item) -> None:
    require(run, clause.requires)
    n = clause.procedure.threads
    scenario = clause.scenario.with_(link=False)  # linked once every destination exists
    expectation = clause.expect
    with opened(run, scenario) as tb:
        assert tb.dst is not None and tb.src is not None
        dsts: list[CacheInfo] = [tb.dst]
        for i in range(1, n):
            info = tb.make_cache(f"dst{i}", "remote", scenario.dst, guard=True)
            tb.fill_sentinel(info)
            dsts.append(info)
        tb.link()
        calls: list[Call] = []
        for info in dsts:
            tb.dst = info
            calls.append(tb.call({"src_batch_index": Lit(len(calls) % tb.src.batch)}))
        results: list[Any] = [None] * n
        barrier = threading.Barrier(n)

        def push(i: int) -> None:
            args, kwargs = calls[i].build()
            barrier.wait(timeout=BARRIER_S)
            try:
                tb.local.cache_manager.push_cache(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                results[i] = exc

        tb.rec.comment(f"{n} threads at once: " + " | ".join(c.code for c in calls))
        workers = [threading.Thread(target=push, args=(i,), daemon=True) for i in range(n)]
        for t in workers:
            t.start()
        for t in workers:
            t.join(per_call_bound(run))
        hung = [i for i, t in enumerate(workers) if t.is_alive()]
        assert not hung, f"clause {clause.id}: concurrent pushes {hung} did not return (hang)"
        run.counters.push_calls += n
        for i, info in enumerate(dsts):
            tb.dst = info
            others = tuple(d.name for d in dsts if d is not info)
            obs = Observation(tb, calls[i], Outcome(results[i], 0.0))
            problem = outcome_problem(expectation, obs)
            if problem:
                fail(clause.id, f"thread {i}", calls[i], problem)
            problems = [p for p in effect_problems(expectation, obs)
                        if not any(p.startswith(f"{o} ") for o in others)]  # the other threads' destinations
            if problems:
                fail(clause.id, f"thread {i}", calls[i], f"destination {info.name} is wrong after concurrent pushes",
                     problems)

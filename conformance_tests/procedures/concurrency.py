"""The ``concurrent`` procedure: several threads push the same source at once, one test per relation of the spec's
coverage a client and its peer can build (distinct destination caches; disjoint batch entries of one cache); each
push is judged exactly as if it had been the only one (on one cache, over the entries the others wrote)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .. import oracle
from ..context import RunContext
from ..coverage.measure import group_keys, relations
from ..judging import effect_problems, fail, outcome_problem
from ..observation import Observation
from ..spec import Clause
from ..spec.value_language import Lit
from ..testbed import CacheInfo, Call, Outcome, Testbed
from .common import opened, per_call_bound, require
from .registry import Item, procedure

#: how long the threads wait for each other at the start line
BARRIER_S = 10


def _relation_items(run: RunContext, clause: Clause) -> list[Item]:
    """One test per relation of the spec's coverage that one client pushing into one peer can build (the others
    need more nodes: the stateful suite's); without relations in the spec, distinct caches."""
    built = [Item(str(r["name"]), r) for r in relations(run.spec)
             if all(r.get(f, "same") == "same" for f in ("source_node", "destination_node"))]
    return built or [Item("check", {"destination_cache": "different"})]


@procedure("concurrent", _relation_items)
def run_concurrent(run: RunContext, clause: Clause, item: Item) -> None:
    require(run, clause.requires)
    n = clause.procedure.threads
    scenario = clause.scenario.with_(link=False)  # linked once every destination exists
    expectation = clause.expect
    one_cache = item.data.get("destination_cache") == "same"
    with opened(run, scenario) as tb:
        assert tb.dst is not None and tb.src is not None
        dsts: list[CacheInfo] = [tb.dst]
        if one_cache:  # disjoint batch entries of one cache: one thread per entry
            n = min(n, tb.dst.batch)
            dsts *= n
        for i in range(len(dsts), n):
            info = tb.make_cache(f"dst{i}", "remote", scenario.dst, guard=True)
            tb.fill_sentinel(info)
            dsts.append(info)
        tb.link()
        calls: list[Call] = []
        for i, info in enumerate(dsts):
            tb.dst = info
            args = {"src_batch_index": Lit(i % tb.src.batch)}
            calls.append(tb.call({**args, "dst_batch_index": Lit(i)} if one_cache else args))
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
        run.counters.coverage |= group_keys(run.spec, run.signature, [
            (c, tb.src, d, {"source_node": "local", "destination_node": "remote", "destination_cache": d.name})
            for c, d in zip(calls, dsts, strict=True)])
        before = tb.before.get("dst", [])
        for i, info in enumerate(dsts):
            tb.dst = info
            if one_cache:  # the other threads' entries as the oracle writes them: this push is judged over them
                tb.before["dst"] = _others_landed(tb, before, [c for j, c in enumerate(calls)
                                                               if j != i and results[j] is None])
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
        if one_cache:  # what every returned push wrote is the destination's from now on
            tb.before["dst"] = _others_landed(tb, before, [c for c, r in zip(calls, results, strict=True) if r is None])


def _others_landed(tb: Testbed, before: list[np.ndarray], calls: list[Call]) -> list[np.ndarray]:
    """The destination as it is after ``calls`` alone landed (their entries are disjoint: the order is none)."""
    assert tb.src is not None and tb.dst is not None
    out = before
    for call in calls:
        transfer = oracle.plan(call.raw(), tb.src.layout, tb.default_tnpl)
        if transfer is not None:
            out = oracle.expected_destination(tb.src_data, out, transfer, tb.src.layout, tb.dst.layout)
    return out

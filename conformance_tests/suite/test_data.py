"""Family `data`: what lands where.  Properties over random layouts (hypothesis) plus the spec's cases.

Random contents in the source, a sentinel pattern in the destination; after a push exactly the targeted
layers x batch slice hold the source bytes (computed independently from the spec's data rule), nothing else
in the destination changed, and the source is untouched.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import given

from conformance_tests import session
from conformance_tests.cases import (
    opened,
    per_call_bound,
    placements_supported,
    require,
    run_case,
    run_layout,
    tnpl_range_supported,
)
from conformance_tests.generate import by_id, case_params, clause_by_id, clause_id_params, clause_params
from conformance_tests.harness import Check, deep_merge, describe_exception, exception_class
from conformance_tests.strategies import layouts

POSTCONDITION = "push_cache.data.postcondition"
UNTOUCHED = "push_cache.data.nothing_else_changes"
SOURCE = "push_cache.data.source_unchanged"
CONCURRENT = "push_cache.data.concurrent"
ASPECTS = {POSTCONDITION: ("targeted",), UNTOUCHED: ("untouched",), SOURCE: ("source",)}


@pytest.mark.parametrize(("clause", "case"), case_params("data", exclude=(*ASPECTS, CONCURRENT)))
def test_case(clause, case):
    run_case(clause, case)


@pytest.mark.parametrize("clause_id", clause_id_params("data", by_id(*ASPECTS)))
@given(layout=layouts(placements=placements_supported(), tnpl_range=tnpl_range_supported()))
def test_random_layout(clause_id, layout):
    run_layout(clause_by_id(clause_id), layout, ASPECTS[clause_id])


@pytest.mark.parametrize("clause", clause_params("data", by_id(CONCURRENT)))
def test_concurrent(clause):
    """Four threads push the same source into four destination caches at once."""
    ctx = session.current()
    require(list(clause.requires))
    threads_n = 4
    scenario = deep_merge(ctx.spec.scenario, deep_merge(clause.scenario or {}, {"link": False}))
    with opened(scenario, clause.id) as world:
        dsts = [(world.dst, world.dst_before)]
        for i in range(1, threads_n):
            info = world.make_cache(f"dst{i}", world.remote, "remote", scenario["dst"])
            dsts.append((info, world.sentinel(info, world.remote, "remote")))
        world.link()
        calls = []
        for info, before in dsts:
            world.dst, world.dst_before = info, before
            calls.append(world.call({"src_batch_index": len(calls) % world.src.batch}))
        results: list = [None] * threads_n
        barrier = threading.Barrier(threads_n)

        def run(i: int) -> None:
            args, kwargs = calls[i].build()
            barrier.wait(timeout=10)
            try:
                world.local.cache_manager.push_cache(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                results[i] = exc

        workers = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(threads_n)]
        world.step(f"# {threads_n} threads at once:")
        for c in calls:
            world.step(f"#   {c.code}")
        for t in workers:
            t.start()
        for t in workers:
            t.join(per_call_bound())
        hung = [i for i, t in enumerate(workers) if t.is_alive()]
        assert not hung, f"clause {clause.id}: concurrent pushes {hung} did not return (hang)"
        llm_exc = exception_class("LLMException", world.api)
        for i, (info, before) in enumerate(dsts):
            world.dst, world.dst_before = info, before
            check = Check(world, calls[i], clause.id, f"thread {i}")
            exc = results[i]
            if exc is not None:
                if not isinstance(exc, llm_exc):
                    check.fail(f"thread {i}: push_cache raised {describe_exception(exc)}; allowed: success or "
                               "LLMException")
                errors = check.envelope_errors()
            else:
                errors = check.data_errors()
            if errors:
                check.fail(f"thread {i}: destination {info.name} is wrong after concurrent pushes", errors)

"""The protocol's optional node batch, ``call_each`` (docs/architecture.md): the kit's per-tensor steps use it
when a node has one, fall back to one call at a time when it has none, and never batch anything else."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from conformance_tests.backend import BATCHABLE, call_each
from conformance_tests.isolation import IsolatedBackend
from reference_impl.backend import backend as reference
from tests.helpers.certify import FAKES

_POOL = '{"memory_size": 1048576, "page_shift": 16}'
SPECS = [{"cluster_id": 1, "role": "PROMPT", "options": {"llm.EnableCacheManager": "1", "llm.MemPoolConfig": _POOL,
                                                         "llm.HostMemPoolConfig": _POOL}}]


def _desc(api: Any) -> Any:
    return api.CacheDesc(3, [2, 8], api.DataType.DT_UINT8, api.Placement.HOST)


def test_a_node_without_a_batch_gets_one_call_at_a_time() -> None:
    cluster = reference.open_cluster(SPECS)
    try:
        node = cluster.node(1)
        assert not hasattr(node, "call_each")
        cache = node.cache_manager.allocate_cache(_desc(node.api))
        data = [np.full(16, t, dtype=np.uint8) for t in range(3)]
        assert call_each(node, "write_tensor", [(cache, t, d) for t, d in enumerate(data)]) == [None] * 3
        got = call_each(node, "read_tensor", [(cache, t) for t in range(3)])
        assert [g.tolist() for g in got] == [d.tolist() for d in data]
    finally:
        cluster.close()


@pytest.mark.parametrize("method", ["inject", "push_cache", "cache_manager.push_cache", "close"])
def test_only_the_observation_methods_are_batched(method: str) -> None:
    """A push is always one call of its own: call_each refuses every method outside BATCHABLE."""
    assert method not in BATCHABLE
    with pytest.raises(ValueError, match="not one of the node methods"):
        call_each(object(), method, [()])


@pytest.fixture
def fakes_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FAKES))
    monkeypatch.setenv("PYTHONPATH", str(FAKES) + ":" + ":".join(sys.path))


def test_a_node_with_a_batch_answers_each_step_in_one_call(fakes_importable: None) -> None:
    from batching_backend import backend

    cluster = backend.open_cluster(SPECS)
    try:
        node = cluster.node(1)
        cache = node.cache_manager.allocate_cache(_desc(node.api))
        call_each(node, "write_tensor", [(cache, t, np.full(16, 7, dtype=np.uint8)) for t in range(3)])
        got = call_each(node, "read_tensor", [(cache, t) for t in range(3)])
        assert node.batches == [("write_tensor", 3), ("read_tensor", 3)]
        assert all((g == 7).all() for g in got)
    finally:
        cluster.close()


def test_through_the_isolation_child_the_batch_is_the_nodes_own(fakes_importable: None) -> None:
    """One request to the backend's process, which passes the batch on to the backend's node."""
    iso = IsolatedBackend("batching_backend:backend")
    try:
        cluster = iso.open_cluster(SPECS)
        node = cluster.node(1)
        cache = node.cache_manager.allocate_cache(_desc(node.api))
        call_each(node, "write_tensor", [(cache, t, np.full(16, t, dtype=np.uint8)) for t in range(3)])
        got = call_each(node, "read_tensor", [(cache, t) for t in range(3)])
        assert [int(g[0]) for g in got] == [0, 1, 2]
        assert list(node.batches) == [("write_tensor", 3), ("read_tensor", 3)]
        cluster.close()
    finally:
        iso.close()


def test_a_judgement_reads_every_live_cache_of_a_node_in_one_request(fakes_importable: None) -> None:
    """Across processes a round trip costs more than the bytes: the check that nothing else changed reads every
    live cache of a node in one batch, and every guard band and freed region of a node in one more."""
    from batching_backend import backend

    from conformance_tests.judging.observation import Observation
    from conformance_tests.running.context import RunContext
    from conformance_tests.testbed.testbed import Outcome, Testbed

    run = RunContext.for_backend(backend, "batching_backend:backend")
    with Testbed(run, run.spec.scenario) as tb:
        tb.make_cache("other", "remote", run.spec.scenario.dst, guard=True)
        tb.fill_sentinel(tb.caches["other"])
        tb.deallocate("other")
        tb.watch_freed()
        tb.make_cache("third", "remote", run.spec.scenario.dst)
        tb.fill_sentinel(tb.caches["third"])
        local, remote = tb.local, tb.remote
        local.batches.clear()
        remote.batches.clear()
        assert Observation(tb, None, Outcome(None, 0.0)).unchanged() == []
        tensors = run.spec.scenario.dst.num_tensors
        assert local.batches == [("read_tensor", tensors)]  # src
        # dst and third in one read; dst's and other's guard bands (tensors + 1 each) and other's freed tensors
        assert remote.batches == [("read_tensor", 2 * tensors), ("read_memory", 2 * (tensors + 1) + tensors)]

"""The node host running the multi-process reference through the vendor API only: data, errors, faults, pool."""

from __future__ import annotations

import inspect
import time
from typing import Any

import numpy as np
import pytest

from tests.helpers.data import SENTINEL, fill_random, fill_sentinel, guarded_cache, guards_intact, snapshot
from tests.helpers.nodes import relink, specs

pytestmark = pytest.mark.nixl


def _desc(api: Any, placement: str = "DEVICE", num_tensors: int = 4, shape: tuple[int, ...] = (2, 32)) -> Any:
    return api.CacheDesc(num_tensors, list(shape), api.DataType.DT_UINT8, getattr(api.Placement, placement))


def test_push_lands_exactly_through_the_vendor_api(make_cluster: Any) -> None:
    cluster = make_cluster(1, 2)
    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    src = local.cache_manager.allocate_cache(_desc(api, "HOST"))
    data = fill_random(local, src, seed=3)
    dst, addrs = guarded_cache(remote, _desc(api))  # in memory the host allocated
    fill_sentinel(remote, dst)
    relink(cluster)
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 1), src, 0)
    stride = dst.cache_desc.size // 2
    for t, got in enumerate(snapshot(remote, dst)):
        assert (got[:stride] == SENTINEL).all(), f"tensor {t}: batch 0 changed"
        assert np.array_equal(got[stride:], data[t][:stride]), f"tensor {t}: batch 1 is not the source's batch 0"
    assert guards_intact(remote, addrs, dst.cache_desc.size)
    # the host reads what the implementation allocated, by the addresses in Cache.tensor_addrs
    assert np.array_equal(local.read_memory(src.tensor_addrs[0], 8), data[0][:8])


def test_call_each_is_one_request_that_stops_at_the_first_error(make_cluster: Any) -> None:
    """The kit's batch (conformance_tests.backend.call_each): the same results as one call at a time, in one
    request to the node's process, and the first failing call's exception with nothing after it run."""
    from conformance_tests.backend import call_each

    cluster = make_cluster(1, 2)
    node = cluster.node(1)
    cache = node.cache_manager.allocate_cache(_desc(node.api, "HOST"))
    data = [np.full(cache.cache_desc.size, t, dtype=np.uint8) for t in range(4)]
    node.shared = None  # the requests themselves (the shared-memory path: test_shared_memory.py)
    calls: list[str] = []
    real = node.proc.call
    node.proc.call = lambda op, *a, **k: (calls.append(op), real(op, *a, **k))[1]  # type: ignore[method-assign]
    call_each(node, "write_tensor", [(cache, t, d) for t, d in enumerate(data)])
    got = call_each(node, "read_tensor", [(cache, t) for t in range(4)])
    assert calls == ["node_each", "node_read"]  # a read batch comes back joined
    assert [g.tolist() for g in got] == [d.tolist() for d in data]
    with pytest.raises(IndexError):  # tensor 9 does not exist: the write of tensor 1 after it never runs
        call_each(node, "write_tensor", [(cache, 0, data[3]), (cache, 9, data[3]), (cache, 1, data[3])])
    assert (node.read_tensor(cache, 0) == 3).all() and (node.read_tensor(cache, 1) == 1).all()


def test_errors_keep_their_status_code(make_cluster: Any) -> None:
    cluster = make_cluster(1, 2, 3)
    local = cluster.node(1)
    api = local.api
    src = local.cache_manager.allocate_cache(_desc(api))
    with pytest.raises(api.LLMException) as info:
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, 1234, 0), src)
    assert info.value.status_code == api.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
    with pytest.raises(api.LLMException) as info:
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(3, 1, 0), src)
    assert info.value.status_code == api.LLMStatusCode.LLM_NOT_YET_LINK
    with pytest.raises(TypeError, match="dst_cache_key"):
        local.cache_manager.push_cache(None, src)
    with pytest.raises(api.LLMException) as info:
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, 1, 0), src, size=16)
    assert info.value.status_code == api.LLMStatusCode.LLM_PARAM_INVALID


def test_proxy_offers_only_vendor_methods_with_their_signatures(make_cluster: Any) -> None:
    from reference_impl.cache_manager import CacheManager

    cluster = make_cluster(1, 2)
    cm = cluster.node(1).cache_manager
    want = inspect.signature(CacheManager.push_cache)
    want = want.replace(parameters=list(want.parameters.values())[1:])
    assert inspect.signature(cm.push_cache) == want
    with pytest.raises(AttributeError):
        cm.entry_of  # noqa: B018 - the reference's own helper is not vendor API: not forwarded


def test_faults_through_the_hook_and_kill_node(make_cluster: Any) -> None:
    cluster = make_cluster(1, 2, 3, link=((1, 2), (1, 3)), timeout_ms=300)
    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    src = local.cache_manager.allocate_cache(_desc(api))
    dst = remote.cache_manager.allocate_cache(_desc(api))
    relink(cluster)
    local.inject({"kind": "delay", "seconds": 1.0})
    t0 = time.monotonic()
    with pytest.raises(api.LLMException) as info:
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
    assert info.value.status_code == api.LLMStatusCode.LLM_TIMEOUT
    assert time.monotonic() - t0 < 1.0
    local.inject({"kind": "clear"})
    remote.inject({"kind": "kill_node"})
    t0 = time.monotonic()
    with pytest.raises(api.LLMException):
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
    assert time.monotonic() - t0 < 2.0
    with pytest.raises(api.LLMException) as info:  # the dead node's proxy
        remote.read_tensor(dst, 0)
    assert info.value.status_code == api.LLMStatusCode.LLM_FAILED
    third = cluster.node(3)  # the run goes on
    dst3 = third.cache_manager.allocate_cache(_desc(api))
    relink(cluster, 1, 3)
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(3, dst3.cache_id, 0), src)


def test_pooled_processes_start_clean(host_backend: Any) -> None:
    """A second cluster on the same processes sees nothing of the first: caches, links, options, faults,
    the host's raw memory, cache handles and node handles."""
    first = host_backend.open_cluster(specs(1, 2))
    local, remote = first.node(1), first.node(2)
    api = local.api
    first.link(1, 2)
    src = local.cache_manager.allocate_cache(_desc(api))
    dst, _addrs = guarded_cache(remote, _desc(api, "HOST"))
    fill_sentinel(remote, dst)
    relink(first)
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
    local.inject({"kind": "delay", "seconds": 5.0})
    pids = first.pids()
    assert remote.stats()["host_allocations"] == 4
    first.close()

    second = host_backend.open_cluster(specs(1, 2, timeout_ms=2000, llm__HostMemPoolConfig=None))
    try:
        assert sorted(second.pids()) == sorted(pids)
        local2, remote2 = second.node(1), second.node(2)
        assert remote2.stats()["host_allocations"] == 0 and remote2.stats()["resets"] >= 1
        src2 = local2.cache_manager.allocate_cache(_desc(api))
        with pytest.raises(api.LLMException) as info:  # not linked in this cluster
            local2.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src2)
        assert info.value.status_code == api.LLMStatusCode.LLM_NOT_YET_LINK
        second.link(1, 2)
        with pytest.raises(api.LLMException) as info:  # the first cluster's cache is unknown
            local2.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src2)
        assert info.value.status_code == api.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
        with pytest.raises(api.LLMException):  # no host pool in this cluster's options
            remote2.cache_manager.allocate_cache(_desc(api, "HOST"))
        dst2 = remote2.cache_manager.allocate_cache(_desc(api))
        relink(second)
        t0 = time.monotonic()  # no delay fault left
        local2.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst2.cache_id, 0), src2)
        assert time.monotonic() - t0 < 1.0
        with pytest.raises(api.LLMException):  # old node handles reach nothing
            local.cache_manager.allocate_cache(_desc(api))
        local.inject({"kind": "kill_node"})
        assert local2.alive
        with pytest.raises(api.LLMException) as info:  # an old cache is not a cache of this node
            local2.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst2.cache_id, 0), src)
        assert info.value.status_code == api.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
    finally:
        second.close()

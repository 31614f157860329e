"""The multi-process backend: proxies, exceptions across the pipe, exact data, remote-side errors."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

from reference_impl.cache_manager import CacheManager
from reference_impl.multiprocess.backend import backend
from tests.helpers.data import SENTINEL, fill_random, fill_sentinel, guarded_cache, guards_intact, snapshot
from tests.helpers.nodes import relink, specs


@pytest.fixture(scope="module")
def cluster() -> Any:
    """Nodes 1, 2, 3 in three processes; 1 -> 2 linked, 3 not linked. Shared by this module's tests."""
    c = backend.open_cluster(specs(1, 2, 3))
    try:
        c.link(1, 2)
        yield c
    finally:
        c.close()


def _desc(api: Any, num_tensors: int = 4, shape: tuple[int, ...] = (4, 16), placement: str = "DEVICE") -> Any:
    return api.CacheDesc(num_tensors, list(shape), api.DataType.DT_FLOAT16, getattr(api.Placement, placement))


def test_capabilities_and_protocol_shape() -> None:
    from reference_impl.backend import backend as ref

    caps, ref_caps = backend.capabilities(), ref.capabilities()
    assert backend.name == "reference-nixl"
    assert set(caps) == set(ref_caps)
    assert sorted(caps["faults"]) == ["delay", "drop_link", "kill_node"]


def test_signature_and_proxy_errors(cluster: Any) -> None:
    local = cluster.node(1)
    api = local.api
    cm = local.cache_manager
    want = inspect.signature(CacheManager.push_cache)
    got = inspect.signature(cm.push_cache)
    assert list(got.parameters) == [p for p in want.parameters if p != "self"]
    assert [p.default for p in got.parameters.values()] == [p.default for n, p in want.parameters.items() if n != "self"]
    src = cm.allocate_cache(_desc(api))
    key = api.CacheKeyByIdAndIndex(2, 1, 0)
    with pytest.raises(TypeError, match="src_batch_index only support"):
        cm.push_cache(key, src, 1.0)
    with pytest.raises(ValueError, match="out of range"):
        cm.push_cache(key, src, -1)
    with pytest.raises(TypeError, match="unexpected keyword"):
        cm.push_cache(key, src, bogus=1)
    with pytest.raises(TypeError):
        cm.push_cache(object(), src)
    with pytest.raises(api.LLMException) as info:
        cm.push_cache(key, src, size=16)
    assert info.value.status_code == api.LLMStatusCode.LLM_PARAM_INVALID
    with pytest.raises(api.LLMException) as info:
        cm.push_cache(key, src, src_layer_range=range(0, 2, 2))
    assert info.value.status_code == api.LLMStatusCode.LLM_PARAM_INVALID
    cm.deallocate_cache(src)


def test_cache_handles_round_trip(cluster: Any) -> None:
    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    c = local.cache_manager.allocate_cache(_desc(api))
    assert isinstance(c, api.Cache) and c.cache_id > 0 and len(c.tensor_addrs) == 4
    assert local.read_tensor(c, 0).size == c.cache_desc.size
    foreign = remote.cache_manager.allocate_cache(_desc(api))
    # another node's cache as the source: not a cache of this manager -> LLM_KV_CACHE_NOT_EXIST
    with pytest.raises(api.LLMException) as info:
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, foreign.cache_id, 0), foreign)
    assert info.value.status_code == api.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
    local.cache_manager.deallocate_cache(c)
    assert c.tensor_addrs == []  # the parent's handle follows the node's Cache
    with pytest.raises(IndexError):
        local.read_tensor(c, 0)
    remote.cache_manager.deallocate_cache(foreign)


def test_push_lands_exactly_with_guards(cluster: Any) -> None:
    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    src = local.cache_manager.allocate_cache(_desc(api, 8, (4, 64)))
    data = fill_random(local, src, seed=7)
    dst, addrs = guarded_cache(remote, _desc(api, 8, (4, 64)))
    before = fill_sentinel(remote, dst)
    stride = src.cache_desc.size // 4
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 3), src, src_batch_index=1,
                                   src_layer_range=range(1, 3), dst_layer_range=range(1, 3))
    got = snapshot(remote, dst)
    for t in range(8):
        want = before[t].copy()
        if 2 <= t < 6:  # layers 1 and 2, two tensors each
            want[3 * stride:4 * stride] = data[t][stride:2 * stride]
        assert np.array_equal(got[t], want), f"tensor {t}"
    assert guards_intact(remote, addrs, dst.cache_desc.size)
    assert all(np.array_equal(a, b) for a, b in zip(snapshot(local, src), data, strict=True))
    # a HOST source into the DEVICE destination, all layers, default tensor_num_per_layer
    hsrc = local.cache_manager.allocate_cache(_desc(api, 8, (4, 64), "HOST"))
    hdata = fill_random(local, hsrc, seed=8)
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), hsrc, 2)
    got = snapshot(remote, dst)
    for t in range(8):
        assert np.array_equal(got[t][:stride], hdata[t][2 * stride:3 * stride])
    assert guards_intact(remote, addrs, dst.cache_desc.size)


def test_segment_allocated_after_link_is_reachable(cluster: Any) -> None:
    """alloc_memory after the link registers a new segment: the client must refresh the remote metadata."""
    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    src = local.cache_manager.allocate_cache(_desc(api))
    data = fill_random(local, src, seed=3)
    for _ in range(2):
        dst, addrs = guarded_cache(remote, _desc(api))
        relink(cluster)
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
        stride = src.cache_desc.size // 4
        for t, got in enumerate(snapshot(remote, dst)):
            assert np.array_equal(got[:stride], data[t][:stride])
        assert guards_intact(remote, addrs, dst.cache_desc.size)


@pytest.mark.parametrize("case", ["unknown_cache", "not_linked", "deallocated", "unregistered",
                                  "remote_not_accessible", "dst_batch_out_of_range", "dst_layer_out_of_range"])
def test_remote_errors_write_nothing(cluster: Any, case: str) -> None:
    local, remote, other = cluster.node(1), cluster.node(2), cluster.node(3)
    api = local.api
    S = api.LLMStatusCode
    src = local.cache_manager.allocate_cache(_desc(api))
    fill_random(local, src, seed=11)
    dst, addrs = guarded_cache(remote, _desc(api))
    fill_sentinel(remote, dst)
    nbytes = dst.cache_desc.size
    key = api.CacheKeyByIdAndIndex(2, dst.cache_id, 0)
    kwargs: dict[str, Any] = {}
    want = {"unknown_cache": S.LLM_KV_CACHE_NOT_EXIST, "not_linked": S.LLM_NOT_YET_LINK,
            "deallocated": S.LLM_KV_CACHE_NOT_EXIST, "unregistered": S.LLM_KV_CACHE_NOT_EXIST,
            "remote_not_accessible": S.LLM_PARAM_INVALID, "dst_batch_out_of_range": S.LLM_PARAM_INVALID,
            "dst_layer_out_of_range": S.LLM_PARAM_INVALID}[case]
    pool_dst = None
    if case == "unknown_cache":
        key = api.CacheKeyByIdAndIndex(2, dst.cache_id + 1000, 0)
    elif case == "not_linked":
        key = api.CacheKeyByIdAndIndex(3, other.cache_manager.allocate_cache(_desc(api)).cache_id, 0)
    elif case == "deallocated":
        pool_dst = remote.cache_manager.allocate_cache(_desc(api))
        fill_sentinel(remote, pool_dst)
        pool_addrs = list(pool_dst.tensor_addrs)
        key = api.CacheKeyByIdAndIndex(2, pool_dst.cache_id, 0)
        remote.cache_manager.deallocate_cache(pool_dst)
    elif case == "unregistered":
        remote.cache_manager.unregister_cache(dst.cache_id)
    elif case == "remote_not_accessible":
        mem = [remote.alloc_memory("DEVICE", nbytes) for _ in range(4)]
        hidden = remote.cache_manager.register_cache(_desc(api), mem, remote_accessible=False)
        key = api.CacheKeyByIdAndIndex(2, hidden.cache_id, 0)
    elif case == "dst_batch_out_of_range":
        key = api.CacheKeyByIdAndIndex(2, dst.cache_id, 4)
    elif case == "dst_layer_out_of_range":
        kwargs = {"src_layer_range": range(0, 1), "dst_layer_range": range(2, 3)}
    relink(cluster)
    with pytest.raises(api.LLMException) as info:
        local.cache_manager.push_cache(key, src, **kwargs)
    assert info.value.status_code == want, info.value
    for a in addrs:  # the guarded destination (raw memory outlives unregister) is untouched
        assert (remote.read_memory(a, nbytes) == SENTINEL).all()
    assert guards_intact(remote, addrs, nbytes)
    if pool_dst is not None:  # the freed pool pages were not written either
        for a in pool_addrs:
            assert (remote.read_memory(a, nbytes) == SENTINEL).all()


def test_threads_push_concurrently(cluster: Any) -> None:
    import threading

    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    jobs = []
    for seed in range(4):
        src = local.cache_manager.allocate_cache(_desc(api))
        data = fill_random(local, src, seed=100 + seed)
        dst = remote.cache_manager.allocate_cache(_desc(api))
        jobs.append((src, data, dst))
    relink(cluster)
    errors: list[BaseException] = []

    def run(src: Any, dst: Any) -> None:
        try:
            for b in range(4):
                local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, b), src, b)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s, d)) for s, _, d in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    for _src, data, dst in jobs:
        for t, got in enumerate(snapshot(remote, dst)):
            assert np.array_equal(got, data[t])


def test_remote_table_synced_at_first_push(cluster: Any) -> None:
    """As in-process (and as the vendor): a cache the remote allocates after the first push over a link is
    invisible until re-link, and is not written meanwhile."""
    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    src = local.cache_manager.allocate_cache(_desc(api))
    fill_random(local, src, seed=5)
    first = remote.cache_manager.allocate_cache(_desc(api))
    relink(cluster)
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, first.cache_id, 0), src)
    late = remote.cache_manager.allocate_cache(_desc(api))
    fill_sentinel(remote, late)
    with pytest.raises(api.LLMException) as info:
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, late.cache_id, 0), src)
    assert info.value.status_code == api.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
    assert all((t == SENTINEL).all() for t in snapshot(remote, late))
    relink(cluster)
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, late.cache_id, 0), src)

"""The departures issue 19 recorded, in both modes of the reference: what the documentation says (default mode)
and what the vendor does (vendor mode, reference_impl.vendor), each shown where the two differ."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from reference_impl import CacheDesc, CacheKeyByIdAndIndex, DataType, LLMException, LLMStatusCode
from reference_impl.backend import backend, vendor_backend
from tests.helpers.nodes import ONE_PROCESS

S = LLMStatusCode
BACKENDS = {"reference": backend, "vendor": vendor_backend}
TIMEOUT_S = ONE_PROCESS["timeout_ms"] / 1000  # the nodes' llm.SyncKvCacheWaitTime (tests/reference/conftest.py)


def cluster_for(make_cluster: Any, mode: str) -> Any:
    return make_cluster(1, 2, backend=BACKENDS[mode])


def caches(cluster: Any, layers: int) -> tuple[Any, Any, Any, Any]:
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(2 * layers, [2, 8], DataType.DT_INT8)
    src, dst = a.cache_manager.allocate_cache(d), b.cache_manager.allocate_cache(d)
    for t in range(2 * layers):
        a.write_tensor(src, t, np.full(16, t + 1, np.uint8))
    return a, b, src, dst


def pushed_layers(b: Any, dst: Any) -> int:
    """How many layers (two tensors each) hold the source's bytes."""
    return sum(1 for t in range(0, dst.cache_desc.num_tensors, 2) if b.read_tensor(dst, t)[0] == t + 1)


# ---- sync_kv_timeout bounds the push (documentation) or each layer (vendor) ---------------------------------


@pytest.mark.parametrize("mode", ["reference", "vendor"])
def test_layers_that_each_fit_but_not_in_all(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b, src, dst = caches(cluster, layers=4)
    a.inject({"kind": "delay", "seconds": 0.75 * TIMEOUT_S})  # each layer within the bound, four of them beyond
    t0 = time.monotonic()
    if mode == "vendor":
        a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id), src)
        assert pushed_layers(b, dst) == 4 and time.monotonic() - t0 >= 3 * TIMEOUT_S
        return
    with pytest.raises(LLMException) as info:
        a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id), src)
    took = time.monotonic() - t0
    assert info.value.status_code == S.LLM_TIMEOUT
    assert TIMEOUT_S * 0.95 <= took < 2 * TIMEOUT_S, took
    assert pushed_layers(b, dst) == 1  # the first layer fit; no rollback


@pytest.mark.parametrize("mode", ["reference", "vendor"])
def test_layers_within_the_bound_in_all_succeed_in_both_modes(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b, src, dst = caches(cluster, layers=3)
    a.inject({"kind": "delay", "seconds": 0.2 * TIMEOUT_S})
    a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id), src)
    assert pushed_layers(b, dst) == 3
    a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id), src)  # a new push has the whole bound again


# ---- src_cache: a local cache (documentation), any Cache whose id exists here (vendor) ----------------------


@pytest.mark.parametrize("mode", ["reference", "vendor"])
def test_a_cache_of_another_node(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b, src, dst = caches(cluster, layers=2)
    assert src.cache_id == dst.cache_id == 1  # each node counts its cache ids from 1
    key = CacheKeyByIdAndIndex(2, dst.cache_id)
    if mode == "reference":
        with pytest.raises(LLMException) as info:
            a.cache_manager.push_cache(key, dst)
        assert info.value.status_code == S.LLM_KV_CACHE_NOT_EXIST and pushed_layers(b, dst) == 0
        return
    a.cache_manager.push_cache(key, dst)  # the remote's Cache names local cache 1, the source
    assert pushed_layers(b, dst) == 2
    b.cache_manager.allocate_cache(src.cache_desc)
    other = b.cache_manager.allocate_cache(src.cache_desc)  # remote cache 3: no local cache has that id
    with pytest.raises(LLMException) as info:
        a.cache_manager.push_cache(key, other)
    assert info.value.status_code == S.LLM_KV_CACHE_NOT_EXIST

"""Timeouts (llm.SyncKvCacheWaitTime per layer), the fault hook and simulated link parameters."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from reference_impl import CacheDesc, CacheKeyByIdAndIndex, DataType, LLMException, LLMStatusCode
from tests.helpers.nodes import ONE_PROCESS, node_options

S = LLMStatusCode
T = 0.2  # seconds; the clusters' llm.SyncKvCacheWaitTime is 200 ms


def setup(pair: Any, layers: int = 2) -> tuple[Any, Any, Any, Any, CacheKeyByIdAndIndex]:
    a, b = pair.node(1), pair.node(2)
    d = CacheDesc(2 * layers, [2, 64], DataType.DT_INT8)
    src = a.cache_manager.allocate_cache(d)
    dst = b.cache_manager.allocate_cache(d)
    for t in range(2 * layers):
        a.write_tensor(src, t, np.full(128, t + 1, np.uint8))
    return a, b, src, dst, CacheKeyByIdAndIndex(2, dst.cache_id)


def timed_status(a: Any, key: Any, src: Any) -> tuple[LLMStatusCode | None, float]:
    t0 = time.monotonic()
    try:
        a.cache_manager.push_cache(key, src)
        status = None
    except LLMException as exc:
        status = exc.status_code
    return status, time.monotonic() - t0


def untouched(b: Any, dst: Any) -> bool:
    return not any(b.read_tensor(dst, t).any() for t in range(dst.cache_desc.num_tensors))


def test_delay_beyond_timeout_times_out_within_bounds(pair: Any) -> None:
    a, b, src, dst, key = setup(pair)
    a.inject({"kind": "delay", "seconds": 5.0})
    status, took = timed_status(a, key, src)
    assert status == S.LLM_TIMEOUT
    assert T * 0.95 <= took < 2 * T
    assert untouched(b, dst)
    a.inject({"kind": "clear"})
    assert timed_status(a, key, src)[0] is None


def test_delay_below_timeout_is_per_layer(pair: Any) -> None:
    a, b, src, dst, key = setup(pair, layers=3)
    a.inject({"kind": "delay", "seconds": 0.03})
    status, took = timed_status(a, key, src)
    assert status is None and took >= 3 * 0.03
    assert b.read_tensor(dst, 5)[0] == 6


def test_delay_only_on_sender(pair: Any, make_cluster: Any) -> None:
    a, b, src, dst, key = setup(pair)
    b.inject({"kind": "delay", "seconds": 5.0})
    status, took = timed_status(a, key, src)
    assert status is None and took < T


def test_drop_link(make_cluster: Any) -> None:
    opts = node_options(**ONE_PROCESS)
    cluster = make_cluster(*({"cluster_id": c, "role": "MIX", "options": opts} for c in (1, 2, 3)),
                           link=((1, 2), (1, 3)))
    a = cluster.node(1)
    d = CacheDesc(2, [1, 8], DataType.DT_INT8)
    src = a.cache_manager.allocate_cache(d)
    k2 = CacheKeyByIdAndIndex(2, cluster.node(2).cache_manager.allocate_cache(d).cache_id)
    k3 = CacheKeyByIdAndIndex(3, cluster.node(3).cache_manager.allocate_cache(d).cache_id)
    a.inject({"kind": "drop_link", "peer": 2})
    status, took = timed_status(a, k2, src)
    assert status == S.LLM_TIMEOUT and T * 0.95 <= took < 2 * T
    assert timed_status(a, k3, src)[0] is None  # other peers unaffected
    a.inject({"kind": "clear"})
    assert timed_status(a, k2, src)[0] is None


def test_kill_remote_fails_fast(pair: Any) -> None:
    a, b, src, dst, key = setup(pair)
    b.inject({"kind": "kill_node"})
    status, took = timed_status(a, key, src)
    assert status == S.LLM_NOT_YET_LINK and took < T
    assert not pair.fabric.nodes[2].alive
    with pytest.raises(RuntimeError):
        pair.link(2, 1)  # a dead node cannot link either


def test_killed_sender_fails(pair: Any) -> None:
    a, _b, src, _dst, key = setup(pair)
    a.inject({"kind": "kill_node"})
    status, took = timed_status(a, key, src)
    assert status == S.LLM_FAILED and took < T
    a.inject({"kind": "clear"})
    assert timed_status(a, key, src)[0] is None


def test_kill_during_transfer_wait(pair: Any) -> None:
    import threading

    a, b, src, dst, key = setup(pair)
    a.inject({"kind": "delay", "seconds": 0.1})
    threading.Timer(0.03, lambda: b.inject({"kind": "kill_node"})).start()
    status, took = timed_status(a, key, src)
    assert status == S.LLM_NOT_YET_LINK and took < 2 * T
    assert untouched(b, dst)


def test_link_latency_and_bandwidth(pair: Any) -> None:
    a, b, src, dst, key = setup(pair, layers=2)
    pair.set_link_params(1, 2, latency_s=0.02)
    status, took = timed_status(a, key, src)
    assert status is None and took >= 2 * 0.02
    pair.set_link_params(1, 2, latency_s=0.0, bandwidth=128 / 0.03)  # 2 x 64 bytes per layer -> 30 ms
    status, took = timed_status(a, key, src)
    assert status is None and took >= 2 * 0.03
    pair.set_link_params(1, 2, latency_s=0.25)
    status, took = timed_status(a, key, src)
    assert status == S.LLM_TIMEOUT and took < 2 * T and untouched(b, dst) is False  # earlier pushes landed
    with pytest.raises(ValueError):
        pair.set_link_params(1, 2, latency_s=-1)
    with pytest.raises(ValueError):
        pair.set_link_params(1, 2, bandwidth=0)


def test_zero_time_never_waits(pair: Any) -> None:
    a, _b, src, _dst, key = setup(pair)

    class NoWait:
        def wait(self, timeout: float | None = None) -> bool:
            raise AssertionError("waited on the fast path")

        def set(self) -> None:
            pass

    a.engine.stop_event = NoWait()
    a.cache_manager.push_cache(key, src)


def test_default_timeout_and_fault_validation(make_cluster: Any) -> None:
    cluster = make_cluster({"cluster_id": 1, "role": "MIX",
                            "options": node_options(**ONE_PROCESS, llm__SyncKvCacheWaitTime=None)}, link=())
    node = cluster.node(1)
    assert node.engine.sync_timeout_s == 1.0
    for bad in ({"kind": "explode"}, {"kind": "delay", "seconds": -1}, {"kind": "delay", "seconds": float("inf")}):
        with pytest.raises(ValueError):
            node.inject(bad)

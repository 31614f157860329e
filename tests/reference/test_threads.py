"""Concurrent push_cache calls from several threads."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from reference_impl import CacheDesc, CacheKeyByIdAndIndex, DataType, LLMException, LLMStatusCode
from tests.helpers.data import fill_random
from tests.helpers.nodes import ONE_PROCESS, node_options


def test_concurrent_pushes_into_distinct_destinations_land_exactly(make_cluster: Any) -> None:
    opts = node_options(**ONE_PROCESS)
    cluster = make_cluster(*({"cluster_id": c, "role": "MIX", "options": opts} for c in (1, 2, 3)),
                           link=((1, 3), (2, 3)))
    d = CacheDesc(8, [4, 256], DataType.DT_FLOAT16)
    senders = [cluster.node(1), cluster.node(2)]
    dst_node = cluster.node(3)
    jobs = []
    for i in range(8):
        node = senders[i % 2]
        src = node.cache_manager.allocate_cache(d)
        data = fill_random(node, src, seed=i)
        dst = dst_node.cache_manager.allocate_cache(d)
        jobs.append((node, src, data, dst, i % 4))

    def run(job: Any) -> None:
        node, src, _data, dst, batch = job
        for rep in range(20):
            node.cache_manager.push_cache(CacheKeyByIdAndIndex(3, dst.cache_id, (batch + rep) % 4), src, batch)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(run, jobs))
    stride = d.size // 4
    for _node, _src, data, dst, batch in jobs:
        for t in range(8):
            got = dst_node.read_tensor(dst, t)
            for db in range(4):
                assert np.array_equal(got[db * stride:(db + 1) * stride], data[t][batch * stride:(batch + 1) * stride])


def test_waits_overlap_no_global_lock(pair: Any) -> None:
    a, b = pair.node(1), pair.node(2)
    d = CacheDesc(2, [1, 16], DataType.DT_INT8)
    pairs = [(a.cache_manager.allocate_cache(d), b.cache_manager.allocate_cache(d)) for _ in range(6)]
    a.inject({"kind": "delay", "seconds": 0.1})
    t0 = time.monotonic()
    threads = [threading.Thread(target=a.cache_manager.push_cache, args=(CacheKeyByIdAndIndex(2, dst.cache_id), src))
               for src, dst in pairs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.monotonic() - t0 < 0.35  # six 100 ms transfers overlapped


def test_deallocate_while_pushing_never_writes_freed_memory(pair: Any) -> None:
    """A push in progress stops at the next layer once the remote cache is deallocated; reused pages stay intact."""
    a, b = pair.node(1), pair.node(2)
    d = CacheDesc(16, [1, 4096], DataType.DT_INT8)
    src = a.cache_manager.allocate_cache(d)
    for t in range(16):
        a.write_tensor(src, t, np.full(4096, 1, np.uint8))
    dst = b.cache_manager.allocate_cache(d)
    a.inject({"kind": "delay", "seconds": 0.01})  # 8 layers, about 80 ms
    errors: list[LLMException] = []

    def push() -> None:
        try:
            a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id), src)
        except LLMException as exc:
            errors.append(exc)

    pt = threading.Thread(target=push)
    pt.start()
    time.sleep(0.035)
    b.cache_manager.deallocate_cache(dst)
    reuse = b.cache_manager.allocate_cache(d)  # takes the freed pages
    for t in range(16):
        b.write_tensor(reuse, t, np.full(4096, 7, np.uint8))
    pt.join()
    assert [e.status_code for e in errors] == [LLMStatusCode.LLM_KV_CACHE_NOT_EXIST]
    assert all((b.read_tensor(reuse, t) == 7).all() for t in range(16))

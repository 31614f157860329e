"""Benchmark of the multi-process backend ("reference-nixl"): push_cache across processes, beside a raw NIXL
WRITE of the same bytes between the same two node processes, and np.copyto of the same bytes, in one run.

    python bench/bench_nixl.py            # 64 layers x 2 tensors x 2 MiB = 256 MiB; 512 tiny layers
    python bench/bench_nixl.py --quick    # 16 layers x 2 tensors x 1 MiB = 32 MiB; 128 tiny layers

Prints throughputs (GB/s = 1e9 bytes/s), the ratios push/raw and push/copyto, and the per-layer overhead of
push_cache across processes in microseconds per layer (many tiny layers, against a raw per-layer NIXL loop).
Needs NIXL (pip install --no-deps nixl==1.5.1 nixl-cu12==1.5.1).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import numpy as np

MiB = 1 << 20


def _options(pool_bytes: int) -> dict[str, str]:
    pool = json.dumps({"memory_size": pool_bytes, "page_shift": 21})
    return {"llm.EnableCacheManager": "1", "llm.EnableRemoteCacheAccessible": "1", "llm.MemPoolConfig": pool,
            "llm.HostMemPoolConfig": json.dumps({"memory_size": 1 << 22, "page_shift": 16}),
            "llm.SyncKvCacheWaitTime": "30000"}


def _gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def _allocate(cluster: Any, layers: int, tensor_bytes: int) -> tuple[Any, Any]:
    """A source cache on node 1 and a destination cache on node 2, both of ``2 * layers`` tensors."""
    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    desc = api.CacheDesc(2 * layers, [1, tensor_bytes], api.DataType.DT_UINT8, api.Placement.DEVICE)
    return local.cache_manager.allocate_cache(desc), remote.cache_manager.allocate_cache(desc)


def _free(cluster: Any, src: Any, dst: Any) -> None:
    cluster.node(1).cache_manager.deallocate_cache(src)
    cluster.node(2).cache_manager.deallocate_cache(dst)


def bench_bulk(cluster: Any, src: Any, dst: Any, layers: int, tensor_bytes: int, repeats: int) -> dict[str, float]:
    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    rng = np.random.default_rng(0)
    chunk = rng.integers(0, 256, tensor_bytes, dtype=np.uint8)
    for t in range(2 * layers):
        local.write_tensor(src, t, np.roll(chunk, t))
    total = 2 * layers * tensor_bytes
    key = api.CacheKeyByIdAndIndex(2, dst.cache_id, 0)
    local.cache_manager.push_cache(key, src)  # warm-up (page faults in the destination)
    push = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        local.cache_manager.push_cache(key, src)
        push.append(time.perf_counter() - t0)
    for t in (0, layers, 2 * layers - 1):
        assert np.array_equal(remote.read_tensor(dst, t), np.roll(chunk, t)), f"tensor {t} differs after push"
    raw = local.proc.call("bench_raw", 2, src, dst.cache_id, 2, repeats, False, False)
    raw_layer = local.proc.call("bench_raw", 2, src, dst.cache_id, 2, repeats, True, True)
    a = np.empty(total, dtype=np.uint8)
    a[:] = 1
    b = np.empty_like(a)
    b[:] = 0
    copy = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(2 * layers):  # the same pieces the push moves
            np.copyto(b[i * tensor_bytes:(i + 1) * tensor_bytes], a[i * tensor_bytes:(i + 1) * tensor_bytes])
        copy.append(time.perf_counter() - t0)
    return {"bytes": total, "push": _median(push), "raw": _median(raw), "raw_per_layer": _median(raw_layer),
            "copyto": _median(copy)}


def bench_tiny(cluster: Any, src: Any, dst: Any, layers: int, repeats: int) -> dict[str, float]:
    local = cluster.node(1)
    api = local.api
    key = api.CacheKeyByIdAndIndex(2, dst.cache_id, 0)
    local.cache_manager.push_cache(key, src)  # warm-up
    push, push1 = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        local.cache_manager.push_cache(key, src)
        push.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        local.cache_manager.push_cache(key, src, 0, range(0, 1), range(0, 1))
        push1.append(time.perf_counter() - t0)
    raw_notif = local.proc.call("bench_raw", 2, src, dst.cache_id, 2, repeats, True, True)
    raw_plain = local.proc.call("bench_raw", 2, src, dst.cache_id, 2, repeats, True, False)
    return {"layers": layers, "push": _median(push), "push_one_layer": _median(push1),
            "raw_notif": _median(raw_notif), "raw_plain": _median(raw_plain)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small run for CI: 32 MiB, 128 tiny layers, 3 repeats; figures only, no timing check")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per measurement (default 5, quick 3)")
    args = parser.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        parser.error("--repeats must be at least 1")
    from reference_impl.multiprocess import nixl_available

    why = nixl_available()
    if why is not None:
        print(f"bench_nixl: NIXL is not available ({why})", file=sys.stderr)
        return 2
    from reference_impl.multiprocess.backend import backend

    layers, tensor_mib, tiny_layers = (16, 1, 128) if args.quick else (64, 2, 512)
    repeats = args.repeats or (3 if args.quick else 5)
    tensor_bytes = tensor_mib * MiB
    pool_bytes = 2 * layers * tensor_bytes + (64 * MiB)  # the bulk cache, plus room for the tiny one (one page)
    t_open = time.perf_counter()
    cluster = backend.open_cluster([{"cluster_id": 1, "role": "PROMPT", "options": _options(pool_bytes)},
                                    {"cluster_id": 2, "role": "DECODER", "options": _options(pool_bytes)}])
    try:
        cluster.link(1, 2)
        opened = time.perf_counter() - t_open
        # Every destination exists before the first push over the link: a link sees the server's cache table
        # as it was at its first push (docs/nixl.md, "The remote cache table"), so a cache allocated later
        # would be LLM_KV_CACHE_NOT_EXIST until a re-link.
        bulk_src, bulk_dst = _allocate(cluster, layers, tensor_bytes)
        tiny_src, tiny_dst = _allocate(cluster, tiny_layers, 64)
        bulk = bench_bulk(cluster, bulk_src, bulk_dst, layers, tensor_bytes, repeats)
        _free(cluster, bulk_src, bulk_dst)
        tiny = bench_tiny(cluster, tiny_src, tiny_dst, tiny_layers, repeats)
        _free(cluster, tiny_src, tiny_dst)
    finally:
        cluster.close()
    elapsed = time.perf_counter() - t_open
    mb = bulk["bytes"] / MiB
    print(f"reference-nixl bench ({'quick' if args.quick else 'full'}): cluster open + link {opened:.2f} s; "
          f"median of {repeats}; {elapsed:.1f} s in all")
    print(f"bulk: {layers} layers x 2 tensors x {tensor_mib} MiB = {mb:.0f} MiB, node process -> node process")
    for name, label in (("push", "push_cache (per-layer WRITE + notif)"),
                        ("raw_per_layer", "raw NIXL, one WRITE + notif per layer"),
                        ("raw", "raw NIXL, one WRITE, all descriptors"),
                        ("copyto", "np.copyto, same bytes, one process")):
        print(f"  {label:40s} {bulk[name] * 1e3:9.2f} ms  {_gbps(bulk['bytes'], bulk[name]):6.2f} GB/s")
    print(f"  ratio push / raw NIXL (one WRITE)       {bulk['push'] / bulk['raw']:6.2f}x time")
    print(f"  ratio push / raw NIXL (per layer)       {bulk['push'] / bulk['raw_per_layer']:6.2f}x time")
    print(f"  ratio push / np.copyto                  {bulk['push'] / bulk['copyto']:6.2f}x time")
    n = tiny["layers"]
    per = (tiny["push"] - tiny["push_one_layer"]) / (n - 1)
    print(f"tiny: {n} layers x 2 tensors x 64 B")
    print(f"  push_cache, all layers                  {tiny['push'] * 1e3:9.2f} ms  {per * 1e6:7.1f} us/layer "
          "(marginal, call overhead removed)")
    print(f"  push_cache, one layer (call overhead)   {tiny['push_one_layer'] * 1e3:9.2f} ms")
    print(f"  raw NIXL per-layer WRITE + notif        {tiny['raw_notif'] * 1e3:9.2f} ms  "
          f"{tiny['raw_notif'] / n * 1e6:7.1f} us/layer")
    print(f"  raw NIXL per-layer WRITE, no notif      {tiny['raw_plain'] * 1e3:9.2f} ms  "
          f"{tiny['raw_plain'] / n * 1e6:7.1f} us/layer")
    print(f"  push overhead over raw WRITE + notif    {per * 1e6 - tiny['raw_notif'] / n * 1e6:7.1f} us/layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())

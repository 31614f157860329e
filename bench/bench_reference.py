"""Benchmark of the reference backend's push_cache, measured side by side with plain numpy in one run.

    python bench/bench_reference.py            # 256 MiB throughput + 512 tiny layers
    python bench/bench_reference.py --quick    # small and fast

(a) throughput: node -> node push of L layers x 2 tensors (batch 1) vs np.copyto of the same bytes
    (the same 2*L tensor pairs, and one single buffer copy), best of several repeats;
(b) per-layer overhead: many tiny layers, microseconds per layer, compared with the bare copies.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from reference_impl import (
    CacheDesc,
    CacheKeyByIdAndIndex,
    DataType,
    Fabric,
    LLMClusterInfo,
    LLMDataDist,
    LLMRole,
)

MiB = 1 << 20


def best_of(fn: Callable[[], None], repeats: int) -> float:
    fn()  # warm up (page faults, caches)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def make_pair(pool_bytes: int) -> tuple[LLMDataDist, LLMDataDist]:
    fabric = Fabric()
    opts = {"llm.EnableCacheManager": "1", "llm.EnableRemoteCacheAccessible": "1",
            "llm.MemPoolConfig": json.dumps({"memory_size": pool_bytes, "page_shift": 16})}
    nodes = []
    for cid, role in ((1, LLMRole.PROMPT), (2, LLMRole.DECODER)):
        node = LLMDataDist(role, cid, fabric=fabric)
        node.init(opts)
        nodes.append(node)
    info = LLMClusterInfo(remote_cluster_id=2)
    info.append_local_ip_info("127.0.0.1", 26000)
    status, _ = nodes[0].link_clusters([info])
    assert status == 0, status
    return nodes[0], nodes[1]


def run_case(layers: int, tensor_bytes: int, repeats: int) -> dict[str, float]:
    num_tensors = 2 * layers
    total = num_tensors * tensor_bytes
    src_node, dst_node = make_pair(total + (4 << 20))
    desc = CacheDesc(num_tensors, [1, tensor_bytes], DataType.DT_UINT8)
    src = src_node.cache_manager.allocate_cache(desc)
    dst = dst_node.cache_manager.allocate_cache(desc)
    src_entry = src_node.engine.lookup(src.cache_id)
    dst_entry = dst_node.engine.lookup(dst.cache_id)
    assert src_entry is not None and dst_entry is not None
    for v in src_entry.views:
        v[:] = np.random.default_rng(0).integers(0, 256, v.size, dtype=np.uint8)
    key = CacheKeyByIdAndIndex(2, dst.cache_id, 0)
    cm = src_node.cache_manager

    def push() -> None:
        cm.push_cache(key, src)

    pairs = list(zip(src_entry.views, dst_entry.views, strict=True))

    def copy_pairs() -> None:
        for s, d in pairs:
            np.copyto(d, s)

    flat_src = np.empty(total, dtype=np.uint8)
    flat_dst = np.empty(total, dtype=np.uint8)
    flat_src[:] = 7

    def copy_flat() -> None:
        np.copyto(flat_dst, flat_src)

    t_push = best_of(push, repeats)
    t_pairs = best_of(copy_pairs, repeats)
    t_flat = best_of(copy_flat, repeats)
    assert all(np.array_equal(s, d) for s, d in pairs)
    src_node.finalize()
    dst_node.finalize()
    return {"layers": layers, "bytes": total, "push_s": t_push, "pairs_s": t_pairs, "flat_s": t_flat}


#: what the benchmark measured, for docs/figures.py (the README's figures come from it)
FIGURES = Path(__file__).resolve().parents[1] / "reports" / "bench" / "reference.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    ns = parser.parse_args()
    repeats = 3 if ns.quick else 7
    big_layers, big_tensor = (16, 256 * 1024) if ns.quick else (64, 2 * MiB)
    tiny_layers = 128 if ns.quick else 512

    r = run_case(big_layers, big_tensor, repeats)
    mib = r["bytes"] / MiB
    print(f"(a) throughput: {big_layers} layers x 2 tensors x {big_tensor // 1024} KiB = {mib:.0f} MiB, "
          f"best of {repeats}")
    print(f"    push_cache           {mib / r['push_s']:10.0f} MiB/s")
    print(f"    np.copyto per tensor {mib / r['pairs_s']:10.0f} MiB/s   ratio push/copyto = "
          f"{r['pairs_s'] / r['push_s']:.2f}")
    print(f"    np.copyto one buffer {mib / r['flat_s']:10.0f} MiB/s   ratio push/copyto = "
          f"{r['flat_s'] / r['push_s']:.2f}")

    t = run_case(tiny_layers, 32, repeats * 3)
    per_layer = t["push_s"] / tiny_layers * 1e6
    bare = t["pairs_s"] / tiny_layers * 1e6
    print(f"(b) per-layer overhead: {tiny_layers} layers of 64 bytes (2 tensors x 32 B), best of {repeats * 3}")
    print(f"    push_cache {per_layer:6.2f} us/layer; bare np.copyto of the same pairs {bare:5.2f} us/layer; "
          f"overhead {per_layer - bare:6.2f} us/layer")
    figures = {"mode": "quick" if ns.quick else "full", "measured": datetime.date.today().isoformat(),
               "bulk_mib": round(mib), "bulk_layers": big_layers, "bulk_tensor_kib": big_tensor // 1024,
               "ratio_push_to_copyto_pairs": round(r["pairs_s"] / r["push_s"], 2),
               "ratio_push_to_copyto_one": round(r["flat_s"] / r["push_s"], 2),
               "tiny_layers": tiny_layers, "push_us_per_layer": round(per_layer, 2),
               "copyto_us_per_layer": round(bare, 2)}
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    FIGURES.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"figures: {FIGURES}")


if __name__ == "__main__":
    main()

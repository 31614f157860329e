"""The isolated backend's round trip: one request from the kit to the backend's process and its answer, over the
data-only wire (conformance_tests.isolation), beside the same call in the kit's process.

    python bench/bench_isolation.py [--quick]

Prints the median of many calls of each kind, in microseconds: an attribute read on a handle (``cache.cache_id``),
and ``node.read_tensor`` of a 64-byte tensor and of a 1 MiB one (the latter's bytes cross out of band). The reference
backend serves both sides. No timing assertion: the figures are for people (README, the isolation section).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from conformance_tests.isolation import IsolatedBackend
from reference_impl.backend import backend as in_process

TARGET = "reference_impl.backend:backend"


def _options() -> dict[str, str]:
    pool = json.dumps({"memory_size": 1 << 24, "page_shift": 16})
    return {"llm.EnableCacheManager": "1", "llm.EnableRemoteCacheAccessible": "1", "llm.MemPoolConfig": pool,
            "llm.HostMemPoolConfig": pool, "llm.SyncKvCacheWaitTime": "1000"}


def _median_us(fn: Callable[[], Any], calls: int) -> float:
    for _ in range(min(200, calls)):
        fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def measure(backend: Any, calls: int) -> dict[str, float]:
    cluster = backend.open_cluster([{"cluster_id": 1, "role": "PROMPT", "options": _options()},
                                    {"cluster_id": 2, "role": "DECODER", "options": _options()}])
    try:
        node = cluster.node(1)
        api = node.api
        small = node.cache_manager.allocate_cache(api.CacheDesc(2, [1, 64], api.DataType.DT_UINT8, api.Placement.HOST))
        big = node.cache_manager.allocate_cache(api.CacheDesc(1, [1, 1 << 20], api.DataType.DT_UINT8,
                                                              api.Placement.HOST))
        return {
            "attribute": _median_us(lambda: small.cache_id, calls),
            "read_64B": _median_us(lambda: node.read_tensor(small, 0), calls),
            "read_1MiB": _median_us(lambda: node.read_tensor(big, 0), max(50, calls // 20)),
        }
    finally:
        cluster.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer calls (as in CI)")
    args = parser.parse_args(argv)
    calls = 500 if args.quick else 3000
    isolated = IsolatedBackend(TARGET)
    try:
        remote = measure(isolated, calls)
    finally:
        isolated.close()
    local = measure(in_process, calls)
    print(f"isolated backend round trip (median of {calls} calls; {TARGET} in its own process vs in this one):")
    for key, label in (("attribute", "attribute read on a handle"), ("read_64B", "read_tensor, 64 B"),
                       ("read_1MiB", "read_tensor, 1 MiB")):
        print(f"  {label:28s} {remote[key]:9.1f} us isolated  {local[key]:9.1f} us in process  "
              f"(+{remote[key] - local[key]:.1f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of the multi-process backend ("reference-nixl", the node host over the reference): push_cache across
processes, beside a raw NIXL WRITE of the same bytes between the same two node processes, and np.copyto of the
same bytes, in one run.

    python bench/bench_nixl.py            # 64 layers x 2 tensors x 2 MiB = 256 MiB; 512 tiny layers
    python bench/bench_nixl.py --quick    # 16 layers x 2 tensors x 1 MiB = 32 MiB; 128 tiny layers
    python bench/bench_nixl.py --hosts    # also: the same pushes between nodes on two other hosts (SSH)
    python bench/bench_nixl.py --certify  # certification times, full profile: in process vs one process per node
    python bench/bench_nixl.py --certify --profile quick   # the same with the quick profile (CI)

Prints throughputs (GB/s = 1e9 bytes/s), the ratios push/raw and push/copyto, and the per-layer overhead of
push_cache across processes in microseconds per layer (many tiny layers, against a raw per-layer NIXL loop).
``--certify`` runs two certifications one after the other, both with the same profile (``--profile``, default
the certification's own), and prints their wall times and the ratio: the in-process reference and the
multi-process reference through the node host (``reference-nixl``); the target is a ratio of at most 2.
``--hosts`` starts two SSH servers (on 127.0.0.2 and 127.0.0.3, with keys made for the run, as the self-tests do),
runs the multi-process reference with a node on each (the node host reaching them through execnet gateways) and
prints its pushes beside the raw NIXL WRITEs measured in the same run.
Needs NIXL (pip install --no-deps nixl==1.5.1 nixl-cu12==1.5.1).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from conformance_tests.cli.exitcodes import USAGE_ERROR

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


def _raw(local: Any, src: Any, dst: Any, repeats: int, per_layer: bool, notify: bool) -> list[float]:
    """Seconds of raw NIXL WRITEs of batch 0 of ``src`` into ``dst`` on node 2 (no push_cache), measured in the
    node process (the reference's ``conformance_bench_raw`` hook)."""
    return list(local.proc.call("node", "bench_raw", (2, src, dst.cache_id, 2, repeats, per_layer, notify)))


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
    raw = _raw(local, src, dst, repeats, False, False)
    raw_layer = _raw(local, src, dst, repeats, True, True)
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
    raw_notif = _raw(local, src, dst, repeats, True, True)
    raw_plain = _raw(local, src, dst, repeats, True, False)
    return {"layers": layers, "push": _median(push), "push_one_layer": _median(push1),
            "raw_notif": _median(raw_notif), "raw_plain": _median(raw_plain)}


def push_times(cluster: Any, src: Any, dst: Any, repeats: int, **kwargs: Any) -> list[float]:
    """Seconds of ``repeats`` pushes of ``src`` into ``dst`` (after one warm-up push)."""
    local = cluster.node(1)
    key = local.api.CacheKeyByIdAndIndex(2, dst.cache_id, 0)
    local.cache_manager.push_cache(key, src, **kwargs)
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        local.cache_manager.push_cache(key, src, **kwargs)
        out.append(time.perf_counter() - t0)
    return out


def bench_hosts(layers: int, tensor_bytes: int, tiny_layers: int, repeats: int, pool_bytes: int) -> dict[str, Any]:
    """Bulk and tiny pushes between nodes on two other hosts: an SSH server each on 127.0.0.2 and 127.0.0.3."""
    import tempfile

    from nodehost.backend import NodeHostBackend

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.helpers.ssh import ssh_servers, sshd_missing

    why = sshd_missing()
    if why is not None:
        raise RuntimeError(f"--hosts needs SSH servers: {why}")
    with tempfile.TemporaryDirectory() as folder, ssh_servers(Path(folder)) as servers:
        backend = NodeHostBackend("reference_impl.multiprocess.datadist", hosts=servers.hosts, pool=False)
        t_open = time.perf_counter()
        cluster = backend.open_cluster([{"cluster_id": 1, "role": "PROMPT", "options": _options(pool_bytes)},
                                        {"cluster_id": 2, "role": "DECODER", "options": _options(pool_bytes)}])
        try:
            cluster.link(1, 2)
            opened = time.perf_counter() - t_open
            bulk_src, bulk_dst = _allocate(cluster, layers, tensor_bytes)
            tiny_src, tiny_dst = _allocate(cluster, tiny_layers, 64)
            chunk = np.random.default_rng(0).integers(0, 256, tensor_bytes, dtype=np.uint8)
            for t in range(2 * layers):
                cluster.node(1).write_tensor(bulk_src, t, np.roll(chunk, t))
            bulk = push_times(cluster, bulk_src, bulk_dst, repeats)
            for t in (0, 2 * layers - 1):
                assert np.array_equal(cluster.node(2).read_tensor(bulk_dst, t), np.roll(chunk, t)), t
            tiny = push_times(cluster, tiny_src, tiny_dst, repeats)
            tiny1 = push_times(cluster, tiny_src, tiny_dst, repeats, src_layer_range=range(0, 1),
                               dst_layer_range=range(0, 1))
        finally:
            cluster.close()
    return {"opened": opened, "push": _median(bulk), "tiny": _median(tiny), "tiny_one_layer": _median(tiny1)}


#: (label, backend) of the two certifications, each run with the same profile so the ratio compares the same tests
#: and examples
CERTIFY_RUNS = (
    ("in process (reference)", "reference"),
    ("one process per node (reference-nixl, through the node host)", "reference_impl.multiprocess.backend:backend"),
)


def bench_certify(profile: str) -> int:
    """Wall time of each certification in CERTIFY_RUNS with ``profile``, its verdict line and exit code, and the
    ratio. A full run must be CERTIFIED (exit 0), a quick one PARTIAL without a blocking failure (exit 5).

    Returns 1 when a run does not end with its expected exit code (a verdict check, not a timing check)."""
    root = Path(__file__).resolve().parents[1]
    want = 0 if profile == "certify" else 5
    times = []
    unexpected = []
    for label, backend in CERTIFY_RUNS:
        t0 = time.perf_counter()
        # push_cache alone (certify's default is the whole family): the figures recorded are push_cache's
        proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "--operation", "push_cache",
                               "--no-reports", "-q", "-p", "no:warnings", "--backend", backend,
                               "--hypothesis-profile", profile],
                              cwd=root, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        verdict = re.search(r"^verdict: .*$", proc.stdout, re.MULTILINE)
        print(f"{label}, {profile} profile: {times[-1]:.1f} s, exit code {proc.returncode} (expected {want}), "
              f"{verdict.group(0) if verdict else 'no verdict line'}", flush=True)
        if proc.returncode != want:
            unexpected.append(label)
    print(f"ratio one process per node / in process: {times[1] / times[0]:.2f}x (target: at most 2x)")
    if not unexpected:
        # docs/figures.py --record reads the full profile's figures from here
        out = root / "reports" / "bench" / "nixl-certify.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"profile": profile, "measured": time.strftime("%Y-%m-%d"),
                                   "in_process_s": round(times[0], 1), "node_host_s": round(times[1], 1),
                                   "ratio": round(times[1] / times[0], 2),
                                   "verdict": "CERTIFIED" if want == 0 else "PARTIAL"}, indent=2) + "\n",
                       encoding="utf-8")
    if unexpected:
        print(f"bench_nixl: unexpected exit code: {', '.join(unexpected)}", file=sys.stderr)
    return 1 if unexpected else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small run for CI: 32 MiB, 128 tiny layers, 3 repeats; figures only, no timing check")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per measurement (default 5, quick 3)")
    parser.add_argument("--hosts", action="store_true",
                        help="also push between nodes on two other hosts (SSH servers on 127.0.0.2, 127.0.0.3)")
    parser.add_argument("--certify", action="store_true",
                        help="only time the two certifications (in process, one process per node) and their ratio")
    parser.add_argument("--profile", choices=("certify", "quick"), default="certify",
                        help="with --certify: the hypothesis profile of both runs (default: certify, the full one)")
    args = parser.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        parser.error("--repeats must be at least 1")
    from reference_impl.multiprocess import nixl_available

    why = nixl_available()
    if why is not None:
        print(f"bench_nixl: NIXL is not available ({why})", file=sys.stderr)
        return USAGE_ERROR
    if args.certify:
        return bench_certify(args.profile)
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
    if args.hosts:
        ag = bench_hosts(layers, tensor_bytes, tiny_layers, repeats, pool_bytes)
        per_ag = (ag["tiny"] - ag["tiny_one_layer"]) / (n - 1)
        print(f"two SSH hosts (127.0.0.2 -> 127.0.0.3, reference behind the vendor API): cluster open + link "
              f"{ag['opened']:.2f} s")
        print(f"  push_cache bulk, across hosts           {ag['push'] * 1e3:9.2f} ms  "
              f"{_gbps(bulk['bytes'], ag['push']):6.2f} GB/s")
        print(f"  ratio push across hosts / raw NIXL (one WRITE)    {ag['push'] / bulk['raw']:6.2f}x time")
        print(f"  ratio push across hosts / raw NIXL (per layer)    {ag['push'] / bulk['raw_per_layer']:6.2f}x time")
        print(f"  ratio push across hosts / push between local nodes {ag['push'] / bulk['push']:6.2f}x time")
        print(f"  tiny: push_cache across hosts           {ag['tiny'] * 1e3:9.2f} ms  {per_ag * 1e6:7.1f} us/layer "
              f"(local nodes: {per * 1e6:.1f} us/layer; raw WRITE + notif {tiny['raw_notif'] / n * 1e6:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

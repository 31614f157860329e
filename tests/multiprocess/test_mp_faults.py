"""Faults across processes: timeouts, dropped links, killed peers, deallocation under a push, cleanup."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import numpy as np
import pytest

from tests.helpers.data import SENTINEL, fill_random, fill_sentinel, guarded_cache, guards_intact, snapshot
from tests.helpers.nodes import TIMEOUT_MS, specs
from tests.helpers.processes import process_gone


def _idle_pids() -> list[int]:
    from reference_impl.multiprocess.backend import backend

    pool = backend.pool()
    return pool.idle_pids() if pool is not None else []


def _desc(api: Any, num_tensors: int = 4, shape: tuple[int, ...] = (2, 32)) -> Any:
    return api.CacheDesc(num_tensors, list(shape), api.DataType.DT_UINT8, api.Placement.DEVICE)


def _setup(cluster: Any, num_tensors: int = 4, server: int = 2) -> tuple[Any, Any, Any, list[np.ndarray]]:
    local, remote = cluster.node(1), cluster.node(server)
    api = local.api
    src = local.cache_manager.allocate_cache(_desc(api, num_tensors))
    data = fill_random(local, src, seed=5)
    dst = remote.cache_manager.allocate_cache(_desc(api, num_tensors))
    fill_sentinel(remote, dst)
    return local, remote, src, data, dst  # type: ignore[return-value]


def _push_in_thread(local: Any, key: Any, src: Any) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            local.cache_manager.push_cache(key, src)
            box["exc"] = None
        except BaseException as exc:  # noqa: BLE001
            box["exc"] = exc
        box["end"] = time.monotonic()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def _pushed_prefix(got: list[np.ndarray], data: list[np.ndarray], sentinel: int, tpl: int = 2) -> int:
    """Leading layers whose batch-0 slot holds the source's batch 0; every other byte must be untouched."""
    layers = len(got) // tpl
    stride = got[0].size // 2  # caches here have batch size 2; the pushes move batch 0 into batch 0
    k = 0
    while k < layers and all(np.array_equal(got[k * tpl + j][:stride], data[k * tpl + j][:stride])
                             for j in range(tpl)):
        k += 1
    for t, g in enumerate(got):
        rest = g[stride:] if t < k * tpl else g
        assert (rest == sentinel).all(), f"tensor {t} changed outside the pushed prefix of {k} layers"
    return k


def test_delay_beyond_timeout_raises_llm_timeout(make_cluster: Any) -> None:
    cluster = make_cluster(1, 2)
    local, remote, src, _data, dst = _setup(cluster)
    api = local.api
    local.inject({"kind": "delay", "seconds": 1.0})
    start = time.monotonic()
    with pytest.raises(api.LLMException) as info:
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
    elapsed = time.monotonic() - start
    assert info.value.status_code == api.LLMStatusCode.LLM_TIMEOUT
    assert elapsed < 2 * TIMEOUT_MS / 1000, elapsed
    assert all((t == SENTINEL).all() for t in snapshot(remote, dst))
    # within budget: a short delay per layer succeeds and the bytes land
    local.inject({"kind": "delay", "seconds": 0.05})
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 1), src, 1)
    local.inject({"kind": "clear"})
    stride = dst.cache_desc.size // 2
    got = snapshot(remote, dst)
    assert all(np.array_equal(g[stride:], d[stride:]) for g, d in zip(got, _data, strict=True))


def test_drop_link_times_out_and_writes_nothing(make_cluster: Any) -> None:
    cluster = make_cluster(1, 2)
    local, remote, src, _data, dst = _setup(cluster)
    api = local.api
    local.inject({"kind": "drop_link", "peer": 2})
    start = time.monotonic()
    with pytest.raises(api.LLMException) as info:
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
    assert info.value.status_code == api.LLMStatusCode.LLM_TIMEOUT
    assert time.monotonic() - start < 2 * TIMEOUT_MS / 1000
    assert all((t == SENTINEL).all() for t in snapshot(remote, dst))


def test_drop_link_mid_push_keeps_pushed_prefix(make_cluster: Any) -> None:
    """16 layers, 30 ms each; the link drops after ~5: the push times out, the remote (alive) shows exactly
    the layers sent before the drop and nothing else."""
    cluster = make_cluster(1, 2)
    local, remote, src, data, dst = _setup(cluster, num_tensors=32)
    api = local.api
    local.inject({"kind": "delay", "seconds": 0.03})
    t, box = _push_in_thread(local, api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
    time.sleep(0.16)
    local.inject({"kind": "drop_link", "peer": 2})
    dropped = time.monotonic()
    t.join(10)
    assert not t.is_alive()
    assert isinstance(box["exc"], api.LLMException)
    assert box["exc"].status_code == api.LLMStatusCode.LLM_TIMEOUT
    assert box["end"] - dropped < 2 * TIMEOUT_MS / 1000
    k = _pushed_prefix(snapshot(remote, dst), data, SENTINEL)
    assert 1 <= k < 16, k


def test_kill_remote_mid_push(make_cluster: Any) -> None:
    """Kill the remote after the first layers: the push raises within the timeout, the local source is
    unchanged, the run goes on (a push to another node works); after close the killed process is gone and
    the others are ended or back in the pool."""
    cluster = make_cluster(1, 2, 3, link=((1, 2), (1, 3)), timeout_ms=500)
    local, remote, src, data, dst = _setup(cluster, num_tensors=32)
    api = local.api
    pids = cluster.pids()
    local.inject({"kind": "delay", "seconds": 0.03})
    t, box = _push_in_thread(local, api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
    time.sleep(0.16)
    remote.inject({"kind": "kill_node"})
    killed = time.monotonic()
    assert process_gone(remote.pid)
    t.join(10)
    assert not t.is_alive()
    assert isinstance(box["exc"], api.LLMException), box["exc"]
    assert box["end"] - killed < 0.5 + 0.25
    assert all(np.array_equal(a, b) for a, b in zip(snapshot(local, src), data, strict=True))
    with pytest.raises(api.LLMException):  # the parent's proxy of the dead node
        remote.read_tensor(dst, 0)
    with pytest.raises(api.LLMException):
        remote.cache_manager.allocate_cache(_desc(api))
    with pytest.raises(api.LLMException) as info:  # later pushes into it fail at once
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
    assert info.value.status_code == api.LLMStatusCode.LLM_NOT_YET_LINK
    local.inject({"kind": "clear"})
    third = cluster.node(3)
    dst3 = third.cache_manager.allocate_cache(_desc(api, 32))
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(3, dst3.cache_id, 1), src, 1)
    stride = dst3.cache_desc.size // 2
    assert all(np.array_equal(g[stride:], d[stride:]) for g, d in zip(snapshot(third, dst3), data, strict=True))
    cluster.close()
    assert process_gone(pids[1])
    assert all(process_gone(p) or p in _idle_pids() for p in pids)


def test_deallocation_under_push_revokes_it(make_cluster: Any) -> None:
    """The remote unregisters the destination while a push is writing it: once unregister_cache returns,
    no further byte lands (the pin is revoked), and the push reports LLM_KV_CACHE_NOT_EXIST."""
    cluster = make_cluster(1, 2)
    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    src = local.cache_manager.allocate_cache(_desc(api, 32))
    data = fill_random(local, src, seed=9)
    dst, addrs = guarded_cache(remote, _desc(api, 32))
    fill_sentinel(remote, dst)
    nbytes = dst.cache_desc.size
    local.inject({"kind": "delay", "seconds": 0.03})
    t, box = _push_in_thread(local, api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
    time.sleep(0.16)
    remote.cache_manager.unregister_cache(dst.cache_id)
    after = [remote.read_memory(a, nbytes) for a in addrs]
    t.join(10)
    assert isinstance(box["exc"], api.LLMException)
    assert box["exc"].status_code == api.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
    time.sleep(0.1)
    final = [remote.read_memory(a, nbytes) for a in addrs]
    assert all(np.array_equal(a, b) for a, b in zip(after, final, strict=True)), "written after unregister"
    k = _pushed_prefix(final, data, SENTINEL)
    assert 1 <= k < 16, k
    assert guards_intact(remote, addrs, nbytes)


def test_dead_local_node_and_close(make_cluster: Any) -> None:
    cluster = make_cluster(1, 2)
    local = cluster.node(1)
    api = local.api
    pids = cluster.pids()
    local.inject({"kind": "kill_node"})
    with pytest.raises(api.LLMException):
        local.cache_manager.allocate_cache(_desc(api))
    with pytest.raises(RuntimeError):
        cluster.link(1, 2)
    with pytest.raises(RuntimeError):
        cluster.link(2, 1)
    cluster.close()
    cluster.close()
    assert process_gone(pids[0])
    assert all(process_gone(p) or p in _idle_pids() for p in pids)


def test_node_processes_exit_with_their_parent() -> None:
    """The parent dies without closing its cluster: the node processes notice and exit (watchdog)."""
    script = textwrap.dedent(f"""
        import os, sys
        from reference_impl.multiprocess.backend import backend
        if __name__ == "__main__":
            c = backend.open_cluster({specs(1, 2)!r})
            c.link(1, 2)
            print(" ".join(map(str, c.pids())), flush=True)
            os._exit(0)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2, out.stderr
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not all(process_gone(p) for p in pids):
        time.sleep(0.05)
    assert all(process_gone(p) for p in pids)

"""Pooled node processes: reuse across clusters, honest isolation, replacement of what cannot be reused."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from nodehost.backend import NodeHostBackend
from nodehost.process import NodePool
from reference_impl.multiprocess.backend import MODULE
from tests.helpers.data import fill_random, guarded_cache, snapshot
from tests.helpers.nodes import relink, specs
from tests.helpers.processes import process_gone


@pytest.fixture
def pool() -> Iterator[NodePool]:
    own = NodePool(max_idle=4)
    try:
        yield own
    finally:
        own.close()


def reference_nixl(pool: NodePool | bool = True) -> NodeHostBackend:
    """The multi-process reference (the node host over the reference behind the vendor API) on ``pool``."""
    return NodeHostBackend(MODULE, name="reference-nixl", product="emulator", pool=pool)


def _desc(api: Any, placement: str = "DEVICE", num_tensors: int = 4, shape: tuple[int, ...] = (2, 32)) -> Any:
    return api.CacheDesc(num_tensors, list(shape), api.DataType.DT_UINT8, getattr(api.Placement, placement))


def _status(exc_info: Any) -> Any:
    return exc_info.value.status_code


def test_processes_are_reused_and_isolated(pool: NodePool) -> None:
    """Everything the first cluster leaves behind (caches, links, options, registered memory, injected faults,
    cache handles, node handles) is gone when the same processes serve the next cluster."""
    backend = reference_nixl(pool=pool)
    # a budget the link's data path comes up within on a loaded machine (its first push waits for it, within the
    # push's timeout: 200 ms ran out in a CI simulation), and still not the second cluster's
    first = backend.open_cluster(specs(1, 2, timeout_ms=1000))
    api = first.node(1).api
    local, remote = first.node(1), first.node(2)
    first.link(1, 2)
    src = local.cache_manager.allocate_cache(_desc(api))
    data = fill_random(local, src, seed=11)
    dst, raw_addrs = guarded_cache(remote, _desc(api, "HOST"))
    pooled = remote.cache_manager.allocate_cache(_desc(api, "HOST"))
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
    relink(first)  # the table sync makes `pooled` visible too
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, pooled.cache_id, 0), src)
    local.inject({"kind": "delay", "seconds": 5.0})
    local.inject({"kind": "drop_link", "peer": 2})
    used = first.node(2).stats()
    # the raw memory is the node host's shared buffers, each registered whole while it lives (not per cluster)
    assert used["cluster_registered"] == 0 and used["registered"] >= 4 and used["server_conns"] == 1, used
    agents = local.stats()["remote_agents"]
    assert list(agents) == [remote.stats()["agent"]], agents
    pids = first.pids()
    first.close()
    assert sorted(pool.idle_pids()) == sorted(pids)

    # the second cluster: same ids, other options (no host pool, a longer timeout), same processes
    opts = {"llm.EnableCacheManager": "1", "llm.EnableRemoteCacheAccessible": "1",
            "llm.MemPoolConfig": json.dumps({"memory_size": 1 << 22, "page_shift": 16}),
            "llm.SyncKvCacheWaitTime": "2000"}
    second = backend.open_cluster([{"cluster_id": 1, "role": "PROMPT", "options": opts},
                                   {"cluster_id": 2, "role": "DECODER", "options": opts}])
    try:
        assert sorted(second.pids()) == sorted(pids)
        assert pool.reused >= 2
        local2, remote2 = second.node(1), second.node(2)
        for node in (local2, remote2):
            st = node.stats()
            # nothing is registered for a cluster: only the node's own memory (its scratch buffer, the pool arenas
            # and the shared buffers it reuses from cluster to cluster, zeroed); no link and no connection of the
            # first cluster's survives (the NIXL agents loaded for them do: transfers go only over a link)
            assert st["cluster_registered"] == 0, st
            assert st["links"] == [] and st["server_conns"] == 0, st
            assert st["pins"] is False and st["resets"] >= 1, st
        src2 = local2.cache_manager.allocate_cache(_desc(api))
        # links do not survive: not linked in this cluster
        with pytest.raises(api.LLMException) as info:
            local2.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src2)
        assert _status(info) == api.LLMStatusCode.LLM_NOT_YET_LINK
        second.link(1, 2)
        # the link loaded the server's current metadata (registrations of this cluster, not the last one's)
        known = local2.stats()["remote_agents"][remote2.stats()["agent"]]
        assert known == remote2.stats()["generation"]
        # caches do not survive: the first cluster's destinations are unknown
        for old in (dst, pooled):
            with pytest.raises(api.LLMException) as info:
                local2.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, old.cache_id, 0), src2)
            assert _status(info) == api.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
        # options do not survive: this cluster configured no host pool
        with pytest.raises(api.LLMException):
            remote2.cache_manager.allocate_cache(_desc(api, "HOST"))
        # raw memory does not survive: the old buffers, if they serve again, are zeroed (and unreachable: no link)
        assert raw_addrs
        # faults do not survive: no delay, no dropped link, the push completes well within the timeout
        dst2 = remote2.cache_manager.allocate_cache(_desc(api))
        relink(second)
        data2 = fill_random(local2, src2, seed=12)
        t0 = time.monotonic()
        local2.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst2.cache_id, 1), src2, 1)
        assert time.monotonic() - t0 < 1.0
        stride = dst2.cache_desc.size // 2
        got = snapshot(remote2, dst2)
        assert all(np.array_equal(g[stride:], d[stride:]) for g, d in zip(got, data2, strict=True))
        # handles of the first cluster reach nothing now: its nodes, and its caches
        with pytest.raises(api.LLMException):
            local.cache_manager.allocate_cache(_desc(api))
        with pytest.raises(api.LLMException):
            remote.read_tensor(dst, 0)
        local.inject({"kind": "kill_node"})  # an old handle cannot kill the process the new cluster holds
        assert local2.alive and not process_gone(local2.pid)
        with pytest.raises(api.LLMException) as info:  # an old cache passed in is not a cache of this node
            local2.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst2.cache_id, 0), src)
        assert _status(info) == api.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
        assert all(np.array_equal(g[stride:], d[stride:]) for g, d in zip(snapshot(remote2, dst2), data2,
                                                                          strict=True))
        assert data  # the first cluster's bytes were never readable here: nothing to compare them with
    finally:
        second.close()


def test_killed_process_is_never_reused(pool: NodePool) -> None:
    backend = reference_nixl(pool=pool)
    first = backend.open_cluster(specs(1, 2))
    killed = first.node(2).pid
    kept = first.node(1).pid
    first.node(2).inject({"kind": "kill_node"})
    first.close()
    assert process_gone(killed)
    assert pool.idle_pids() == [kept]
    second = backend.open_cluster(specs(1, 2))
    try:
        assert killed not in second.pids() and kept in second.pids()
        second.link(1, 2)
    finally:
        second.close()


def test_a_cluster_opened_while_the_resets_run_takes_those_processes_after_their_reset() -> None:
    """The pool leases processes whose reset has not answered yet; each node runs the reset before the new
    cluster's init, and the new cluster starts from nothing of the old one."""
    own = NodePool(max_idle=4)
    try:
        backend = reference_nixl(pool=own)
        first = backend.open_cluster(specs(1, 2))
        api = first.node(1).api
        first.link(1, 2)
        first.node(2).cache_manager.allocate_cache(_desc(api))
        pids = first.pids()
        for pid in pids:  # held still, so the resets are certainly under way when the next cluster leases
            os.kill(pid, signal.SIGSTOP)
        first.close()
        go_on = threading.Timer(0.3, lambda: [os.kill(pid, signal.SIGCONT) for pid in pids])
        go_on.start()
        second = backend.open_cluster(specs(1, 2))
        go_on.join()
        try:
            assert sorted(second.pids()) == sorted(pids) and own.reused == 2
            for cid in (1, 2):
                st = second.node(cid).stats()
                assert st["resets"] == 1 and st["cluster_registered"] == 0 and st["links"] == [], st
            second.link(1, 2)
        finally:
            second.close()
    finally:
        own.close()


@pytest.mark.parametrize("then", ["settled", "leased at once"])
def test_a_reset_that_does_not_answer_replaces_the_process(pool: NodePool, then: str) -> None:
    """A node that does not answer its reset in time (stopped here) is ended, never reused. Settled, the pool keeps
    only the other; leased while the reset is under way, the new cluster gets a fresh process in its place and
    works."""
    backend = reference_nixl(pool=pool)
    first = backend.open_cluster(specs(1, 2))
    stuck, fine = first.node(1).pid, first.node(2).pid
    pool.reset_timeout_s = 1.0
    os.kill(stuck, signal.SIGSTOP)
    first.close()
    if then == "settled":
        assert pool.idle_pids() == [fine]
        assert process_gone(stuck)
        return
    second = backend.open_cluster(specs(1, 2))
    try:
        assert stuck not in second.pids() and fine in second.pids()
        assert process_gone(stuck)
        second.link(1, 2)
    finally:
        second.close()


def test_pool_off_ends_processes_with_their_cluster() -> None:
    backend = reference_nixl(pool=False)
    cluster = backend.open_cluster(specs(1, 2))
    pids = cluster.pids()
    cluster.close()
    assert all(process_gone(p) for p in pids)


def test_pool_setting_zero_turns_pooling_off(monkeypatch: Any) -> None:
    monkeypatch.setenv("NODEHOST_POOL", "0")
    assert reference_nixl().pool() is None
    monkeypatch.setenv("NODEHOST_POOL", "3")
    pool = reference_nixl().pool()
    assert pool is not None and pool.max_idle == 3


def test_a_reused_pool_arena_holds_nothing_of_an_earlier_cluster(pool: NodePool) -> None:
    """A node's pool arenas serve again two clusters later (never the next one: a WRITE of the old cluster may still
    be in flight), zeroed where the old cluster wrote, and stay registered with NIXL all along."""
    backend = reference_nixl(pool=pool)
    registered: list[int] = []
    for i in range(3):
        cluster = backend.open_cluster(specs(1))  # one node: the pool's one process every time
        try:
            node = cluster.node(1)
            api = node.api
            cache = node.cache_manager.allocate_cache(_desc(api))
            if i == 0:
                fill_random(node, cache, seed=3)
            else:
                assert all(not snapshot(node, cache)[t].any() for t in range(4)), f"cluster {i} sees old bytes"
            registered.append(node.stats()["registered"])
        finally:
            cluster.close()
    # the scratch buffer and two pools' arenas; two more for the second cluster; none new for the third
    assert registered == [3, 5, 5], registered


def test_a_later_clusters_link_keeps_the_peer_loaded_until_the_server_deregisters_memory(pool: NodePool) -> None:
    """A link between two processes an earlier cluster linked keeps the NIXL agent that link loaded (its endpoint
    made, no warm-up) while the server's registrations are the same or only grew; once the server deregistered
    anything, the agent is loaded afresh (a merged one would keep the stale region). Every push lands either way."""
    from nodehost.memory import KEPT_PER_SIZE

    backend = reference_nixl(pool=pool)

    def cycle(raw_buffers: int = 0) -> tuple[int, int, list[int]]:
        cluster = backend.open_cluster(specs(1, 2))
        try:
            client, server = cluster.node(1), cluster.node(2)
            api = client.api
            for _ in range(raw_buffers):  # one shared buffer each, registered whole while it lives
                guarded_cache(server, _desc(api, "HOST", num_tensors=1))
            cluster.link(1, 2)
            src = client.cache_manager.allocate_cache(_desc(api))
            dst = server.cache_manager.allocate_cache(_desc(api))
            data = fill_random(client, src, seed=raw_buffers)
            # the link's data path is up (stats waits for it): the push below is not its set-up race, which a loaded
            # machine (CI's parallel group) lost once within the push's 300 ms
            client.stats()
            client.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
            half = dst.cache_desc.size // 2
            assert all(np.array_equal(g[:half], d[:half]) for g, d in zip(snapshot(server, dst), data, strict=True))
            return client.stats()["peer_loads"], server.stats()["removals"], sorted(cluster.pids())
        finally:
            cluster.close()

    loads, removals, pids = cycle()
    assert cycle() == (loads, removals, pids)  # nothing registered since: the agent stays as it was loaded
    assert cycle(KEPT_PER_SIZE + 2) == (loads, removals, pids)  # registered more: refreshed in place
    assert cycle() == (loads, removals, pids)  # its buffers cool for one reset
    later = cycle()  # the buffers beyond those kept are freed, and deregistered first: a removal
    assert later[1] == removals + 2 and later[0] == loads + 1 and later[2] == pids, (loads, removals, later)

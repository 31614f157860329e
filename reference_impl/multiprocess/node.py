"""What a process of the multi-process reference holds: one reference LLMDataDist + :class:`MultiprocessCacheManager`
+ a NIXL agent + the control plane to the other nodes.

The process is a node host's node process (``nodehost``: its pipe, its request loop, its pool); the reference
behind the vendor API (:mod:`.datadist`) makes one :class:`NodeRuntime` per process, on the first ``init``. A
process serves one cluster at a time and may serve many in turn (the node host's pool): ``finalize`` takes it back
to the state it had right after start-up (:meth:`NodeRuntime.reset`), keeping only what is expensive to make and
holds nothing of a cluster: the NIXL agent with its scratch buffer, and the control listener.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import uuid
from typing import Any

import numpy as np

from nodehost import shared
from nodehost.serve import ActiveRequests

from ..backend import ReferenceNode
from ..enums import LLMRole
from ..llm_datadist import LLMDataDist
from ..status import LLMStatusCode
from .cache_manager import MultiprocessCacheManager
from .control import ControlServer, PeerLink, PinTable, ServerConn
from .real_memory import RealMemoryLLMDataDist
from .transport import NixlTransport, precise_sleeps

ACTIVE_POLL_S = 20e-6
IDLE_POLL_S = 0.05
#: how long a node progresses actively after a link handshake at most (the client's warm-up WRITE follows at once;
#: the client says when it has completed: ``warmed``)
LINK_PROGRESS_S = 0.1
#: how long a link's data path may take to come up (NIXL metadata loaded, the first WRITE made)
LINK_SETUP_S = 10.0
#: free arenas of one size a node keeps between clusters
KEPT_PER_SIZE = 2
#: how long a reset waits for requests of the previous cluster still running (a push stops soon after its
#: engine is finalized; one that does not means the process is not in a state to be reused)
RESET_DRAIN_S = 5.0


class Arenas:
    """The memory of the node's pools, reused from cluster to cluster and registered with NIXL once.

    A cluster's pools take their arenas here (``take``: a zeroed buffer of the size asked, registered); a reset hands
    the finalized engine's arenas back (``retire``), and they serve again one reset later, zeroed where they were
    written, so a WRITE of the old cluster still in flight never lands in the next cluster's memory. At most
    :data:`KEPT_PER_SIZE` free arenas of one size are kept (the rest are deregistered and freed). Making and
    registering a 64 MiB arena cost ~2 ms per node and cluster; taking one costs nothing.
    """

    def __init__(self, transport: NixlTransport) -> None:
        self._transport = transport
        self._lock = threading.Lock()
        self._free: dict[int, list[np.ndarray]] = {}
        self._cooling: list[tuple[np.ndarray, int]] = []  # the last cluster's: (arena, bytes written at most)

    def take(self, nbytes: int) -> np.ndarray:
        with self._lock:
            free = self._free.get(nbytes)
            if free:
                return free.pop()
        buf = shared.zeros(nbytes)  # the node host's parent reads the pools' bytes without a round trip
        self._transport.register(buf.ctypes.data, buf.size, keep=True)
        return buf

    def retire(self, used: list[tuple[np.ndarray, int]]) -> None:
        """The finalized engine's arenas (with the bytes its pool wrote at most); the previous ones come back."""
        with self._lock:
            ready, self._cooling = self._cooling, list(used)
            for buf, written in ready:
                buf[:written] = 0
                free = self._free.setdefault(buf.size, [])
                if len(free) < KEPT_PER_SIZE:
                    free.append(buf)
                else:
                    self._transport.release_kept(buf.ctypes.data, buf.size)
                    shared.free(buf)


class NodeRuntime:
    """Everything a node process holds beyond the node host's request loop."""

    def __init__(self, authkey: bytes, listen: tuple[str, int] | None = None) -> None:
        self.authkey = authkey
        precise_sleeps()
        self.transport = NixlTransport(f"rimp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        self.arenas = Arenas(self.transport)
        heap = shared.heap()
        if heap is not None:  # a shared buffer registered whole is deregistered before it is freed
            heap.on_free(self.transport.release_kept)
        self.pins = PinTable()
        self.links: dict[int, PeerLink] = {}
        #: connections of links of earlier clusters, by the server's address: a link to the same process reuses
        #: one (no new connection to authenticate; the hello starts the link afresh on both sides)
        self._parked: dict[tuple[str, int], PeerLink] = {}
        self._links_lock = threading.Lock()
        self.datadist: LLMDataDist | None = None
        self._previous: Any = None  # the engine of the node before the last reset (see reset)
        self.node: ReferenceNode | None = None
        self.control = ControlServer(authkey, self._on_control, lambda sc: self.pins.release_owner(sc), listen)
        #: pushes running now (the reset waits for the previous cluster's to end)
        self.pushes = ActiveRequests()
        #: links whose data path is coming up on the link worker (the reset waits for them too)
        self._setups = ActiveRequests()
        self._link_jobs: queue.SimpleQueue[tuple[PeerLink, bytes, int, int, int, str]] = queue.SimpleQueue()
        threading.Thread(target=self._link_worker, name="link-setup", daemon=True).start()
        self.resets = 0
        self._busy_until = 0.0  # progress like during a push until then (a link's warm-up WRITE)
        threading.Thread(target=self._notif_loop, name="nixl-notifs", daemon=True).start()

    def listen_on(self, address: tuple[str, int]) -> None:
        """Serve the control plane on ``address`` from now on (links made earlier keep their connections)."""
        if tuple(self.control.address) != tuple(address):
            self.control.close()
            self.control = ControlServer(self.authkey, self._on_control, lambda sc: self.pins.release_owner(sc),
                                         address)

    def stats(self) -> dict[str, Any]:
        """What this process holds (once the links' data paths under way are up); the pool's isolation self-test
        reads it after a reset."""
        self._setups.wait_idle(LINK_SETUP_S, keep=0)
        return {"pid": os.getpid(), "agent": self.transport.name, "generation": self.transport.generation,
                "notifs": self.transport.notifs_received, "links": sorted(self.links),
                "initialized": self.datadist is not None, "registered": self.transport.registered_regions(),
                "cluster_registered": self.transport.cluster_regions(),
                "remote_agents": self.transport.peer_generations(), "server_conns": self.control.connection_count(),
                "pins": self.pins.active, "resets": self.resets, "removals": self.transport.removals,
                "peer_loads": self.transport.peer_loads}

    def reset(self) -> None:
        """Back to the state right after start-up, so the process can serve another cluster.

        In this order: finalize the engine (pushes still running stop at their next layer, and the caches,
        pools, options and injected faults go with it); wait for the previous cluster's requests to end;
        drop the links this node made (control connections and the remote agents loaded for them) and the
        connections other nodes made to it (their pins go too); deregister every memory segment but the
        scratch buffer and remove the remote agents; forget the cache handles. Anything that does not finish raises, and the parent
        then replaces the process instead of reusing it.
        """
        datadist, self.datadist, self.node = self.datadist, None, None
        # The finalized node's memory (its engine: pools, and the views of every cache) stays allocated and out of
        # use until the next reset: a peer of the old cluster may be resetting at this very moment with a WRITE
        # still in flight into it (a cma write does not care that the memory was deregistered), and memory given
        # out again would be the next cluster's.
        engine = datadist.engine if datadist is not None and datadist.is_initialized else None
        self._previous = engine
        pools = [p for p in (engine.device_pool, engine.host_pool) if p is not None] if engine is not None else []
        self.arenas.retire([(p.segment.data, p.high_water) for p in pools])
        if datadist is not None:
            datadist.finalize()
        if not self.pushes.wait_idle(RESET_DRAIN_S, keep=0):
            raise RuntimeError(f"{self.pushes.count} push(es) of the previous cluster still running")
        if not self._setups.wait_idle(LINK_SETUP_S, keep=0):
            raise RuntimeError("a link's data path of the previous cluster is still coming up")
        with self._links_lock:
            links, self.links = self.links, {}
            for peer in links.values():  # the connections stay, authenticated, for the next cluster's links
                old = self._parked.pop(peer.address, None)
                if old is not None:
                    old.close()
                if peer.broken.is_set():
                    peer.close()
                    self.transport.drop_peer(peer.agent_name)  # its process may be gone: no endpoint kept to it
                else:
                    self._parked[peer.address] = peer
        self.control.end_links()
        old_pins, self.pins = self.pins, PinTable(self.pins.wake)
        old_pins.release_all()
        self.transport.reset()
        self.resets += 1

    def _datadist(self) -> LLMDataDist:
        if self.datadist is None:
            raise RuntimeError("node is not initialized")
        return self.datadist

    def init(self, role: int, cluster_id: int, options: dict[str, str],
             cache_manager_cls: type[MultiprocessCacheManager] = MultiprocessCacheManager) -> bool:
        """Build this node's LLMDataDist, its memory at real addresses of this process (each segment registered
        with NIXL as it is made), so that others can read and write it by address (the node host does, through
        the vendor API)."""
        datadist: LLMDataDist = RealMemoryLLMDataDist(LLMRole(role), cluster_id, cache_manager_cls=cache_manager_cls,
                                                      on_segment=self._register, arena=self.arenas.take)
        datadist.init(dict(options))
        enabled = True
        try:
            cm = datadist.cache_manager
        except Exception:  # noqa: BLE001 - cache manager disabled by the options
            enabled = False
        else:
            assert isinstance(cm, MultiprocessCacheManager)
            cm.runtime = self
        self.datadist = datadist
        self.node = ReferenceNode(datadist)
        return enabled

    def _register(self, addr: int, nbytes: int) -> None:
        """Register a segment with NIXL: the whole shared buffer that holds it, where one does (memory the node
        host allocated, adopted by ``register_cache`` a tensor at a time: one registration for all of a cache's
        tensors, not one each, and no new metadata for the next cache in the same buffer)."""
        h = shared.heap()
        whole = h.containing(addr, nbytes) if h is not None else None
        if whole is not None:  # registered while the buffer lives: the heap's free hook deregisters it
            self.transport.register(*whole, keep=True)
        else:
            self.transport.register(addr, nbytes)

    # ---- links (this node is the client) --------------------------------------------------------------
    def link(self, server_id: int, address: tuple[str, int]) -> LLMStatusCode:
        datadist = self._datadist()
        if not datadist.engine.alive:
            return LLMStatusCode.LLM_LINK_FAILED
        with self._links_lock:
            old = self.links.get(server_id)
            if old is not None and not old.broken.is_set():
                return LLMStatusCode.LLM_ALREADY_LINK
            where = (str(address[0]), int(address[1]))
            peer = self._parked.pop(where, None)
            try:
                if peer is None or peer.broken.is_set():
                    peer = PeerLink(server_id, where, self.authkey)
                else:
                    peer.begin(server_id)
                remote_id, metadata, generation, removals, scratch, agent = peer.request(
                    "hello", datadist.cluster_id, timeout=10.0)
            except Exception:  # noqa: BLE001 - an unreachable peer is a failed link
                if peer is not None:
                    peer.close()
                return LLMStatusCode.LLM_LINK_FAILED
            if remote_id != server_id:
                peer.close()
                return LLMStatusCode.LLM_LINK_FAILED
            self.links[server_id] = peer
        # the data path (the server's NIXL metadata loaded, the UCX endpoint made by a first tiny WRITE) comes up on
        # the link worker while the caller goes on; a push over the link waits for it (PeerLink.data_path)
        self._setups.started()
        self._link_jobs.put((peer, metadata, generation, removals, scratch, agent))
        return LLMStatusCode.LLM_SUCCESS

    def _link_worker(self) -> None:
        while True:
            peer, metadata, generation, removals, scratch, agent = self._link_jobs.get()
            try:
                # a peer an earlier cluster's link loaded keeps its endpoint: its metadata is refreshed where it
                # registered more since, loaded afresh (and its endpoint made again) where it deregistered anything
                loaded = self.transport.peer_state(agent)
                if loaded is not None and loaded[1] == removals:
                    if loaded[0] != generation:
                        self.transport.load_peer(metadata, generation, removals)
                    peer.agent_name = agent
                else:
                    self.transport.drop_peer(agent)
                    peer.agent_name = self.transport.load_peer(metadata, generation, removals)
                    self.transport.warm_up(peer.agent_name, scratch)
                peer.send("warmed")  # the server may stop progressing actively now
            except Exception as exc:  # noqa: BLE001 - no data path: the link is broken
                peer.data_path_error = f"{type(exc).__name__}: {exc}"
                peer.close()
            finally:
                peer.data_path.set()
                self._setups.ended()

    def unlink(self, server_id: int) -> LLMStatusCode:
        with self._links_lock:
            peer = self.links.pop(server_id, None)
        if peer is None:
            return LLMStatusCode.LLM_NOT_YET_LINK
        peer.data_path.wait(LINK_SETUP_S)  # its agent is loaded (or failed to be) before it is dropped
        peer.close()
        self.transport.drop_peer(peer.agent_name)
        return LLMStatusCode.LLM_SUCCESS

    # ---- benchmark baseline ---------------------------------------------------------------------------
    def bench_raw(self, server_id: int, src: Any, dst_cache_id: int, tpl: int, repeats: int, per_layer: bool,
                  notify: bool) -> list[float]:
        """Raw NIXL WRITEs of batch 0 of every tensor of ``src`` into the remote cache (no push_cache checks):
        one request with all descriptors, or (``per_layer``) one request of ``tpl`` descriptors per layer.
        Returns the seconds of each repeat, measured in this process."""
        peer = self.links[server_id]
        peer.data_path.wait(LINK_SETUP_S)
        entry = self._datadist().cache_manager.entry_of(src)
        assert entry is not None
        info = peer.request("open", dst_cache_id, 10.0, self.transport.peer_generation(peer.agent_name),
                            timeout=10.0)
        if info.get("metadata") is not None:
            self.transport.load_peer(info["metadata"], info["generation"])
        n = entry.stride
        ldesc = [(v.ctypes.data, n, 0) for v in entry.views]
        rdesc = [(a, n, 0) for a in info["addrs"][:len(ldesc)]]
        handles = self.transport.prep(peer.agent_name, ldesc, rdesc)
        groups = ([list(range(i, i + tpl)) for i in range(0, len(ldesc), tpl)] if per_layer
                  else [list(range(len(ldesc)))])
        notif = b"bench" if notify else b""
        times = []
        try:
            for _ in range(repeats):
                t0 = time.perf_counter()
                for idx in groups:
                    h, state = self.transport.post(handles[0], idx, handles[1], idx, notif)
                    self.transport.wait(h, state, time.monotonic() + 30.0, lambda: None)
                times.append(time.perf_counter() - t0)
        finally:
            self.transport.release_prep(handles)
            peer.send("close", info["pin"])
        return times

    # ---- control requests (this node is the server) ----------------------------------------------------
    def _on_control(self, sc: ServerConn, op: str, args: tuple[Any, ...]) -> Any:
        if op == "hello":  # a link starts (on a new connection, or on one an earlier cluster's link left)
            sc.client_id, sc.table, sc.linked = args[0], None, True
            self._busy_until = time.monotonic() + LINK_PROGRESS_S
            self.pins.wake.set()
            metadata, generation = self.transport.metadata()
            cluster_id = self.datadist.cluster_id if self.datadist else None
            return (cluster_id, metadata, generation, self.transport.removals, self.transport.scratch.ctypes.data,
                    self.transport.name)
        if op == "open":
            return self._open(sc, *args)
        if op == "close":
            self.pins.release(args[0])
            return None
        if op == "warmed":  # the link's warm-up WRITE completed: no more active progress for it
            self._busy_until = 0.0
            return None
        raise ValueError(f"unknown control request {op!r}")

    def _open(self, sc: ServerConn, cache_id: int, timeout_s: float, known_generation: int) -> dict[str, Any] | None:
        datadist = self.datadist
        if datadist is None or not datadist.is_initialized or not sc.linked:  # no link of this cluster's
            return None
        engine = datadist.engine
        stale = bool(getattr(datadist._cache_manager, "stale_remote_table", False))
        with self.pins.lock:
            if sc.table is None or sc.table.version == 0:  # version 0: nothing published yet, sync again
                sc.table = engine.snapshot_table()
            if stale:
                # vendor mode: the table synced at the link's first push, and nothing else (facts §1.3 N8): a
                # cache deallocated since is still found, and its old memory written; no pin protects it
                entry = sc.table.find(cache_id)
                if entry is None:
                    return None
                pin = 0
            else:
                # the reference's remote lookup: by id, or (cache_id <= 0) the key with req_id 0 and model_id 0
                entry = engine.lookup(cache_id) if cache_id > 0 else engine.lookup_by_key(0, 0)
                if (entry is None or not entry.alive or self.pins.dying(entry.cache_id)
                        or entry.cache_id not in sc.table.entries):
                    return None
                pin = self.pins.add(entry.cache_id, sc, timeout_s).pin_id if entry.remote_accessible else 0
            space = engine.memory.space(entry.placement)
            ends = []
            for v in entry.views:
                seg = space.find(v.ctypes.data, 0) if hasattr(space, "adopt") else None
                ends.append(seg.end if seg is not None else v.ctypes.data + v.size)
            info: dict[str, Any] = {
                "cache_id": entry.cache_id, "placement": int(entry.placement), "num_tensors": entry.num_tensors,
                "shape": entry.shape, "tensor_nbytes": entry.tensor_nbytes, "batch_size": entry.batch_size,
                "stride": entry.stride, "is_blocks": entry.is_blocks, "remote_accessible": entry.remote_accessible,
                "addrs": [v.ctypes.data for v in entry.views], "pin": pin, "ends": ends,
            }
        if known_generation != self.transport.generation:
            info["metadata"], info["generation"] = self.transport.metadata()
        return info

    def _notif_loop(self) -> None:
        """Progress for pushes into this node, and draining of their notifications (one per layer).

        Agents run without NIXL's progress thread (it spins a core). A WRITE with a notification completes
        at the sender only once the target's worker has progressed, so while a push holds a pin on one of
        this node's caches the loop progresses every ~50 us; otherwise it idles (woken by the next pin). A link
        handshake counts as a push until the client says its warm-up WRITE has completed (``_busy_until``): that
        WRITE needs the same progress, or it waits for the next idle tick (~40 ms measured per link with pooled
        processes).
        """
        while True:
            if self.pins.active or time.monotonic() < self._busy_until:
                time.sleep(ACTIVE_POLL_S)
            else:
                self.pins.wake.wait(IDLE_POLL_S)
                self.pins.wake.clear()
            try:
                self.transport.drain_notifs()
            except Exception:  # noqa: BLE001 - keep draining
                pass

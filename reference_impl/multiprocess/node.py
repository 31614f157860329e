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
import uuid
from typing import Any

import numpy as np

from nodehost import shared
from nodehost.serve import ActiveRequests

from ..backend import ReferenceNode
from ..enums import LLMRole
from ..llm_datadist import LLMDataDist
from .bench import RawBench
from .cache_manager import MultiprocessCacheManager
from .control import ControlServer, PeerLink, PinTable
from .links import LINK_SETUP_S, LinkClient
from .real_memory import RealMemoryLLMDataDist
from .serving import ControlServing
from .transport import NixlTransport, precise_sleeps

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


class NodeRuntime(LinkClient, RawBench, ControlServing):
    """Everything a node process holds beyond the node host's request loop: its state and lifecycle here, the
    links it makes (:mod:`.links`), the requests it serves (:mod:`.serving`) and the raw benchmark (:mod:`.bench`)."""

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

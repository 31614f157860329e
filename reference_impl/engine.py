"""The "native" side of one node: memory, pools, the cache table, cache keys and injected faults."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .enums import LLMRole, Placement
from .memory import NodeMemory
from .options import EngineOptions
from .pool import MemoryPool
from .status import LLMException, LLMStatusCode

MAX_SHAPE_RANK = 32
MAX_SLOT_VIEWS = 64  # cached (offset, nbytes) slot view lists per cache entry


def _invalid(msg: str) -> LLMException:
    return LLMException(msg, status_code=LLMStatusCode.LLM_PARAM_INVALID)


@dataclass(slots=True, eq=False)
class CacheEntry:
    """A cache as the engine sees it. ``views[t]`` is tensor t's bytes (a uint8 view of node memory)."""

    cache_id: int
    placement: Placement
    num_tensors: int
    shape: tuple[int, ...]
    tensor_nbytes: int
    batch_size: int  # shape[0] for contiguous caches, 1 for blocks caches
    stride: int  # tensor_nbytes // shape[0]: bytes of one batch slot (or block)
    is_blocks: bool
    is_registered: bool
    remote_accessible: bool
    tensor_addrs: list[int]
    views: list[np.ndarray]
    pool: MemoryPool | None = None
    pool_addr: int | None = None
    alive: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: (offset, nbytes) -> every tensor's view of those bytes (one batch slot), kept for later pushes
    slots: dict[tuple[int, int], list[np.ndarray]] = field(default_factory=dict, repr=False)

    def slot_views(self, offset: int, nbytes: int) -> list[np.ndarray]:
        """``views[t][offset:offset + nbytes]`` for every tensor t, sliced once per (offset, nbytes)."""
        key = (offset, nbytes)
        got = self.slots.get(key)
        if got is None:
            if len(self.slots) >= MAX_SLOT_VIEWS:
                self.slots.clear()
            got = self.slots[key] = [v[offset:offset + nbytes] for v in self.views]
        return got


@dataclass(slots=True, eq=False)
class RemoteTable:
    """A node's cache table as a client synced it over a link (facts §1.3 N8, "Link-time check").

    ``version`` is the server's table version at the sync: 0 means the server had never published a cache, and
    such a table is synced again at the next transfer attempt. ``entries`` keeps the CacheEntry objects of that
    moment, so a cache deallocated later is still found here (``alive`` False); ``keys`` maps (req_id, model_id)
    of the cache keys bound then to their cache id (the key fallback of a cache_id <= 0).
    """

    version: int
    entries: dict[int, CacheEntry]
    keys: dict[tuple[int, int], int]
    #: model_id of the BlocksCacheKey bound then -> its blocks cache id (push_blocks / pull_blocks)
    blocks_keys: dict[int, int] = field(default_factory=dict)

    def find(self, cache_id: int) -> CacheEntry | None:
        """The synced entry for a cache id; a cache_id <= 0 looks up the key (req_id 0, model_id 0)."""
        if cache_id <= 0:
            found = self.keys.get((0, 0))
            if found is None:
                return None
            cache_id = found
        return self.entries.get(cache_id)

    def find_blocks(self, model_id: int) -> CacheEntry | None:
        """The synced blocks cache of a BlocksCacheKey's model_id."""
        cache_id = self.blocks_keys.get(model_id)
        return None if cache_id is None else self.entries.get(cache_id)


class Network(Protocol):
    """What a node does with the network it is attached to (a ``Fabric``): link, unlink, leave, and find the link
    to a server if usable. Typed structurally so that this module does not import the fabric, which holds engines;
    a transfer's steps type the link they get as ``fabric.Link``."""

    def link(self, client: NodeEngine, server_id: int) -> LLMStatusCode: ...

    def unlink(self, client: NodeEngine, server_id: int) -> LLMStatusCode: ...

    def detach(self, engine: NodeEngine) -> None: ...

    def usable_link(self, client: NodeEngine, server_id: int) -> Any: ...


@dataclass(slots=True)
class Faults:
    send_delay_s: float = 0.0
    dropped_peers: set[int] = field(default_factory=set)
    killed: bool = False


class NodeEngine:
    """State of one LLMDataDist node inside a Fabric."""

    def __init__(self, fabric: Network, cluster_id: int, role: LLMRole, slot: int, options: EngineOptions) -> None:
        self.fabric = fabric
        self.cluster_id = cluster_id
        self.role = role
        self.slot = slot
        self.options = options
        self.sync_timeout_s = options.sync_kv_timeout_s
        self.memory = self._make_memory(slot)
        self.device_pool = MemoryPool(self.memory.device, options.mem_pool) if options.mem_pool else None
        self.host_pool = MemoryPool(self.memory.host, options.host_mem_pool) if options.host_mem_pool else None
        self.lock = threading.Lock()
        self.caches: dict[int, CacheEntry] = {}
        self.dead_caches: dict[int, CacheEntry] = {}
        self.keys: dict[tuple[int, int, int], tuple[int, int]] = {}  # (req, model, prefix) -> (cache id, batch)
        self.blocks_keys: dict[int, int] = {}  # BlocksCacheKey model_id -> blocks cache id
        self._next_id = 1
        #: bumped whenever the cache table changes (a cache added or removed); 0 = nothing ever published
        self.table_version = 0
        self.faults = Faults()
        self.stop_event = threading.Event()
        self.initialized = True

    def _make_memory(self, slot: int) -> NodeMemory:
        """The node's memory, which its pools take their segments from (simulated addresses here)."""
        return NodeMemory(slot)

    # ---- state -------------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self.initialized and not self.faults.killed

    def pool_for(self, placement: Placement) -> MemoryPool | None:
        return self.device_pool if placement == Placement.DEVICE else self.host_pool

    def inject(self, fault: Mapping[str, Any]) -> None:
        kind = fault.get("kind")
        if kind == "delay":
            seconds = float(fault["seconds"])
            if not seconds >= 0 or math.isinf(seconds):
                raise ValueError(f"delay seconds must be a finite number >= 0, got {seconds}")
            self.faults.send_delay_s = seconds
        elif kind == "drop_link":
            self.faults.dropped_peers.add(int(fault["peer"]))
        elif kind == "kill_node":
            self.faults.killed = True
        elif kind == "clear":
            self.faults = Faults()
        else:
            raise ValueError(f"unknown fault kind {kind!r}; known: delay, drop_link, kill_node, clear")

    # ---- cache table -------------------------------------------------------------------------------
    def lookup(self, cache_id: int, include_dead: bool = False) -> CacheEntry | None:
        entry = self.caches.get(cache_id)
        if entry is None and include_dead:
            entry = self.dead_caches.get(cache_id)
        return entry

    def lookup_blocks(self, model_id: int) -> CacheEntry | None:
        """The blocks cache bound to a BlocksCacheKey with this model_id, if any."""
        with self.lock:
            cache_id = self.blocks_keys.get(model_id)
            return None if cache_id is None else self.caches.get(cache_id)

    def lookup_cache_key(self, key: tuple[int, int, int]) -> tuple[CacheEntry, int] | None:
        """The cache and batch index a CacheKey (req_id, model_id, prefix_id) is bound to, if any."""
        with self.lock:
            bound = self.keys.get(key)
            entry = None if bound is None else self.caches.get(bound[0])
            return None if entry is None or bound is None else (entry, bound[1])

    def lookup_by_key(self, req_id: int, model_id: int) -> CacheEntry | None:
        """The cache bound to a CacheKey with this req_id and model_id (any prefix), if any."""
        with self.lock:
            for (req, model, _prefix), (cache_id, _batch) in self.keys.items():
                if req == req_id and model == model_id:
                    return self.caches.get(cache_id)
        return None

    def snapshot_table(self) -> RemoteTable:
        """The cache table as a linked client syncs it (a copy; later changes do not reach it)."""
        with self.lock:
            keys: dict[tuple[int, int], int] = {}
            for (req, model, _prefix), (cache_id, _batch) in self.keys.items():
                keys.setdefault((req, model), cache_id)
            return RemoteTable(self.table_version, dict(self.caches), keys, dict(self.blocks_keys))

    @staticmethod
    def check_shape(shape: Sequence[int]) -> None:
        if not 1 <= len(shape) < MAX_SHAPE_RANK:
            raise _invalid(f"shape rank must be in [1, {MAX_SHAPE_RANK}), got {len(shape)}")
        if any(d <= 0 for d in shape):
            raise _invalid(f"shape dims must be > 0, got {list(shape)}")

    def add_cache(self, *, placement: Placement, num_tensors: int, shape: Sequence[int], itemsize: int,
                  is_blocks: bool, is_registered: bool, remote_accessible: bool,
                  tensor_addrs: Sequence[int] | None = None,
                  cache_keys: Sequence[tuple[int, int, int]] = (), blocks_key: int | None = None) -> CacheEntry:
        """Allocate from the pool (``tensor_addrs`` None) or register given addresses; returns the entry.
        ``blocks_key`` is the model_id of the BlocksCacheKey a blocks cache is bound to."""
        self.check_shape(shape)
        shape_t = tuple(int(d) for d in shape)
        tensor_nbytes = math.prod(shape_t) * itemsize
        if len(cache_keys) > shape_t[0]:
            raise _invalid(f"{len(cache_keys)} cache keys exceed batch size {shape_t[0]}")
        if len(set(cache_keys)) != len(cache_keys):
            raise _invalid("duplicate cache key in one request")
        space = self.memory.space(placement)
        pool: MemoryPool | None = None
        pool_addr: int | None = None
        if tensor_addrs is None:
            pool = self.pool_for(placement)
            if pool is None:
                raise LLMException(f"no {placement.name} memory pool configured",
                                   status_code=LLMStatusCode.LLM_FEATURE_NOT_ENABLED)
            pool_addr = pool.allocate(tensor_nbytes * num_tensors)
            addrs = [pool_addr + t * tensor_nbytes for t in range(num_tensors)]
        else:
            addrs = list(tensor_addrs)
            for addr in addrs:
                if not space.contains(addr, tensor_nbytes):
                    raise _invalid(f"address {addr:#x} (+{tensor_nbytes} bytes) is not inside "
                                   f"{placement.name} memory of cluster {self.cluster_id}")
        views = [space.view(a, tensor_nbytes) for a in addrs]
        with self.lock:
            bound: list[Any] = [k for k in cache_keys if k in self.keys]
            if blocks_key is not None and blocks_key in self.blocks_keys:
                bound.append(f"BlocksCacheKey(model_id={blocks_key})")
            if bound:
                if pool is not None and pool_addr is not None:
                    pool.free(pool_addr)
                raise _invalid(f"cache key {bound[0]} is already bound")
            cache_id = self._next_id
            self._next_id += 1
            entry = CacheEntry(
                cache_id=cache_id, placement=placement, num_tensors=num_tensors, shape=shape_t,
                tensor_nbytes=tensor_nbytes, batch_size=1 if is_blocks else shape_t[0],
                stride=tensor_nbytes // shape_t[0], is_blocks=is_blocks, is_registered=is_registered,
                remote_accessible=remote_accessible, tensor_addrs=addrs, views=views,
                pool=pool, pool_addr=pool_addr)
            self.caches[cache_id] = entry
            self.table_version += 1
            for batch, key in enumerate(cache_keys):
                self.keys[key] = (cache_id, batch)
            if blocks_key is not None:
                self.blocks_keys[blocks_key] = cache_id
        return entry

    def remove_cache(self, cache_id: int, *, registered: bool) -> bool:
        """Drop an allocated (``registered`` False) or registered cache; False if there is none of that kind."""
        with self.lock:
            entry = self.caches.get(cache_id)
            if entry is None or entry.is_registered != registered:
                return False
            del self.caches[cache_id]
            self.table_version += 1
            self.dead_caches[cache_id] = entry
            for key in [k for k, (cid, _) in self.keys.items() if cid == cache_id]:
                del self.keys[key]
            for model in [m for m, cid in self.blocks_keys.items() if cid == cache_id]:
                del self.blocks_keys[model]
        with entry.lock:  # wait for an in-flight copy into it, then mark it gone
            entry.alive = False
        if entry.pool is not None and entry.pool_addr is not None:
            entry.pool.free(entry.pool_addr)
        return True

    def shutdown(self) -> None:
        self.initialized = False
        self.stop_event.set()
        with self.lock:
            entries = list(self.caches.values())
            self.dead_caches.update(self.caches)
            self.caches.clear()
            self.keys.clear()
            self.blocks_keys.clear()
        for entry in entries:
            with entry.lock:
                entry.alive = False
        self.memory.release_all()

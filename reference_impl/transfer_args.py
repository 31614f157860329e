"""The argument records of the transfer calls (push_cache and its siblings), and what a push derives once per
(local, remote) pair.

Each record names its operation (``operation``) and the key its native errors report (``error_key``), so the
shared steps word their messages per operation without knowing which one runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from .cache_keys import BlocksCacheKey, CacheKey

if TYPE_CHECKING:
    from .engine import CacheEntry, NodeEngine, RemoteTable

#: the vendor's default tensor_num_per_layer (K and V), facts §1.1
NUM_TENSORS_PER_LAYER = 2
_NUM_TENSORS_PER_LAYER = NUM_TENSORS_PER_LAYER  # the name the multi-process reference imports

SlicePairs = list[tuple[np.ndarray, np.ndarray]]


class Span(NamedTuple):
    """One contiguous run of a transfer, before it is turned into memory (numpy views in process, NIXL descriptors
    across processes): ``nbytes`` from ``src_offset`` of tensor ``src_tensor`` of the cache the bytes come from, to
    ``dst_offset`` of tensor ``dst_tensor`` of the cache they go to."""

    src_tensor: int
    src_offset: int
    dst_tensor: int
    dst_offset: int
    nbytes: int


@dataclass(slots=True, eq=False)
class PushPlan:
    """What a push derives once from its (local, remote) pair: the pair-only checks passed, and byte offsets."""

    local: Any
    remote: Any
    src_offset: int
    dst_offset: int
    nbytes: int
    #: with the default ``_src_view``/``_dst_view``: this slot of every local/remote tensor (else None)
    src_slots: list[np.ndarray] | None = None
    dst_slots: list[np.ndarray] | None = None
    #: with the default ``_tensor_pairs`` too: a layer's pairs are a slice of the slot lists
    default_pairs: bool = False


class _PushedFrom:
    """What the two pushes share: the local source ``src_cache``, the remote key ``dst_cache_key``."""

    __slots__ = ()
    dst_cache_key: Any
    src_cache: Any

    @property
    def error_key(self) -> str:
        return f"dst_cache_key = {self.dst_cache_key}"

    @property
    def local_cache(self) -> Any:
        """The cache on the calling node, whose tensor count sets the default ranges (facts §1.2 #10)."""
        return self.src_cache

    @property
    def peer_cluster_id(self) -> int:
        """The cluster on the other end of the transfer (the one the key names)."""
        return int(self.dst_cache_key.cluster_id)


@dataclass(slots=True)
class PushArgs(_PushedFrom):
    """The arguments of one push_cache call; the default-range step fills in the ranges."""

    operation: ClassVar[str] = "push_cache"

    dst_cache_key: Any
    src_cache: Any
    src_batch_index: Any
    src_layer_range: Any
    dst_layer_range: Any
    size: Any
    tensor_num_per_layer: Any
    #: set by ``_push_layer`` at the first layer (and again if the local or remote entry changes)
    plan: PushPlan | None = None
    #: seconds of transfer this push has waited so far (``_await_transfer``)
    spent: float = 0.0

    @property
    def remote_cache_id(self) -> int:
        return int(self.dst_cache_key.cache_id)

    @property
    def target(self) -> str:
        """The remote cache as native messages name it."""
        return f"cache_id: {self.dst_cache_key.cache_id}"

    def find_live(self, server: NodeEngine) -> CacheEntry | None:
        """The remote cache the key names, in the server's live table."""
        return _by_id_live(server, self.remote_cache_id)

    def find_synced(self, table: RemoteTable, server: NodeEngine) -> CacheEntry | None:
        """The remote cache the key names, in the table the link synced."""
        return table.find(self.remote_cache_id)

    def selector(self) -> list[Any]:
        """What names the remote cache, as data (the multi-process reference's "open" request)."""
        return ["id", self.remote_cache_id]


def _by_id_live(server: NodeEngine, cache_id: int) -> CacheEntry | None:
    """A cache_id <= 0 falls back to the key (req_id 0, model_id 0) (facts §1.3 N8)."""
    return server.lookup(cache_id) if cache_id > 0 else server.lookup_by_key(0, 0)


@dataclass(slots=True)
class BlocksPushArgs(_PushedFrom):
    """The arguments of one push_blocks call (facts §2): a BlocksCacheKey names the remote blocks cache by its
    model_id; blocks ``src_blocks[i]`` of the local blocks cache go to ``dst_blocks[i]`` of the remote one."""

    operation: ClassVar[str] = "push_blocks"

    dst_cache_key: Any
    src_cache: Any
    src_blocks: Any
    dst_blocks: Any
    src_layer_range: Any
    dst_layer_range: Any
    tensor_num_per_layer: Any
    spent: float = 0.0

    @property
    def target(self) -> str:
        return f"blocks cache of model_id: {self.dst_cache_key.model_id}"

    def find_live(self, server: NodeEngine) -> CacheEntry | None:
        return server.lookup_blocks(self.dst_cache_key.model_id)

    def find_synced(self, table: RemoteTable, server: NodeEngine) -> CacheEntry | None:
        return table.find_blocks(self.dst_cache_key.model_id)

    def selector(self) -> list[Any]:
        return ["blocks", int(self.dst_cache_key.model_id)]


@dataclass(slots=True)
class PullArgs:
    """The arguments of one pull_cache or pull_blocks call (facts §2): the key names the remote source, ``cache``
    is the local destination. The tensor-index steps fill ``src_indices``/``dst_indices`` (empty means all) and
    the remote lookup ``src_batch`` (the batch the key names on the remote)."""

    operation: str
    cache_key: Any
    cache: Any
    batch_index: Any = 0
    size: Any = -1
    src_blocks: Any = ()
    dst_blocks: Any = ()
    src_layer_range: Any = None
    dst_layer_range: Any = None
    tensor_num_per_layer: Any = NUM_TENSORS_PER_LAYER
    src_indices: list[int] = field(default_factory=list)
    dst_indices: list[int] = field(default_factory=list)
    src_batch: int = 0
    spent: float = 0.0

    @property
    def error_key(self) -> str:
        return f"cache_key = {self.cache_key}"

    @property
    def local_cache(self) -> Any:
        return self.cache

    @property
    def peer_cluster_id(self) -> int:
        return int(self.cache_key.cluster_id)

    @property
    def target(self) -> str:
        key = self.cache_key
        if isinstance(key, BlocksCacheKey):
            return f"blocks cache of model_id: {key.model_id}"
        if isinstance(key, CacheKey):
            return f"cache of key (req_id: {key.req_id}, model_id: {key.model_id}, prefix_id: {key.prefix_id})"
        return f"cache_id: {key.cache_id}"

    def find_live(self, server: NodeEngine) -> CacheEntry | None:
        key = self.cache_key
        if isinstance(key, BlocksCacheKey):
            return server.lookup_blocks(key.model_id)
        if isinstance(key, CacheKey):
            bound = server.lookup_cache_key((key.req_id, key.model_id, key.prefix_id))
            if bound is None:
                return None
            entry, self.src_batch = bound
            return entry
        self.src_batch = key.batch_index
        return _by_id_live(server, key.cache_id)

    def find_synced(self, table: RemoteTable, server: NodeEngine) -> CacheEntry | None:
        """The vendor's stale table; a CacheKey is looked up live (the table keeps no prefix ids or batches)."""
        key = self.cache_key
        if isinstance(key, BlocksCacheKey):
            return table.find_blocks(key.model_id)
        if isinstance(key, CacheKey):
            return self.find_live(server)
        self.src_batch = key.batch_index
        return table.find(key.cache_id)

    def selector(self) -> list[Any]:
        """What names the remote source, as data: a CacheKey by its three ids (looked up live, its batch from the
        binding), a BlocksCacheKey by model_id, a CacheKeyByIdAndIndex by cache_id."""
        key = self.cache_key
        if isinstance(key, BlocksCacheKey):
            return ["blocks", int(key.model_id)]
        if isinstance(key, CacheKey):
            return ["key", int(key.req_id), int(key.model_id), int(key.prefix_id)]
        return ["id", int(key.cache_id)]

    def found_at(self, batch: int | None) -> None:
        """The remote answered the lookup: the source batch is the binding's (a CacheKey) or the key's index."""
        key = self.cache_key
        if batch is not None:
            self.src_batch = batch
        elif not isinstance(key, (BlocksCacheKey, CacheKey)):
            self.src_batch = key.batch_index

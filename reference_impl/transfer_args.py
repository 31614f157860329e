"""The argument records of the transfer calls (push_cache and its siblings), and what a push derives once per
(local, remote) pair.

Each record names its operation (``operation``) and the key its native errors report (``error_key``), so the
shared steps word their messages per operation without knowing which one runs; what its key names on the remote
(``target``, ``find_live``, ``find_synced``, ``selector``) is the key's kind in ``key_kinds``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from .key_kinds import BY_BLOCKS, BY_ID, KeyKind, kind_of

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
    """What the two pushes share: the local source ``src_cache``, the remote key ``dst_cache_key`` of the one key
    type the push takes (``key_kind``), which names the destination."""

    __slots__ = ()
    key_kind: ClassVar[KeyKind]
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

    @property
    def target(self) -> str:
        """The remote cache as native messages name it."""
        return self.key_kind.describe(self.dst_cache_key)

    def find_live(self, server: NodeEngine) -> CacheEntry | None:
        """The remote cache the key names, in the server's live table."""
        found = self.key_kind.find_live(server, self.dst_cache_key)
        return None if found is None else found[0]

    def find_synced(self, table: RemoteTable, server: NodeEngine) -> CacheEntry | None:
        """The remote cache the key names, in the table the link synced."""
        found = self.key_kind.find_synced(table, server, self.dst_cache_key)
        return None if found is None else found[0]

    def selector(self) -> list[Any]:
        """What names the remote cache, as data (the multi-process reference's "open" request)."""
        return self.key_kind.selector_of(self.dst_cache_key)


@dataclass(slots=True)
class PushArgs(_PushedFrom):
    """The arguments of one push_cache call; the default-range step fills in the ranges."""

    operation: ClassVar[str] = "push_cache"
    key_kind: ClassVar[KeyKind] = BY_ID

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


@dataclass(slots=True)
class BlocksPushArgs(_PushedFrom):
    """The arguments of one push_blocks call (facts §2): a BlocksCacheKey names the remote blocks cache by its
    model_id; blocks ``src_blocks[i]`` of the local blocks cache go to ``dst_blocks[i]`` of the remote one."""

    operation: ClassVar[str] = "push_blocks"
    key_kind: ClassVar[KeyKind] = BY_BLOCKS

    dst_cache_key: Any
    src_cache: Any
    src_blocks: Any
    dst_blocks: Any
    src_layer_range: Any
    dst_layer_range: Any
    tensor_num_per_layer: Any
    spent: float = 0.0


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
    def key_kind(self) -> KeyKind:
        return kind_of(self.cache_key)

    @property
    def target(self) -> str:
        return self.key_kind.describe(self.cache_key)

    def find_live(self, server: NodeEngine) -> CacheEntry | None:
        kind = self.key_kind
        self._take_own_batch(kind)
        return self._take(kind.find_live(server, self.cache_key))

    def find_synced(self, table: RemoteTable, server: NodeEngine) -> CacheEntry | None:
        """The vendor's stale table; a CacheKey is looked up live (the table keeps no prefix ids or batches)."""
        kind = self.key_kind
        self._take_own_batch(kind)
        return self._take(kind.find_synced(table, server, self.cache_key))

    def selector(self) -> list[Any]:
        """What names the remote source, as data: a CacheKey by its three ids (looked up live, its batch from the
        binding), a BlocksCacheKey by model_id, a CacheKeyByIdAndIndex by cache_id."""
        return self.key_kind.selector_of(self.cache_key)

    def found_at(self, batch: int | None) -> None:
        """The remote answered the lookup: the source batch is the binding's (a CacheKey) or the key's index."""
        if batch is not None:
            self.src_batch = batch
        else:
            self._take_own_batch(self.key_kind)

    def _take_own_batch(self, kind: KeyKind) -> None:
        own = kind.own_batch(self.cache_key)
        if own is not None:
            self.src_batch = own

    def _take(self, found: tuple[CacheEntry, int | None] | None) -> CacheEntry | None:
        if found is None:
            return None
        entry, batch = found
        if batch is not None:
            self.src_batch = batch
        return entry

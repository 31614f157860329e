"""``CacheManager.push_blocks``: blocks of a local blocks cache pushed, layer by layer, into blocks of the remote
blocks cache a ``BlocksCacheKey`` names (facts §2 "push_blocks"; transfer-family.md §1.2).

Python-layer checks run in ``push_blocks_check_order``: the vendor's argument checks 2..10 in its order, then the
flag gate (the vendor's 1, moved last for the same reason as push_cache's: the documentation promises a
TypeError for a wrong type), then the documentation's bounds shared with push_cache (tensor_num_per_layer <=
num_tensors, identical layer ranges, stated for push_blocks too). Then one native transfer per layer, with the
B2B checks of ``LayerWiseTransferJob``: remote dst blocks in range, an empty ``src_blocks`` refused (push_blocks
sends block_mem_size 0, so the C2B branch rejects it), equal list lengths, src blocks in range.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .batch_slices import BatchSlices
from .cache import Cache
from .cache_keys import BlocksCacheKey
from .checks import check_isinstance
from .layer_checks import NativeLayerChecks
from .status import LLMStatusCode, raise_if_false
from .transfer_args import NUM_TENSORS_PER_LAYER, BlocksPushArgs, SlicePairs, Span
from .transfer_checks import LayerArgumentChecks
from .transfer_copy import LayerCopy
from .transfer_remote import RemoteResolution

if TYPE_CHECKING:
    from .engine import CacheEntry
    from .fabric import Link

#: the vendor's Python-layer argument checks of push_blocks, facts §2 2..10, in the vendor's order
PUSH_BLOCKS_ARGUMENT_CHECKS: tuple[str, ...] = (
    "_check_blocks_key_type",       # 2
    "_check_blocks_src_type",       # 3
    "_check_block_lists",           # 4
    "_check_src_is_blocks",         # 5
    "_check_dst_blocks_given",      # 6
    "_check_tnpl_type",             # 7
    "_check_tnpl_positive",         # 7
    "_check_src_layer_range",       # 8
    "_check_dst_layer_range",       # 8
    "_default_layer_ranges",        # 9
    "_check_range_lengths",         # 10
)


def num_blocks(entry: Any) -> int:
    """A blocks cache's block count: shape[0] (its stride is one block, facts §3)."""
    return int(entry.shape[0])


class PushBlocksMixin(LayerArgumentChecks, RemoteResolution, NativeLayerChecks, LayerCopy, BatchSlices):
    """push_blocks and its own steps; mixed into CacheManager (``BatchSlices`` for its ``_dst_view``, which vendor
    mode overrides to write past a tensor's end)."""

    push_blocks_check_order: tuple[str, ...] = PUSH_BLOCKS_ARGUMENT_CHECKS + (
        "_check_push_enabled",          # 1 (the vendor runs it first: VendorCacheManager)
        "_check_tnpl_upper_bound",      # documentation: tensor_num_per_layer in [1, num_tensors]
        "_check_range_values",          # documentation: src_layer_range and dst_layer_range the same value
    )
    #: whether None passes the key and source type checks (the vendor leaves allow_none at its default, so None
    #: gets through to an AttributeError, facts §2); the reference refuses it with the documented TypeError
    blocks_allow_none: bool = False

    def push_blocks(self, dst_cache_key: BlocksCacheKey, src_cache: Cache, src_blocks: Any = (),
                    dst_blocks: Any = (), src_layer_range: range | None = None,
                    dst_layer_range: range | None = None, tensor_num_per_layer: int = NUM_TENSORS_PER_LAYER) -> None:
        """Push ``src_blocks`` of ``src_cache`` into ``dst_blocks`` of the remote blocks cache, layer by layer."""
        args = BlocksPushArgs(dst_cache_key, src_cache, src_blocks, dst_blocks, src_layer_range, dst_layer_range,
                              tensor_num_per_layer)
        for step in self.push_blocks_check_order:
            getattr(self, step)(args)
        for src_layer, dst_layer in zip(args.src_layer_range, args.dst_layer_range, strict=True):
            self._push_blocks_layer(args, src_layer, dst_layer)

    # ---- push_blocks' own Python-layer checks (facts §2) ----------------------------------------------
    def _check_blocks_key_type(self, a: BlocksPushArgs) -> None:
        check_isinstance("dst_cache_key", a.dst_cache_key, [BlocksCacheKey], allow_none=self.blocks_allow_none)

    def _check_blocks_src_type(self, a: BlocksPushArgs) -> None:
        check_isinstance("src_cache", a.src_cache, [Cache], allow_none=self.blocks_allow_none)

    def _check_block_lists(self, a: BlocksPushArgs) -> None:
        check_isinstance("src_blocks", a.src_blocks, [list, tuple], int, allow_none=False)
        check_isinstance("dst_blocks", a.dst_blocks, [list, tuple], int, allow_none=False)

    def _check_src_is_blocks(self, a: BlocksPushArgs) -> None:
        raise_if_false(a.src_cache.is_blocks_cache, "param check failed, src_cache must be blocks cache.")

    def _check_dst_blocks_given(self, a: BlocksPushArgs) -> None:
        raise_if_false(len(a.dst_blocks) > 0, "param check failed, dst_blocks can not be empty.")

    # ---- per-layer "native" transfer (B2B branch of the layer-wise job) ---------------------------------
    def _push_blocks_layer(self, a: BlocksPushArgs, src_layer: int, dst_layer: int) -> None:
        self._check_blocks_native_arguments(a)            # the binding's conversion of the call's tuple
        local = self._resolve_local_cache(a)              # N1, N3
        link = self._resolve_link(a)                      # N4-N6
        self._check_local_remote_accessible(a, local)     # N7
        remote = self._resolve_remote_cache(a, link)      # N8 (by model_id), N8b
        self._check_dst_layer(a, remote, dst_layer)       # N8c
        self._check_dst_blocks_in_range(a, remote)        # ValidateRemoteCache: max dst block < remote blocks
        self._check_src_layer(a, local, src_layer)        # N9
        self._check_tensor_divisible(a, local)            # N10
        self._check_block_transfer(a, local)              # Prepare: B2B only; lengths; src blocks in range
        self._check_restrictions(a, local, remote)        # documentation: device<->host needs the pool
        self._check_strides(a, local, remote)             # reference: a local block no larger than a remote one
        pairs = self._block_slices(a, link, local, remote, src_layer, dst_layer)
        self._transfer_layer(a, link, remote, pairs)      # N12

    def _check_blocks_native_arguments(self, a: BlocksPushArgs) -> None:
        """BlocksCacheKey checks its ints' type only; the native tuple's fields are uint64, so a negative one is
        refused by the binding with a TypeError (as push_cache's negative cache_id; inferred, not observed)."""
        key = a.dst_cache_key
        for name, value in (("cluster_id", key.cluster_id), ("model_id", key.model_id)):
            if value < 0:
                raise TypeError(f"transfer_cache_v2(): incompatible function arguments: dst {name} {value} is "
                                "not a uint64")

    def _check_dst_blocks_in_range(self, a: BlocksPushArgs, remote: CacheEntry) -> None:
        blocks = num_blocks(remote)
        if any(not 0 <= b < blocks for b in a.dst_blocks):
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"dst block index {max(a.dst_blocks)} is out of range[0, {blocks}) of remote "
                                     "cache")

    def _check_block_transfer(self, a: BlocksPushArgs, local: CacheEntry) -> None:
        if not a.src_blocks:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     "src_blocks is empty: cache to blocks needs block_mem_size in (0, tensor size)")
        if len(a.src_blocks) != len(a.dst_blocks):
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"src_blocks size ({len(a.src_blocks)}) != dst_blocks size "
                                     f"({len(a.dst_blocks)})")
        blocks = num_blocks(local)
        if any(not 0 <= b < blocks for b in a.src_blocks):
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"src block index {max(a.src_blocks)} is out of range[0, {blocks})")

    def _block_slices(self, a: BlocksPushArgs, link: Link, local: CacheEntry, remote: CacheEntry, src_layer: int,
                      dst_layer: int) -> SlicePairs:
        """Block ``src_blocks[i]`` of each local tensor of the layer into ``dst_blocks[i]`` of its remote tensor:
        one local block's bytes each (the vendor merges contiguous runs into one descriptor; the bytes are the
        same)."""
        tpl, n, rs = a.tensor_num_per_layer, local.stride, remote.stride
        spans = [Span(src_layer * tpl + j, sb * n, dst_layer * tpl + j, db * rs, n)
                 for j in range(tpl) for sb, db in zip(a.src_blocks, a.dst_blocks, strict=True)]
        return self._block_pairs(link, local, remote, spans)

    def _block_pairs(self, link: Link, local: CacheEntry, remote: CacheEntry, spans: list[Span]) -> SlicePairs:
        """The spans as numpy views (the seam where the multi-process reference makes NIXL descriptors)."""
        return [(local.views[s.src_tensor][s.src_offset:s.src_offset + s.nbytes],
                 self._dst_view(link, remote, s.dst_tensor, s.dst_offset, s.nbytes)) for s in spans]

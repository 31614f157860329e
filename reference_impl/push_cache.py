"""``CacheManager.push_cache``: its own checks and its order of steps, over the family's shared modules (see
README "Hook points").

Python-layer checks run in the order named by ``PushCacheMixin.push_check_order``: the vendor's argument
checks (facts §1.2 #2..#13, in the vendor's order), then the enable_remote_cache_accessible refusal (#1, which
the vendor runs first), then the documentation's bounds (tensor_num_per_layer <= num_tensors, identical layer
ranges). Then each layer is one "native" transfer: ``_push_layer`` resolves the caches and the link, checks
them (facts §1.3 N1..N11 plus the documentation's restrictions), computes the byte slices, waits out the
simulated transfer time and copies. Checks that depend only on the (local, remote) pair run at the first layer
that meets that pair (``PushPlan``); their outcome cannot change from layer to layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .batch_slices import BatchSlices
from .cache import Cache
from .cache_keys import CacheKeyByIdAndIndex
from .checks import check_int64, check_isinstance, check_uint32
from .layer_checks import NativeLayerChecks
from .status import raise_if_false
from .transfer_args import NUM_TENSORS_PER_LAYER, PushArgs, PushPlan
from .transfer_checks import LayerArgumentChecks
from .transfer_copy import LayerCopy
from .transfer_remote import RemoteResolution

if TYPE_CHECKING:
    from .engine import CacheEntry

#: the vendor's Python-layer argument checks, facts §1.2 #2..#13, in the vendor's order
ARGUMENT_CHECKS: tuple[str, ...] = (
    "_check_dst_cache_key_type",    # 2
    "_check_src_cache_type",        # 3
    "_check_src_batch_index",       # 4
    "_check_src_not_blocks",        # 5
    "_check_tnpl_type",             # 6
    "_check_tnpl_positive",         # 7
    "_check_src_layer_range",       # 8
    "_check_dst_layer_range",       # 9
    "_default_layer_ranges",        # 10
    "_check_range_lengths",         # 11
    "_check_size_type",             # 12
    "_check_size_value",            # 13
)


class PushCacheMixin(LayerArgumentChecks, RemoteResolution, NativeLayerChecks, LayerCopy, BatchSlices):
    """push_cache and its own steps; mixed into CacheManager, which provides ``engine`` and the option flags."""

    #: argument checks first (so a wrong type is a TypeError/ValueError even with the option off, as the
    #: documentation's Returns section says), then #1, then the documentation's bounds
    push_check_order: tuple[str, ...] = ARGUMENT_CHECKS + (
        "_check_push_enabled",          # 1 (the vendor runs it first: VendorCacheManager)
        "_check_tnpl_upper_bound",      # documentation: tensor_num_per_layer in [1, num_tensors]
        "_check_range_values",          # documentation: src_layer_range and dst_layer_range the same value
    )

    def push_cache(self, dst_cache_key: CacheKeyByIdAndIndex, src_cache: Cache, src_batch_index: int = 0,
                   src_layer_range: range | None = None, dst_layer_range: range | None = None, size: int = -1,
                   tensor_num_per_layer: int = NUM_TENSORS_PER_LAYER) -> None:
        """Push batch ``src_batch_index`` of ``src_cache``, layer by layer, into the remote cache of the key."""
        args = PushArgs(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size,
                        tensor_num_per_layer)
        for step in self.push_check_order:
            getattr(self, step)(args)
        push_layer = self._push_layer
        for src_layer, dst_layer in self._layer_pairs(args):
            push_layer(args, src_layer, dst_layer)

    # ---- push_cache's own Python-layer checks (facts §1.2) ---------------------------------------------
    def _check_dst_cache_key_type(self, a: PushArgs) -> None:
        check_isinstance("dst_cache_key", a.dst_cache_key, [CacheKeyByIdAndIndex], allow_none=False)

    def _check_src_cache_type(self, a: PushArgs) -> None:
        check_isinstance("src_cache", a.src_cache, [Cache], allow_none=False)

    def _check_src_batch_index(self, a: PushArgs) -> None:
        check_uint32("src_batch_index", a.src_batch_index)

    def _check_src_not_blocks(self, a: PushArgs) -> None:
        raise_if_false(not a.src_cache.is_blocks_cache, "param check failed, cache can not be blocks cache.")

    def _check_size_type(self, a: PushArgs) -> None:
        check_int64("size", a.size)

    def _check_size_value(self, a: PushArgs) -> None:
        raise_if_false(a.size == -1, "[push_cache] param check failed, size ({0}) is invalid, should be = -1.",
                       a.size)

    # ---- per-layer "native" transfer (facts §1.3) -----------------------------------------------------
    def _layer_pairs(self, a: PushArgs) -> Iterable[tuple[int, int]]:
        """(src layer, dst layer) in transfer order: src[i] goes to dst[i]."""
        return zip(a.src_layer_range, a.dst_layer_range, strict=True)

    def _push_layer(self, a: PushArgs, src_layer: int, dst_layer: int) -> None:
        if a.plan is None:
            self._check_native_arguments(a)                   # the binding's conversion of the call's tuple
        local = self._resolve_local_cache(a)                  # N1, N3
        link = self._resolve_link(a)                          # N4-N6
        plan = a.plan
        if plan is None or plan.local is not local:
            self._check_local_remote_accessible(a, local)     # N7
        remote = self._resolve_remote_cache(a, link)          # N8, N8b
        self._check_dst_layer(a, remote, dst_layer)           # N8c
        if plan is None or plan.local is not local or plan.remote is not remote:
            a.plan = self._plan_push(a, local, remote, src_layer)  # N8d, N9, N10, N11, restrictions, strides
        else:
            self._check_src_layer(a, local, src_layer)        # N9 (the others depend on the pair only)
        pairs = self._layer_slices(a, link, local, remote, src_layer, dst_layer)
        self._transfer_layer(a, link, remote, pairs)          # N12

    def _plan_push(self, a: PushArgs, local: CacheEntry, remote: CacheEntry, src_layer: int) -> PushPlan:
        """The per-layer checks from N8d on, at the first layer of a (local, remote) pair, and its offsets."""
        self._check_dst_batch(a, remote)                      # N8d
        self._check_src_layer(a, local, src_layer)            # N9
        self._check_tensor_divisible(a, local)                # N10
        self._check_src_batch(a, local)                       # N11
        self._check_restrictions(a, local, remote)            # documentation restrictions
        self._check_strides(a, local, remote)                 # documentation: no overflow of the dst slice
        return self._new_plan(a, local, remote)

    def _check_native_arguments(self, a: PushArgs) -> None:
        """CacheKeyByIdAndIndex takes a negative cache_id (int64), but the native call's field is a uint64: the
        vendor's binding refuses the conversion with a TypeError before any native check (facts §1.2, §9)."""
        cache_id = a.dst_cache_key.cache_id
        if cache_id < 0:
            raise TypeError(f"transfer_cache_v2(): incompatible function arguments: dst cache_id {cache_id} is not "
                            "a uint64")

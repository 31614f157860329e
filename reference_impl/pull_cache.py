"""``CacheManager.pull_cache``: one batch of a remote contiguous cache, named by a ``CacheKey`` or a
``CacheKeyByIdAndIndex``, pulled into batch ``batch_index`` of a local contiguous cache in one native call
(facts §2 "pull_cache"; transfer-family.md §1.2). Ranges are tensor-index lists (empty means all), src and dst
ranges may differ, and the checks judge the local destination first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .cache import Cache
from .cache_keys import CacheKey, CacheKeyByIdAndIndex
from .checks import check_int64, check_isinstance, check_uint32
from .pull_transfer import PULL_DOC_BOUNDS, PullSteps
from .status import LLMStatusCode, raise_if_false, raise_if_true
from .transfer_args import NUM_TENSORS_PER_LAYER, PullArgs, SlicePairs, Span
from .transfer_checks import LayerArgumentChecks

if TYPE_CHECKING:
    from .engine import CacheEntry

#: facts §2 pull_cache 1..10, in the vendor's order
PULL_CACHE_CHECKS: tuple[str, ...] = (
    "_check_pull_key_type",         # 1
    "_check_pull_cache_type",       # 2
    "_check_pull_batch_index",      # 3
    "_check_pull_size_type",        # 4
    "_check_pull_not_blocks",       # 5
    "_check_pull_size_value",       # 6
    "_check_tnpl_type",             # 7
    "_check_tnpl_positive",         # 8
    "_check_pull_cache_key",        # 9
    "_pull_tensor_indices",         # 10
)

class PullCacheMixin(LayerArgumentChecks, PullSteps):
    """pull_cache and its own steps; mixed into CacheManager."""

    pull_cache_check_order: tuple[str, ...] = PULL_CACHE_CHECKS + PULL_DOC_BOUNDS

    def pull_cache(self, cache_key: CacheKey | CacheKeyByIdAndIndex, cache: Cache, batch_index: int = 0,
                   size: int = -1, **kwargs: Any) -> None:
        """Pull the remote batch the key names into batch ``batch_index`` of ``cache``; of ``kwargs`` only
        src_layer_range, dst_layer_range and tensor_num_per_layer are read (others are ignored, as the vendor)."""
        args = PullArgs("pull_cache", cache_key, cache, batch_index, size,
                        src_layer_range=kwargs.get("src_layer_range"), dst_layer_range=kwargs.get("dst_layer_range"),
                        tensor_num_per_layer=kwargs.get("tensor_num_per_layer", NUM_TENSORS_PER_LAYER))
        for step in self.pull_cache_check_order:
            getattr(self, step)(args)
        self._pull_cache_native(args)

    # ---- pull_cache's own Python-layer checks -----------------------------------------------------------
    def _check_pull_key_type(self, a: PullArgs) -> None:
        """With enable_remote_cache_accessible on only CacheKeyByIdAndIndex, else CacheKey too."""
        kinds: list[type] = [CacheKeyByIdAndIndex] if self._enable_remote_cache_accessible else [
            CacheKey, CacheKeyByIdAndIndex]
        check_isinstance("cache_key", a.cache_key, kinds, allow_none=False)

    def _check_pull_cache_type(self, a: PullArgs) -> None:
        check_isinstance("cache", a.cache, [Cache], allow_none=False)

    def _check_pull_batch_index(self, a: PullArgs) -> None:
        check_uint32("batch_index", a.batch_index)

    def _check_pull_size_type(self, a: PullArgs) -> None:
        check_int64("size", a.size)

    def _check_pull_not_blocks(self, a: PullArgs) -> None:
        raise_if_true(a.cache.is_blocks_cache, "param check failed, cache can not be blocks cache.")

    def _check_pull_size_value(self, a: PullArgs) -> None:
        raise_if_false(a.size == -1 or a.size > 0, "param check failed, size ({0}) is invalid, should be -1 or > 0.",
                       a.size)

    # ---- native (one call, facts §2: local cache, params, link, then the remote) ----------------------
    def _pull_cache_native(self, a: PullArgs) -> None:
        local = self._resolve_local_cache(a)              # N1, local cache exists
        self._check_pull_indices(a, local)                # own cluster, divisibility, dst indices, sizes
        self._check_pull_batch(a, local)                  # batch_index < batch_size, size <= stride
        link = self._resolve_link(a)                      # link entity, not destroyed, registered
        remote = self._resolve_pull_source(a, link)       # the source (KV_CACHE_NOT_EXIST)
        pairs = self._pull_cache_slices(a, local, remote)
        self._pull_transfer(a, link, local, remote, pairs)

    def _check_pull_batch(self, a: PullArgs, local: CacheEntry) -> None:
        if not a.batch_index < local.batch_size:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"batch index[{a.batch_index}] is out of range[0, {local.batch_size})")
        if a.size > local.stride:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"size ({a.size}) exceeds the batch size in bytes ({local.stride})")

    def _pull_cache_slices(self, a: PullArgs, local: CacheEntry, remote: CacheEntry) -> SlicePairs:
        """Per tensor pair, ``size`` bytes (-1: one local batch slot) of the remote batch into the local one; the
        reference refuses a source that is a blocks cache or whose slot is shorter (nothing outside it is read)."""
        n = local.stride if a.size == -1 else int(a.size)
        if remote.is_blocks:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "remote cache can not be blocks cache")
        if not a.src_batch < remote.batch_size:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"batch index[{a.src_batch}] is out of range[0, {remote.batch_size}) of "
                                     "remote cache")
        if n > remote.stride:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"pull size ({n}) exceeds the remote batch size in bytes ({remote.stride})")
        so, do = a.src_batch * remote.stride, a.batch_index * local.stride
        return self._span_pairs(remote, local, [Span(s, so, d, do, n)
                                                for s, d in self._tensor_index_pairs(a, local, remote)])

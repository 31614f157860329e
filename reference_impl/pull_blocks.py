"""``CacheManager.pull_blocks``: into blocks ``dst_blocks`` of a local blocks cache, from blocks of a remote
blocks cache (``BlocksCacheKey``: B2B, ``src_blocks`` required) or from one batch of a remote contiguous cache
(``CacheKey`` / ``CacheKeyByIdAndIndex``: C2B, ``src_blocks`` empty), in one native call (facts §2 "pull_blocks")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .cache import Cache
from .cache_keys import BlocksCacheKey, CacheKey, CacheKeyByIdAndIndex
from .checks import check_isinstance
from .pull_transfer import PULL_DOC_BOUNDS, PullSteps
from .push_blocks import num_blocks
from .status import LLMStatusCode, raise_if_false
from .transfer_args import NUM_TENSORS_PER_LAYER, PullArgs, SlicePairs, Span
from .transfer_checks import LayerArgumentChecks

if TYPE_CHECKING:
    from .engine import CacheEntry

#: facts §2 pull_blocks 1..5, in the vendor's order, then the tensor indices (as pull_cache's step 10)
PULL_BLOCKS_CHECKS: tuple[str, ...] = (
    "_check_pull_blocks_types",     # 1
    "_check_pull_dst_is_blocks",    # 2
    "_check_pull_dst_blocks_given",  # 3
    "_check_tnpl_type",             # 4
    "_check_tnpl_positive",         # 4
    "_check_pull_src_blocks",       # 5
    "_check_pull_cache_key",        # 5 (CacheKey)
    "_pull_tensor_indices",
)


class PullBlocksMixin(LayerArgumentChecks, PullSteps):
    """pull_blocks and its own steps; mixed into CacheManager."""

    pull_blocks_check_order: tuple[str, ...] = PULL_BLOCKS_CHECKS + PULL_DOC_BOUNDS

    def pull_blocks(self, src_cache_key: CacheKey | CacheKeyByIdAndIndex | BlocksCacheKey, dst_cache: Cache,
                    src_blocks: Any = (), dst_blocks: Any = (), **kwargs: Any) -> None:
        """Pull into ``dst_blocks`` of ``dst_cache``; kwargs as pull_cache's."""
        args = PullArgs("pull_blocks", src_cache_key, dst_cache, src_blocks=src_blocks, dst_blocks=dst_blocks,
                        src_layer_range=kwargs.get("src_layer_range"), dst_layer_range=kwargs.get("dst_layer_range"),
                        tensor_num_per_layer=kwargs.get("tensor_num_per_layer", NUM_TENSORS_PER_LAYER))
        for step in self.pull_blocks_check_order:
            getattr(self, step)(args)
        self._pull_blocks_native(args)

    # ---- pull_blocks' own Python-layer checks -----------------------------------------------------------
    def _check_pull_blocks_types(self, a: PullArgs) -> None:
        check_isinstance("src_cache_key", a.cache_key, [CacheKey, CacheKeyByIdAndIndex, BlocksCacheKey],
                         allow_none=False)
        check_isinstance("dst_cache", a.cache, [Cache], allow_none=False)
        check_isinstance("src_blocks", a.src_blocks, [list, tuple], int, allow_none=False)
        check_isinstance("dst_blocks", a.dst_blocks, [list, tuple], int, allow_none=False)

    def _check_pull_dst_is_blocks(self, a: PullArgs) -> None:
        raise_if_false(a.cache.is_blocks_cache, "param check failed, dst_cache must be blocks cache.")

    def _check_pull_dst_blocks_given(self, a: PullArgs) -> None:
        raise_if_false(len(a.dst_blocks) > 0, "param check failed, dst_blocks can not be empty.")

    def _check_pull_src_blocks(self, a: PullArgs) -> None:
        if isinstance(a.cache_key, BlocksCacheKey):
            raise_if_false(len(a.src_blocks) > 0, "param check failed, src_blocks can not be empty when "
                           "src_cache_key is BlocksCacheKey.")
        else:
            raise_if_false(len(a.src_blocks) == 0, "param check failed, src_blocks must be empty when "
                           "src_cache_key is not BlocksCacheKey.")

    # ---- native (one call) ----------------------------------------------------------------------------
    def _pull_blocks_native(self, a: PullArgs) -> None:
        local = self._resolve_local_cache(a)              # N1, local cache exists
        self._check_pull_indices(a, local)                # own cluster, divisibility, dst indices, sizes
        self._check_local_blocks(a, local)                # dst blocks in range, B2B lengths equal
        link = self._resolve_link(a)
        remote = self._resolve_pull_source(a, link)
        pairs = self._pull_blocks_slices(a, local, remote)
        self._pull_transfer(a, link, local, remote, pairs)

    def _check_local_blocks(self, a: PullArgs, local: CacheEntry) -> None:
        """The facts record these for HOST blocks caches; the reference checks every placement (a block past the
        cache is memory it does not own)."""
        blocks = num_blocks(local)
        if any(not 0 <= b < blocks for b in a.dst_blocks):
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"dst block index {max(a.dst_blocks)} is out of range[0, {blocks})")
        if a.src_blocks and len(a.src_blocks) != len(a.dst_blocks):
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"src_blocks size ({len(a.src_blocks)}) != dst_blocks size "
                                     f"({len(a.dst_blocks)})")

    def _pull_blocks_slices(self, a: PullArgs, local: CacheEntry, remote: CacheEntry) -> SlicePairs:
        """B2B: remote block ``src_blocks[i]`` into local block ``dst_blocks[i]``, one local block each. C2B: the
        remote batch slot cut into local blocks, its i-th block into ``dst_blocks[i]``."""
        bs = local.stride
        tensors = self._tensor_index_pairs(a, local, remote)
        if a.src_blocks:
            if not remote.is_blocks:
                raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "remote cache must be blocks cache")
            blocks = num_blocks(remote)
            if any(not 0 <= b < blocks for b in a.src_blocks):
                raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                         f"src block index {max(a.src_blocks)} is out of range[0, {blocks}) of "
                                         "remote cache")
            if bs > remote.stride:
                raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                         f"local block size ({bs}) exceeds the remote one ({remote.stride})")
            rs = remote.stride
            return self._span_pairs(remote, local, [Span(s, sb * rs, d, db * bs, bs) for s, d in tensors
                                                    for sb, db in zip(a.src_blocks, a.dst_blocks, strict=True)])
        if remote.is_blocks:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "remote cache can not be blocks cache")
        if not a.src_batch < remote.batch_size:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"batch index[{a.src_batch}] is out of range[0, {remote.batch_size}) of "
                                     "remote cache")
        if len(a.dst_blocks) * bs > remote.stride:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"{len(a.dst_blocks)} blocks of {bs} bytes exceed the remote batch size in bytes "
                                     f"({remote.stride})")
        so = a.src_batch * remote.stride
        return self._span_pairs(remote, local, [Span(s, so + i * bs, d, db * bs, bs) for s, d in tensors
                                                for i, db in enumerate(a.dst_blocks)])

"""What pull_cache and pull_blocks share (facts §2; transfer-family.md §1.2): layer ranges as tensor-index lists
(empty means all), the CacheKey rule, the own-cluster and index checks of ``CheckParam``/``CheckTensorIndices``,
the remote source's resolution, and the one native transfer, judged on the local destination."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .cache_keys import CacheKey
from .checks import UINT64_MAX, check_isinstance, check_uint32
from .status import LLMStatusCode, raise_if_false, raise_if_true
from .transfer_args import PullArgs, SlicePairs, Span
from .transfer_remote import RemoteResolution
from .transfer_timing import TransferTiming

if TYPE_CHECKING:
    from .engine import CacheEntry
    from .fabric import Link


#: the page's bounds the vendor lacks, after the pulls' Python checks (VendorPushMixin drops them): a layer range
#: that is set names layers, and tensor_num_per_layer is in [1, the cache's tensor count] (the native divisibility
#: check bounds it only when a range is given)
PULL_DOC_BOUNDS: tuple[str, ...] = (
    "_check_pull_ranges_not_empty",
    "_check_pull_tnpl_upper_bound",
)


def layer_range_to_tensor_indices(name: str, layer_range: Any, tnpl: int) -> list[int]:
    """``layer_range_to_tensor_indices`` (facts §2 pull_cache 10): None or an empty range is [] (all); layer L
    covers tensors [L*tnpl, (L+1)*tnpl)."""
    if layer_range is None:
        return []
    check_isinstance(name, layer_range, [range], allow_none=False)
    raise_if_false(layer_range.step == 1, "param check failed, {0} step must be 1.", name)
    if len(layer_range) == 0:
        return []
    raise_if_true(layer_range.start < 0, "param check failed, {0} the start value:{1} is < 0", name,
                  layer_range.start)
    indices = list(range(layer_range.start * tnpl, layer_range.stop * tnpl))
    check_uint32(f"{name} first tensor index", indices[0])
    check_uint32(f"{name} last tensor index", indices[-1])
    return indices


def _valid_id(value: int) -> bool:
    return 0 <= value < UINT64_MAX


class PullSteps(RemoteResolution, TransferTiming):
    """The shared steps of the pulls (hook points); the manager provides ``engine``."""

    def _check_pull_cache_key(self, a: PullArgs) -> None:
        """``check_cache_key``: a CacheKey names its cache by exactly one of req_id and prefix_id."""
        key = a.cache_key
        if isinstance(key, CacheKey):
            raise_if_true(_valid_id(key.req_id) == _valid_id(key.prefix_id),
                          "param check failed, exactly one of req_id ({0}) and prefix_id ({1}) must be valid.",
                          key.req_id, key.prefix_id)

    def _pull_tensor_indices(self, a: PullArgs) -> None:
        tnpl = a.tensor_num_per_layer
        a.src_indices = layer_range_to_tensor_indices("src_layer_range", a.src_layer_range, tnpl)
        a.dst_indices = layer_range_to_tensor_indices("dst_layer_range", a.dst_layer_range, tnpl)

    def _check_pull_ranges_not_empty(self, a: PullArgs) -> None:
        """The page: only a range left unset means every layer; a set, empty one names no layer (the vendor's
        step 10 reads it as all of them)."""
        for name, layer_range in (("src_layer_range", a.src_layer_range), ("dst_layer_range", a.dst_layer_range)):
            raise_if_true(layer_range is not None and len(layer_range) == 0,
                          "param check failed, {0} ({1}) is empty.", name, layer_range)

    def _check_pull_tnpl_upper_bound(self, a: PullArgs) -> None:
        """The page's range [1, the cache's tensor count]; with a range given, the native divisibility check
        refuses a larger value, so this is checked when both index lists are empty (all tensors)."""
        num_tensors = a.local_cache.cache_desc.num_tensors
        raise_if_true(not a.src_indices and not a.dst_indices and a.tensor_num_per_layer > num_tensors,
                      "[" + a.operation + "] param check failed, tensor_num_per_layer ({0}) is invalid, "
                      "should [1, {1}]", a.tensor_num_per_layer, num_tensors)

    # ---- native (one call) ----------------------------------------------------------------------------
    def _check_pull_indices(self, a: PullArgs, local: CacheEntry) -> None:
        """CheckParam's common part, judged on the local destination: not the own cluster; with ranges,
        tensor_num_per_layer divides the tensors; dst indices in range; equal list sizes when both are given."""
        if a.peer_cluster_id == self.engine.cluster_id:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "data can not be pulled from own cluster")
        if (a.src_indices or a.dst_indices) and local.num_tensors % a.tensor_num_per_layer:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"tensor_num {local.num_tensors} must be a multiple of "
                                     f"tensor_num_per_layer {a.tensor_num_per_layer}")
        if a.dst_indices and a.dst_indices[-1] >= local.num_tensors:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"dst tensor index {a.dst_indices[-1]} is out of range[0, {local.num_tensors})")
        if a.src_indices and a.dst_indices and len(a.src_indices) != len(a.dst_indices):
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"src tensor indices size ({len(a.src_indices)}) != dst tensor indices size "
                                     f"({len(a.dst_indices)})")

    def _resolve_pull_source(self, a: PullArgs, link: Link) -> CacheEntry:
        """The remote source: a CacheKey is looked up live by its key (a pull by key needs no remote-accessible
        table); a cache id or a BlocksCacheKey through the synced table, as a push's destination (the key's
        kind says which: ``live_only``)."""
        if a.key_kind.live_only:
            remote = a.find_live(link.server)
            if remote is None:
                raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST, f"{a.target} does not exist")
            return remote
        return self._resolve_remote_cache(a, link)

    def _tensor_index_pairs(self, a: PullArgs, local: CacheEntry, remote: CacheEntry) -> list[tuple[int, int]]:
        """(remote tensor, local tensor): an empty list means all of its own cache's tensors."""
        src = a.src_indices or list(range(remote.num_tensors))
        dst = a.dst_indices or list(range(local.num_tensors))
        if len(src) != len(dst):
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"src tensor num ({len(src)}) != dst tensor num ({len(dst)})")
        if src[-1] >= remote.num_tensors:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"src tensor index {src[-1]} is out of range[0, {remote.num_tensors}) of "
                                     "remote cache")
        return list(zip(src, dst, strict=True))

    def _span_pairs(self, src: CacheEntry, dst: CacheEntry, spans: list[Span]) -> SlicePairs:
        """The spans as numpy views of the remote source and the local destination (the seam where the
        multi-process reference makes NIXL descriptors instead)."""
        return [(src.views[s.src_tensor][s.src_offset:s.src_offset + s.nbytes],
                 dst.views[s.dst_tensor][s.dst_offset:s.dst_offset + s.nbytes]) for s in spans]

    def _pull_transfer(self, a: PullArgs, link: Link, local: CacheEntry, remote: CacheEntry,
                       pairs: SlicePairs) -> None:
        """The one native transfer: its simulated time against llm.SyncKvCacheWaitTime, then the copy under the
        local destination's lock (a source or destination freed meanwhile is not read or written)."""
        seconds = self._transfer_seconds(a, link, self._pairs_nbytes(pairs))
        if seconds > 0:
            self._await_transfer(a, link, seconds)
        with local.lock:
            if not local.alive or not self._pull_source_alive(link, remote):
                raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST, "a cache was deallocated")
            self._pull_copy(a, link, pairs)

    def _pairs_nbytes(self, pairs: SlicePairs) -> int:
        return sum(src.size for src, _ in pairs)

    def _pull_source_alive(self, link: Link, remote: CacheEntry) -> bool:
        return remote.alive

    def _pull_copy(self, a: PullArgs, link: Link, pairs: SlicePairs) -> None:
        for src, dst in pairs:
            np.copyto(dst, src)

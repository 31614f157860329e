"""Vendor mode: the reference configured to behave like the vendor's ``llm_datadist`` where the vendor departs
from the push_cache documentation or from memory safety (facts §1.2, §1.3). A CPU stand-in with the vendor's
quirks, for tests of code written against the real package.

``VendorCacheManager`` is a ``CacheManager`` subclass; everything it does not override is the reference:

* the enable_remote_cache_accessible refusal comes first, before any type check (facts §1.2 #1), and the
  Python checks are exactly the vendor's #1..#13: no documentation bounds, so
  - equal-length but different layer ranges are accepted and layer ``src[i]`` is written into ``dst[i]``;
  - ``tensor_num_per_layer`` above the tensor count with both ranges None makes empty default ranges and the
    call returns having done nothing;
* strides are not compared (facts §1.3 "What is not checked"): each tensor copies the **local** stride, so a
  source batch entry larger than the destination's runs over the destination entry into the next batch slot
  and past the tensor's end into whatever the modelled memory arena holds there (the next tensor of a pool
  allocation, a neighbouring cache, raw memory); bytes that would land past the end of a memory segment (a
  gap, not modelled memory) go nowhere;
* the remote cache table is the one synced at the first transfer attempt over the link, and nothing else:
  a cache deallocated after that sync is still found, and its old memory is written, even when a newer
  allocation now uses it;
* llm.SyncKvCacheWaitTime bounds each layer's transfer (the native per-layer BatchTransfer timeout), so a push
  whose layers each fit returns normally however long it takes in all;
* ``src_cache`` is looked up by its cache_id alone: a Cache of another node names the local cache that has the
  same id (ids count from 1 on every node), and that cache is pushed;
* a link whose transfer timed out fails fast (the transfer layer's circuit breaker, ADXL's link fast-fail): every
  later push or pull over it raises LLM_FAILED at once, until the clusters are unlinked and linked again (a pull
  goes over the link's comm entity as a push does, so its timeout trips the link too);
* pull_cache and pull_blocks check exactly the vendor's Python steps (facts §2 pull_cache 1..10, pull_blocks
  1..5 and the tensor indices): a layer range that is set and empty is an empty tensor-index list, read as all
  the tensors, and with both ranges unset a tensor_num_per_layer above the tensor count is not bounded (empty
  index lists pull every tensor).

Shared with the reference (both model the vendor there): the link-time llm.EnableRemoteCacheAccessible check,
the first-attempt table sync, the per-layer native checks N1-N11, no rollback, the status codes.

Use it as a backend (``reference_impl.backend:vendor_backend``, entry point ``reference-vendor``), or directly:
``reference_impl.vendor.LLMDataDist`` is ``LLMDataDist`` whose cache manager is a ``VendorCacheManager``, and
this module re-exports the rest of the API, so ``import reference_impl.vendor as llm_datadist`` works as a
drop-in for code that imports the vendor package's names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .cache import Cache
from .cache_desc import CacheDesc
from .cache_keys import BlocksCacheKey, CacheKey, CacheKeyByIdAndIndex
from .cache_manager import CacheManager
from .cluster_info import LLMClusterInfo
from .config import LLMConfig, LlmConfig
from .enums import DataType, LLMRole, Placement
from .fabric import Fabric
from .llm_datadist import LLMDataDist as _ReferenceLLMDataDist
from .pull_blocks import PULL_BLOCKS_CHECKS
from .pull_cache import PULL_CACHE_CHECKS
from .push_blocks import PUSH_BLOCKS_ARGUMENT_CHECKS
from .push_cache import ARGUMENT_CHECKS, PushCacheMixin
from .status import LLMException, LLMStatusCode
from .transfer_args import PushArgs, SlicePairs

if TYPE_CHECKING:
    from .engine import CacheEntry, RemoteTable
    from .fabric import Link


class VendorPushMixin(PushCacheMixin):
    """The vendor's departures that do not depend on where the caches live: the multi-process vendor mode
    (``reference_impl.multiprocess.vendor``) mixes in the same class."""

    #: facts §1.2 #1..#13 exactly: the option first, no documentation bounds after #13
    push_check_order = ("_check_push_enabled",) + ARGUMENT_CHECKS
    #: push_blocks likewise (facts §2 1..10): the option first, no documentation bounds, and None passes the key
    #: and source type checks (it fails later with AttributeError)
    push_blocks_check_order = ("_check_push_enabled",) + PUSH_BLOCKS_ARGUMENT_CHECKS
    blocks_allow_none = True
    #: the pulls: the vendor's Python steps alone, none of the page's bounds (an empty range means all layers,
    #: tensor_num_per_layer is not bounded by the tensor count when no range is given)
    pull_cache_check_order = PULL_CACHE_CHECKS
    pull_blocks_check_order = PULL_BLOCKS_CHECKS
    #: llm.SyncKvCacheWaitTime bounds each layer's transfer, not the whole push (facts §1.3 N12, §5)
    sync_timeout_scope = "layer"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: links a transfer timed out on: they fail fast until made again (a new link is a new object)
        self.fast_failing: list[Any] = []

    def _resolve_link(self, a: PushArgs) -> Any:
        link = super()._resolve_link(a)
        if any(f is link for f in self.fast_failing):
            raise self._native_error(a, LLMStatusCode.LLM_FAILED, "the link failed fast after a transfer timeout "
                                     "(unlink and link the clusters again)")
        return link

    def _transfer_layer(self, a: PushArgs, link: Any, remote: Any, pairs: Any) -> None:
        try:
            super()._transfer_layer(a, link, remote, pairs)
        except LLMException as exc:
            self._trip_on_timeout(link, exc)
            raise

    def _pull_transfer(self, a: Any, link: Any, local: Any, remote: Any, pairs: Any) -> None:
        """A pull's one transfer goes over the same link: its timeout trips the link's fast-fail too."""
        try:
            super()._pull_transfer(a, link, local, remote, pairs)  # type: ignore[misc]  # PullSteps, in the MRO
        except LLMException as exc:
            self._trip_on_timeout(link, exc)
            raise

    def _trip_on_timeout(self, link: Any, exc: LLMException) -> None:
        if exc.status_code == LLMStatusCode.LLM_TIMEOUT and not any(f is link for f in self.fast_failing):
            self.fast_failing.append(link)

    def _resolve_local_cache(self, a: Any) -> CacheEntry:
        """The native layer gets ``src_cache.cache_id`` alone and looks it up in this node's table (facts §1.3
        N3); cache ids are per-process counters from 1, so another node's Cache names the local cache with the
        same id, which is then pushed."""
        engine = self.engine
        if not engine.alive:
            raise self._native_error(a, LLMStatusCode.LLM_FAILED, "local engine is not alive")
        entry = engine.caches.get(a.local_cache.cache_id)
        if entry is None:
            raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST,
                                     f"cache id:{a.local_cache.cache_id} not found")
        return entry


class VendorCacheManager(VendorPushMixin, CacheManager):
    """The reference CacheManager with the vendor's departures (see the module docstring)."""

    def _check_strides(self, a: PushArgs, local: CacheEntry, remote: CacheEntry) -> None:
        """The vendor never compares strides; the copy count is the local stride."""

    def _find_remote_cache(self, a: Any, link: Link, table: RemoteTable) -> CacheEntry | None:
        """The stale table alone: a cache deallocated since the sync is still found."""
        found: CacheEntry | None = a.find_synced(table, link.server)
        return found

    def _dst_alive(self, remote: CacheEntry) -> bool:
        return True  # nothing tells the sender that the remote freed the cache

    def _dst_view(self, link: Link, remote: CacheEntry, tensor: int, offset: int, nbytes: int) -> np.ndarray:
        """Raw memory from the tensor's address + offset: past the tensor when the count overruns it."""
        if offset + nbytes <= remote.tensor_nbytes:
            return super()._dst_view(link, remote, tensor, offset, nbytes)
        return link.server.memory.view_upto(remote.tensor_addrs[tensor] + offset, nbytes)

    def _copy_layer(self, pairs: SlicePairs) -> None:
        for src, dst in pairs:
            np.copyto(dst, src if dst.size == src.size else src[:dst.size])  # cut where modelled memory ends


class LLMDataDist(_ReferenceLLMDataDist):
    """``LLMDataDist`` whose cache manager is a :class:`VendorCacheManager` (unless told otherwise)."""

    def __init__(self, role: LLMRole, cluster_id: int, *, fabric: Fabric | None = None,
                 cache_manager_cls: type[CacheManager] = VendorCacheManager) -> None:
        super().__init__(role, cluster_id, fabric=fabric, cache_manager_cls=cache_manager_cls)


__all__ = [
    "BlocksCacheKey", "Cache", "CacheDesc", "CacheKey", "CacheKeyByIdAndIndex", "CacheManager", "DataType",
    "Fabric", "LLMClusterInfo", "LLMConfig", "LlmConfig", "LLMDataDist", "LLMException", "LLMRole",
    "LLMStatusCode", "Placement", "VendorCacheManager", "VendorPushMixin",
]

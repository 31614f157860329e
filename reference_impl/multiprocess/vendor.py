"""Vendor mode across processes: the reference's vendor departures (``reference_impl.vendor``) over NIXL.

``VendorMultiprocessCacheManager`` is the multi-process CacheManager with the departures of
:class:`reference_impl.vendor.VendorCacheManager` that a push across processes can show:

* the Python checks are exactly the vendor's #1..#13, in its order (the remote-accessible refusal first), and
  llm.SyncKvCacheWaitTime bounds each layer (``VendorPushMixin``, shared with the in-process vendor mode);
* strides are not compared: each tensor (push_cache) or block (push_blocks) gets the **local** stride, cut only
  where the memory segment that holds the destination tensor ends (what lies past a segment is not memory the
  node has);
* the server answers from the table synced at the link's first push (``stale_remote_table``): a cache
  deallocated since is still found and its old memory written; no pin protects it (a pull from it is refused
  at the copy, as in process: the entry says it is dead).
"""

from __future__ import annotations

from ..vendor import VendorPushMixin
from .cache_manager import MultiprocessCacheManager, RemoteCache


class VendorMultiprocessCacheManager(VendorPushMixin, MultiprocessCacheManager):
    #: read by the server side (NodeRuntime._open)
    stale_remote_table = True

    def _check_strides(self, a: object, local: object, remote: object) -> None:  # type: ignore[override]
        """The vendor never compares strides; the copy count is the local stride."""

    def _span_length(self, remote: RemoteCache, tensor: int, offset: int, nbytes: int) -> int:
        """The local count into the tensor, up to the end of the segment holding it."""
        return max(0, min(nbytes, remote.ends[tensor] - (remote.addrs[tensor] + offset)))

"""Registration and deallocation in a node process: memory the node host allocated is adopted, and a cache is
freed only after the pins other nodes hold on it are revoked and their transfers have stopped (control.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..cache import Cache
from ..cache_manager import CacheManager
from .real_memory import adopt_registered

if TYPE_CHECKING:
    from .runtime_view import ProcessRuntime


class PinnedRelease(CacheManager):
    """The registration and release steps of :class:`~.cache_manager.MultiprocessCacheManager` (``runtime``)."""

    runtime: ProcessRuntime | None = None

    # ---- registration: memory the node host allocated ---------------------------------------------------
    def _check_addrs(self, cache_desc: Any, addrs: list[int]) -> None:
        """The reference's checks, then (real-address memory only) adopt the registered tensors' memory."""
        super()._check_addrs(cache_desc, addrs)
        adopt_registered(self.engine, cache_desc.placement, addrs, cache_desc.size)

    # ---- deallocation: stop remote writers first ------------------------------------------------------
    @contextlib.contextmanager
    def _retiring(self, cache_id: int | None) -> Iterator[None]:
        rt = self.runtime
        if rt is None or cache_id is None:
            yield
            return
        with rt.pins.retire(cache_id):
            yield

    def _owned_id(self, cache: Any) -> int | None:
        return cache.cache_id if isinstance(cache, Cache) and self._owns(cache) else None

    def deallocate_cache(self, cache: Cache) -> None:
        """Free an allocated cache; a registered, unknown or already freed cache is a no-op."""
        with self._retiring(self._owned_id(cache)):
            super().deallocate_cache(cache)

    def deallocate_blocks_cache(self, cache: Cache) -> None:
        with self._retiring(self._owned_id(cache)):
            super().deallocate_blocks_cache(cache)

    def unregister_cache(self, cache_id: int) -> None:
        """Forget a registered cache (its memory stays with its owner); an unknown id is a no-op."""
        cid = cache_id if isinstance(cache_id, int) and not isinstance(cache_id, bool) else None
        with self._retiring(cid):
            super().unregister_cache(cache_id)

"""Fake backend: a per-cache lock that a second writer fails to take drops that writer's bytes and returns as if it
had pushed (two pushes at once into disjoint batch entries of one destination cache: one is lost)."""

from __future__ import annotations

import threading
import time

from _proxy import ProxyCacheManager, backend_with

_GUARD = threading.Lock()
_BUSY: set[tuple[int, int]] = set()
#: how long the first writer holds the cache: long enough for a thread released with it to meet the lock
HOLD_S = 0.05


class OneWriterCacheManager(ProxyCacheManager):
    def push_cache(self, dst_cache_key, src_cache, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        target = (getattr(dst_cache_key, "cluster_id", None), getattr(dst_cache_key, "cache_id", None))
        with _GUARD:
            if target in _BUSY:
                return None  # the lock not taken: the bytes are dropped, the call returns
            _BUSY.add(target)
        try:
            result = self._inner.push_cache(dst_cache_key, src_cache, *args, **kwargs)
            time.sleep(HOLD_S)
            return result
        finally:
            with _GUARD:
                _BUSY.discard(target)


backend = backend_with("fake-one-writer-per-cache", OneWriterCacheManager)

"""Fake backend correct only on the setup the kit used to hold fixed: a source cache allocated with cache_keys (the
drawn layouts never bound keys to a source) moves nothing, and the call returns as if it had pushed."""

from __future__ import annotations

from _proxy import ProxyCacheManager, backend_with


class KeyedSourceCacheManager(ProxyCacheManager):
    def __init__(self, inner):  # noqa: ANN001
        super().__init__(inner)
        self._keyed: set[int] = set()

    def allocate_cache(self, cache_desc, cache_keys=()):  # noqa: ANN001
        cache = self._inner.allocate_cache(cache_desc, cache_keys)
        if cache_keys:
            self._keyed.add(cache.cache_id)
        return cache

    def push_cache(self, dst_cache_key, src_cache, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        if getattr(src_cache, "cache_id", None) in self._keyed:
            return None
        return self._inner.push_cache(dst_cache_key, src_cache, *args, **kwargs)


backend = backend_with("fake-keyed-source", KeyedSourceCacheManager)

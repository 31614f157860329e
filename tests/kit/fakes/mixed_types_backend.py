"""Fake backend wrong only where the source and destination data types differ: it returns as if it had pushed
and moves nothing (neither envelope of push_cache.data.mixed_data_types: no error, and the bytes not moved)."""

from __future__ import annotations

from _proxy import ProxyCacheManager, backend_with

#: (cluster id, cache id) -> the data type it was allocated or registered with (the destination is another
#: node's cache: its manager is another instance)
_TYPES: dict[tuple[int, int], object] = {}


class MixedTypesCacheManager(ProxyCacheManager):
    def _remember(self, cache, desc):  # noqa: ANN001, ANN202
        _TYPES[(self._inner.engine.cluster_id, cache.cache_id)] = desc.data_type
        return cache

    def allocate_cache(self, cache_desc, cache_keys=()):  # noqa: ANN001
        return self._remember(self._inner.allocate_cache(cache_desc, cache_keys), cache_desc)

    def register_cache(self, cache_desc, addrs, cache_keys=(), remote_accessible=None):  # noqa: ANN001
        return self._remember(self._inner.register_cache(cache_desc, addrs, cache_keys, remote_accessible), cache_desc)

    def push_cache(self, dst_cache_key, src_cache, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        dst = _TYPES.get((getattr(dst_cache_key, "cluster_id", None), getattr(dst_cache_key, "cache_id", None)))
        src = getattr(getattr(src_cache, "cache_desc", None), "data_type", None)
        if dst is not None and src is not None and dst != src:
            return None
        return self._inner.push_cache(dst_cache_key, src_cache, *args, **kwargs)


backend = backend_with("fake-mixed-types", MixedTypesCacheManager)

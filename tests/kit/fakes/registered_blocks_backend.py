"""Fake backend correct only on the setup the kit used to hold fixed for the blocks operations: a blocks cache
registered on raw memory (register_blocks_cache; the drawn and covering layouts only allocated them) is passed over
by the call that names it locally — push_blocks from it, pull_blocks into it, move nothing and return as if they
had."""

from __future__ import annotations

from _proxy import ProxyCacheManager, backend_with


class RegisteredBlocksCacheManager(ProxyCacheManager):
    def __init__(self, inner):  # noqa: ANN001
        super().__init__(inner)
        self._registered: set[int] = set()

    def register_blocks_cache(self, *args, **kwargs):  # noqa: ANN002, ANN003
        cache = self._inner.register_blocks_cache(*args, **kwargs)
        self._registered.add(cache.cache_id)
        return cache

    def push_blocks(self, dst_cache_key, src_cache, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        if getattr(src_cache, "cache_id", None) in self._registered:
            return None
        return self._inner.push_blocks(dst_cache_key, src_cache, *args, **kwargs)

    def pull_blocks(self, src_cache_key, dst_cache, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        if getattr(dst_cache, "cache_id", None) in self._registered:
            return None
        return self._inner.pull_blocks(src_cache_key, dst_cache, *args, **kwargs)


backend = backend_with("fake-registered-blocks", RegisteredBlocksCacheManager)

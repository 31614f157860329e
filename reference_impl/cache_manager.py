"""``CacheManager``: allocation, registration and release of caches; the transfers come from their own modules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .cache import Cache
from .cache_desc import CacheDesc
from .cache_keys import BlocksCacheKey, CacheKey
from .checks import check_isinstance
from .engine import CacheEntry, NodeEngine
from .enums import Placement
from .options import OPT_HOST_MEM_POOL, OPT_MEM_POOL, OPT_REMOTE_CACHE_ACCESSIBLE
from .pull_blocks import PullBlocksMixin
from .pull_cache import PullCacheMixin
from .push_blocks import PushBlocksMixin
from .push_cache import PushCacheMixin
from .status import LLMException, LLMStatusCode, raise_if_false, raise_if_true


class CacheManager(PushCacheMixin, PushBlocksMixin, PullCacheMixin, PullBlocksMixin):
    """The cache manager of one node (``LLMDataDist.cache_manager``)."""

    def __init__(self, engine: NodeEngine, options: Mapping[str, str]) -> None:
        self.engine = engine
        self._enable_remote_cache_accessible = options.get(OPT_REMOTE_CACHE_ACCESSIBLE, "0") == "1"
        self._enabled_mem_pool = len(options.get(OPT_MEM_POOL, "")) > 0
        self._enable_host_mem_pool = len(options.get(OPT_HOST_MEM_POOL, "")) > 0
        self._is_call_linked = False

    # ---- helpers ------------------------------------------------------------------------------------
    def _check_pool_for(self, cache_desc: CacheDesc) -> None:
        raise_if_false(
            (self._enabled_mem_pool and cache_desc.placement == Placement.DEVICE)
            or (self._enable_host_mem_pool and cache_desc.placement == Placement.HOST),
            "you should config memory pool firstly and then set placement that matches it.")

    def _default_remote_accessible(self, cache_desc: CacheDesc, remote_accessible: bool | None) -> bool:
        if remote_accessible is not None:
            return remote_accessible
        if self._is_call_linked:
            return False
        return cache_desc.placement == Placement.DEVICE

    def _check_addrs(self, cache_desc: CacheDesc, addrs: list[int]) -> None:
        raise_if_false(len(addrs) > 0, "addrs can not be empty.")
        raise_if_false(len(addrs) == cache_desc.num_tensors,
                       "addrs size ({0}) must be equal to num_tensors ({1}).", len(addrs), cache_desc.num_tensors)
        raise_if_true(any(a == 0 for a in addrs), "addrs can not contain 0.")

    @staticmethod
    def _key_tuple(key: CacheKey) -> tuple[int, int, int]:
        return (key.req_id, key.model_id, key.prefix_id)

    def _new_cache(self, cache_desc: CacheDesc, entry: CacheEntry) -> Cache:
        return Cache(entry.cache_id, cache_desc, list(entry.tensor_addrs), self,
                     is_registered=entry.is_registered, is_blocks_cache=entry.is_blocks)

    def _owns(self, cache: Cache) -> bool:
        return cache._cache_manager is self

    def entry_of(self, cache: Cache) -> CacheEntry | None:
        """The engine's live entry for a Cache this manager handed out (None once released)."""
        return self.engine.lookup(cache.cache_id) if self._owns(cache) else None

    # ---- contiguous caches ----------------------------------------------------------------------------
    def allocate_cache(self, cache_desc: CacheDesc, cache_keys: list[CacheKey] | tuple[CacheKey, ...] = ()) -> Cache:
        check_isinstance("cache_desc", cache_desc, [CacheDesc], allow_none=False)
        check_isinstance("cache_keys", cache_keys, [list, tuple], CacheKey)
        raise_if_false(cache_desc.num_tensors > 0, "num_tensors ({0}) should be > 0.", cache_desc.num_tensors)
        self._check_pool_for(cache_desc)
        return self._add(cache_desc, is_blocks=False, is_registered=False, remote_accessible=True,
                         cache_keys=[self._key_tuple(k) for k in cache_keys or ()])

    def deallocate_cache(self, cache: Cache) -> None:
        """Free an allocated cache; a registered, unknown or already freed cache is a no-op."""
        check_isinstance("cache", cache, [Cache], allow_none=False)
        raise_if_true(cache.is_blocks_cache, "param check failed, cache can not be blocks cache.")
        self._release(cache)

    def register_cache(self, cache_desc: CacheDesc, addrs: list[int],
                       cache_keys: list[CacheKey] | tuple[CacheKey, ...] = (),
                       remote_accessible: bool | None = None) -> Cache:
        check_isinstance("cache_desc", cache_desc, [CacheDesc], allow_none=False)
        check_isinstance("addrs", addrs, [list], int, allow_none=False)
        check_isinstance("cache_keys", cache_keys, [list, tuple], CacheKey)
        check_isinstance("remote_accessible", remote_accessible, [bool])
        raise_if_true(self._is_call_linked and bool(remote_accessible),
                      "you can not register remote accessible cache after link.")
        self._check_addrs(cache_desc, addrs)
        return self._add(cache_desc, is_blocks=False, is_registered=True,
                         remote_accessible=self._default_remote_accessible(cache_desc, remote_accessible),
                         tensor_addrs=addrs, cache_keys=[self._key_tuple(k) for k in cache_keys or ()])

    def unregister_cache(self, cache_id: int) -> None:
        """Forget a registered cache (its memory stays with its owner); an unknown id is a no-op."""
        check_isinstance("cache_id", cache_id, [int], allow_none=False)
        entry = self.engine.lookup(cache_id)
        raise_if_true(entry is not None and not entry.is_registered,
                      "cache {0} is not a registered cache, use deallocate_cache.", cache_id)
        self.engine.remove_cache(cache_id, registered=True)

    # ---- blocks caches ------------------------------------------------------------------------------
    def allocate_blocks_cache(self, cache_desc: CacheDesc, blocks_cache_key: BlocksCacheKey | None = None) -> Cache:
        check_isinstance("cache_desc", cache_desc, [CacheDesc], allow_none=False)
        check_isinstance("blocks_cache_key", blocks_cache_key, [BlocksCacheKey])
        raise_if_false(cache_desc.num_tensors > 0, "num_tensors ({0}) should be > 0.", cache_desc.num_tensors)
        self._check_pool_for(cache_desc)
        return self._add(cache_desc, is_blocks=True, is_registered=False, remote_accessible=True,
                         blocks_key=None if blocks_cache_key is None else blocks_cache_key.model_id)

    def register_blocks_cache(self, cache_desc: CacheDesc, addrs: list[int],
                              blocks_cache_key: BlocksCacheKey | None = None,
                              remote_accessible: bool | None = None) -> Cache:
        check_isinstance("cache_desc", cache_desc, [CacheDesc], allow_none=False)
        check_isinstance("addrs", addrs, [list], int, allow_none=False)
        check_isinstance("blocks_cache_key", blocks_cache_key, [BlocksCacheKey])
        check_isinstance("remote_accessible", remote_accessible, [bool])
        raise_if_true(self._is_call_linked and bool(remote_accessible),
                      "you can not register remote accessible cache after link.")
        self._check_addrs(cache_desc, addrs)
        return self._add(cache_desc, is_blocks=True, is_registered=True,
                         remote_accessible=self._default_remote_accessible(cache_desc, remote_accessible),
                         tensor_addrs=addrs,
                         blocks_key=None if blocks_cache_key is None else blocks_cache_key.model_id)

    def deallocate_blocks_cache(self, cache: Cache) -> None:
        check_isinstance("cache", cache, [Cache], allow_none=False)
        raise_if_false(cache.is_blocks_cache, "param check failed, cache must be blocks cache.")
        self._release(cache)

    # ---- shared steps -------------------------------------------------------------------------------
    def _add(self, cache_desc: CacheDesc, **entry: Any) -> Cache:
        """Enter a cache described by ``cache_desc`` in the engine's table and hand out its Cache."""
        added = self.engine.add_cache(placement=cache_desc.placement, num_tensors=cache_desc.num_tensors,
                                      shape=cache_desc.shape, itemsize=cache_desc.data_type.itemsize, **entry)
        return self._new_cache(cache_desc, added)

    def _release(self, cache: Cache) -> None:
        """Free an owned, allocated cache (else nothing) and invalidate the Cache object."""
        if self._owns(cache):
            self.engine.remove_cache(cache.cache_id, registered=False)
        cache._tensor_addrs = []
        cache._valid = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cluster_id={self.engine.cluster_id})"


def not_initialized() -> RuntimeError:
    return RuntimeError("llm datadist is not initialized")


def cache_manager_disabled() -> LLMException:
    return LLMException("cache_manager is not supported when llm.EnableCacheManager is not configured.",
                        status_code=LLMStatusCode.LLM_PARAM_INVALID)


__all__ = ["CacheManager", "not_initialized", "cache_manager_disabled"]


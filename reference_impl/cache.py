"""``Cache``: the handle a CacheManager returns for an allocated or registered cache."""

from __future__ import annotations

from typing import Any

from .cache_desc import CacheDesc
from .checks import check_isinstance
from .enums import Placement
from .status import raise_if_false


class Cache:
    """Handle of a cache: its id, description and one address per tensor.

    Built by the CacheManager; users get one from allocate/register calls or ``create_cpu_cache``.
    """

    def __init__(self, cache_id: int, cache_desc: CacheDesc, tensor_addrs: list[int],
                 cache_manager: Any = None, is_registered: bool = False, is_blocks_cache: bool = False) -> None:
        self._cache_id = cache_id
        self._cache_desc = cache_desc
        self._tensor_addrs = list(tensor_addrs)
        self._cache_manager = cache_manager
        self._is_registered = is_registered
        self._is_blocks_cache = is_blocks_cache
        self._valid = True

    @property
    def cache_id(self) -> int:
        return self._cache_id

    @property
    def cache_desc(self) -> CacheDesc:
        return self._cache_desc

    @property
    def tensor_addrs(self) -> list[int]:
        return self._tensor_addrs

    @property
    def per_device_tensor_addrs(self) -> list[list[int]]:
        return [self._tensor_addrs]

    @property
    def is_blocks_cache(self) -> bool:
        return self._is_blocks_cache

    @staticmethod
    def create_cpu_cache(cache_desc: CacheDesc, addrs: list[int]) -> Cache:
        """Wrap host memory as a blocks cache that no CacheManager owns (cache_id -1)."""
        check_isinstance("cache_desc", cache_desc, [CacheDesc], allow_none=False)
        check_isinstance("addrs", addrs, [list], int, allow_none=False)
        raise_if_false(cache_desc.placement == Placement.HOST, "cpu cache placement must be HOST.")
        raise_if_false(len(addrs) == cache_desc.num_tensors,
                       "addrs size ({0}) must be equal to num_tensors ({1}).", len(addrs), cache_desc.num_tensors)
        return Cache(-1, cache_desc, addrs, None, is_registered=True, is_blocks_cache=True)

    def __repr__(self) -> str:
        kind = "blocks" if self._is_blocks_cache else "cache"
        return f"Cache(cache_id={self._cache_id}, {kind}, desc={self._cache_desc!r})"

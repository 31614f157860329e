"""Cache keys: ``CacheKey``, ``CacheKeyByIdAndIndex``, ``BlocksCacheKey``."""

from __future__ import annotations

from typing import Any

from .checks import UINT64_MAX, check_int64, check_isinstance, check_uint32, check_uint64
from .status import raise_if_false, raise_if_true

INVALID_ID = UINT64_MAX


def _collect(cls_name: str, names: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any],
             aliases: dict[str, str]) -> dict[str, Any]:
    raise_if_true(len(args) + len(kwargs) > len(names), "{0} supports at most {1} params, but got {2}.",
                  cls_name, len(names), len(args) + len(kwargs))
    values: dict[str, Any] = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        name = aliases.get(key, key)
        raise_if_false(name in names, "Unsupported param:{0}", key)
        raise_if_true(name in values, "param {0} is given more than once.", name)
        values[name] = value
    return values


class CacheKey:
    """Key of one batch slot: ``CacheKey(prompt_cluster_id, req_id, model_id=0, prefix_id=2**64-1)``."""

    _NAMES = ("cluster_id", "req_id", "model_id", "prefix_id")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        values = _collect("CacheKey", self._NAMES, args, kwargs, {"prompt_cluster_id": "cluster_id"})
        raise_if_false("cluster_id" in values, "CacheKey needs prompt_cluster_id.")
        raise_if_false("req_id" in values, "CacheKey needs req_id.")
        values.setdefault("model_id", 0)
        values.setdefault("prefix_id", INVALID_ID)
        for name in self._NAMES:
            check_uint64(name, values[name])
        self._cluster_id: int = values["cluster_id"]
        self._req_id: int = values["req_id"]
        self._model_id: int = values["model_id"]
        self._prefix_id: int = values["prefix_id"]

    @property
    def prompt_cluster_id(self) -> int:
        return self._cluster_id

    @property
    def cluster_id(self) -> int:
        return self._cluster_id

    @property
    def req_id(self) -> int:
        return self._req_id

    @property
    def model_id(self) -> int:
        return self._model_id

    @property
    def prefix_id(self) -> int:
        return self._prefix_id

    def _as_tuple(self) -> tuple[int, int, int, int]:
        return (self._cluster_id, self._req_id, self._model_id, self._prefix_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CacheKey) and self._as_tuple() == other._as_tuple()

    def __hash__(self) -> int:
        return hash(("CacheKey",) + self._as_tuple())

    def __repr__(self) -> str:
        return (f"CacheKey(prompt_cluster_id={self._cluster_id}, req_id={self._req_id}, "
                f"model_id={self._model_id}, prefix_id={self._prefix_id})")


class CacheKeyByIdAndIndex:
    """Key of a remote cache by id: ``(cluster_id, cache_id, batch_index=0)``."""

    def __init__(self, cluster_id: int, cache_id: int, batch_index: int = 0) -> None:
        check_uint64("cluster_id", cluster_id)
        check_int64("cache_id", cache_id)
        check_uint32("batch_index", batch_index)
        self._cluster_id = cluster_id
        self._cache_id = cache_id
        self._batch_index = batch_index

    @property
    def cluster_id(self) -> int:
        return self._cluster_id

    @property
    def cache_id(self) -> int:
        return self._cache_id

    @property
    def batch_index(self) -> int:
        return self._batch_index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CacheKeyByIdAndIndex) and (
            self._cluster_id, self._cache_id, self._batch_index) == (
            other._cluster_id, other._cache_id, other._batch_index)

    def __hash__(self) -> int:
        return hash(("CacheKeyByIdAndIndex", self._cluster_id, self._cache_id, self._batch_index))

    def __repr__(self) -> str:
        return (f"CacheKeyByIdAndIndex(cluster_id={self._cluster_id}, cache_id={self._cache_id}, "
                f"batch_index={self._batch_index})")


class BlocksCacheKey:
    """Key of a blocks cache: ``BlocksCacheKey(prompt_cluster_id, model_id=0)``."""

    _NAMES = ("cluster_id", "model_id")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        values = _collect("BlocksCacheKey", self._NAMES, args, kwargs, {"prompt_cluster_id": "cluster_id"})
        raise_if_false("cluster_id" in values, "BlocksCacheKey needs prompt_cluster_id.")
        values.setdefault("model_id", 0)
        check_isinstance("prompt_cluster_id", values["cluster_id"], [int], extra_fmt="The first param ",
                         allow_none=False)
        check_isinstance("model_id", values["model_id"], [int], extra_fmt="The second param ", allow_none=False)
        self._cluster_id: int = values["cluster_id"]
        self._model_id: int = values["model_id"]

    @property
    def prompt_cluster_id(self) -> int:
        return self._cluster_id

    @property
    def cluster_id(self) -> int:
        return self._cluster_id

    @property
    def model_id(self) -> int:
        return self._model_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BlocksCacheKey) and (self._cluster_id, self._model_id) == (
            other._cluster_id, other._model_id)

    def __hash__(self) -> int:
        return hash(("BlocksCacheKey", self._cluster_id, self._model_id))

    def __repr__(self) -> str:
        return f"BlocksCacheKey(prompt_cluster_id={self._cluster_id}, model_id={self._model_id})"

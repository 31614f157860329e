"""The arguments that name what one transfer of the family moves: the key of the cache on the server (a
BlocksCacheKey for a blocks cache bound to a model id, else a CacheKeyByIdAndIndex naming one batch entry) and the
entries (single batch indices, or one-block lists), as the spec's ``operation`` section names the parameters.
The histories, the counts and the concurrent procedure build their calls from these."""

from __future__ import annotations

from typing import Any

from ..inputs.values import Deferred, Value
from ..spec.model import Operation


def blocks_key(api: Any, cluster_id: int, model_id: int) -> Value:
    """The BlocksCacheKey naming the blocks cache bound to ``model_id`` on the node of ``cluster_id``."""
    return Value(Deferred(api.BlocksCacheKey, [cluster_id, model_id]), f"api.BlocksCacheKey({cluster_id}, {model_id})")


def batch_key(api: Any, cluster_id: int, cache_id: int, entry: int, code: str | None = None,
              entry_code: str | None = None) -> Value:
    """The CacheKeyByIdAndIndex naming entry ``entry`` of cache ``cache_id`` on the node of ``cluster_id``
    (``code``, ``entry_code``: how the script writes the id and the entry)."""
    return Value(Deferred(api.CacheKeyByIdAndIndex, [cluster_id, cache_id, entry]),
                 f"api.CacheKeyByIdAndIndex({cluster_id}, {code or cache_id}, {entry_code or entry})")


def key_of_cache(api: Any, cluster_id: int, cache: Any, model_id: int | None, entry: int) -> Value:
    """The key naming the testbed cache ``cache`` (a CacheInfo) on the node of ``cluster_id``: its BlocksCacheKey
    where it is a blocks cache bound to ``model_id``, else entry ``entry`` of it by id and index."""
    if model_id is not None:
        return blocks_key(api, cluster_id, model_id)
    return batch_key(api, cluster_id, cache.cache.cache_id, entry, f"{cache.name}.cache_id")


def one_entry_each(op: Operation, src_entry: int, dst_entry: int) -> dict[str, Value]:
    """The entries arguments of a transfer of one entry: block lists of one block each (blocks), else the local
    cache's batch index (the key carries the remote one)."""
    if op.lists:
        return {op.src_entries: Value([src_entry], repr([src_entry])),
                op.dst_entries: Value([dst_entry], repr([dst_entry]))}
    local = dst_entry if op.pulls else src_entry
    return {op.dst_entries if op.pulls else op.src_entries: Value(local, repr(local))}

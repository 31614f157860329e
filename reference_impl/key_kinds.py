"""How a transfer names a remote cache, per key type: one table from ``CacheKeyByIdAndIndex``, ``CacheKey`` and
``BlocksCacheKey`` to what each key needs (facts §1.3 N8, §2; transfer-family.md §1.2).

For each type: the ids that name the cache (and, with the kind's name, the multi-process "open" selector), how
native messages describe it, how it is found in the remote's live tables and in the table a link synced, the batch
the key itself names, and whether a pull finds its source live only (a CacheKey: no synced table, no
remote-accessible check). The call records of ``transfer_args`` and the multi-process server's "open" read this
table instead of dispatching on the key's type each.

A lookup answers ``(entry, batch)``: ``batch`` is the batch the remote bound the key to (a CacheKey), else None.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .cache_keys import BlocksCacheKey, CacheKey, CacheKeyByIdAndIndex

if TYPE_CHECKING:
    from .engine import CacheEntry, NodeEngine, RemoteTable

Found = tuple["CacheEntry", int | None]


@dataclass(frozen=True)
class KeyKind:
    """What one key type needs to name, describe and find its remote cache."""

    #: the kind's name in an "open" request's selector, which is ``[selector, *ids]``
    selector: str
    #: the key's attributes whose values name the cache, in the order the lookups (and the selector) take them
    names: tuple[str, ...]
    #: the cache as native messages name it
    describe: Callable[[Any], str]
    #: the remote's live tables: (server, ids) -> found
    live: Callable[[NodeEngine, Sequence[Any]], Found | None]
    #: the table the link synced: (table, server, ids) -> found
    synced: Callable[[RemoteTable, NodeEngine, Sequence[Any]], Found | None]
    #: the source batch the key itself names (None: the binding's, or the key names no batch)
    own_batch: Callable[[Any], int | None]
    #: a pull finds this key's source live only (no synced table, no remote-accessible check)
    live_only: bool = False

    def ids(self, key: Any) -> tuple[Any, ...]:
        return tuple(getattr(key, name) for name in self.names)

    def selector_of(self, key: Any) -> list[Any]:
        """What names the remote cache, as data (the multi-process reference's "open" request)."""
        return [self.selector, *(int(i) for i in self.ids(key))]

    def find_live(self, server: NodeEngine, key: Any) -> Found | None:
        return self.live(server, self.ids(key))

    def find_synced(self, table: RemoteTable, server: NodeEngine, key: Any) -> Found | None:
        return self.synced(table, server, self.ids(key))


def _entry(entry: CacheEntry | None) -> Found | None:
    return None if entry is None else (entry, None)


def _by_id_live(server: NodeEngine, ids: Sequence[Any]) -> Found | None:
    """A cache_id <= 0 falls back to the key (req_id 0, model_id 0) (facts §1.3 N8)."""
    cache_id = ids[0]
    return _entry(server.lookup(cache_id) if cache_id > 0 else server.lookup_by_key(0, 0))


def _by_key_live(server: NodeEngine, ids: Sequence[Any]) -> Found | None:
    bound = server.lookup_cache_key((ids[0], ids[1], ids[2]))
    return None if bound is None else (bound[0], bound[1])


BY_ID = KeyKind(
    selector="id",
    names=("cache_id",),
    describe=lambda key: f"cache_id: {key.cache_id}",
    live=_by_id_live,
    synced=lambda table, server, ids: _entry(table.find(ids[0])),
    own_batch=lambda key: key.batch_index,
)

#: the synced table keeps no prefix ids or batches: a CacheKey is looked up live there too
BY_KEY = KeyKind(
    selector="key",
    names=("req_id", "model_id", "prefix_id"),
    describe=lambda key: (f"cache of key (req_id: {key.req_id}, model_id: {key.model_id}, "
                          f"prefix_id: {key.prefix_id})"),
    live=_by_key_live,
    synced=lambda table, server, ids: _by_key_live(server, ids),
    own_batch=lambda key: None,
    live_only=True,
)

BY_BLOCKS = KeyKind(
    selector="blocks",
    names=("model_id",),
    describe=lambda key: f"blocks cache of model_id: {key.model_id}",
    live=lambda server, ids: _entry(server.lookup_blocks(ids[0])),
    synced=lambda table, server, ids: _entry(table.find_blocks(ids[0])),
    own_batch=lambda key: None,
)

KEY_KINDS: dict[type, KeyKind] = {CacheKeyByIdAndIndex: BY_ID, CacheKey: BY_KEY, BlocksCacheKey: BY_BLOCKS}
#: the same kinds by their selector name (what an "open" request carries)
SELECTOR_KINDS: dict[str, KeyKind] = {kind.selector: kind for kind in KEY_KINDS.values()}


def kind_of(key: Any) -> KeyKind:
    """The kind of ``key`` (a subclass's is its base's). A key of no listed type is read by id, as the pulls'
    former ``else`` branches did: the type checks run first, and a record that skipped them (a mutant dropping a
    check) fails on the attribute the by-id kind reads, as before."""
    for cls in type(key).__mro__:
        kind = KEY_KINDS.get(cls)
        if kind is not None:
            return kind
    return BY_ID

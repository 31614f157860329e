"""Key -> link -> remote-table resolution, shared by the transfer family (facts §1.3 N1, N3..N8b): the local
cache, the link to the key's cluster, the first-attempt table sync and the remote cache looked up in it.

The call's record says which caches are meant: ``local_cache`` (the Cache on this node), ``peer_cluster_id`` and
``target``/``find_live``/``find_synced`` (the remote cache its key names: by id, by CacheKey or by BlocksCacheKey).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .native_errors import NativeErrors
from .status import LLMStatusCode

if TYPE_CHECKING:
    from .engine import CacheEntry, NodeEngine, RemoteTable
    from .fabric import Link


class RemoteResolution(NativeErrors):
    """The resolution steps (hook points); the manager provides ``engine``."""

    engine: NodeEngine

    def _resolve_local_cache(self, a: Any) -> CacheEntry:
        engine = self.engine
        if not engine.alive:
            raise self._native_error(a, LLMStatusCode.LLM_FAILED, "local engine is not alive")
        src = a.local_cache
        entry = engine.caches.get(src.cache_id) if src._cache_manager is self else None
        if entry is None:
            raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST,
                                     f"cache id:{src.cache_id} not found")
        return entry

    def _resolve_link(self, a: Any) -> Link:
        link = self.engine.fabric.usable_link(self.engine, a.peer_cluster_id)
        if link is None:
            raise self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK,
                                     "current cluster is not linked with remote cluster")
        return link

    def _check_local_remote_accessible(self, a: Any, local: CacheEntry) -> None:
        if not local.remote_accessible:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "local cache is not remote accessible.")

    def _lookup_remote_cache(self, a: Any, server: NodeEngine) -> CacheEntry | None:
        """Live lookup in the remote table of what the call's key names (``find_live`` of its record; for
        push_cache's CacheKeyByIdAndIndex a cache_id <= 0 falls back to the key (req_id 0, model_id 0))."""
        found: CacheEntry | None = a.find_live(server)
        return found

    def _sync_remote_table(self, link: Link) -> RemoteTable:
        """N8's table sync: at the first transfer attempt over the link, before any lookup; again at the next
        attempt while the server had never published a cache (version 0) (facts §1.3 "Link-time check")."""
        table = link.table
        if table is None or table.version == 0:
            link.table = table = link.server.snapshot_table()
        return table

    def _visible_over(self, link: Link, remote: CacheEntry) -> bool:
        """Whether the link's synced remote cache table holds this cache (syncing it if no attempt did yet)."""
        table = link.table
        if table is None:
            table = self._sync_remote_table(link)
        return remote.cache_id in table.entries

    def _find_remote_cache(self, a: Any, link: Link, table: RemoteTable) -> CacheEntry | None:
        """The destination: looked up live, and visible only if the synced table holds it (a cache deallocated
        since is not found; VendorCacheManager reads the synced table alone)."""
        remote = self._lookup_remote_cache(a, link.server)
        if remote is not None and not self._visible_over(link, remote):
            return None
        return remote

    def _resolve_remote_cache(self, a: Any, link: Link) -> CacheEntry:
        table = self._sync_remote_table(link)
        remote = self._find_remote_cache(a, link, table)
        if remote is None:
            raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST,
                                     f"{a.target} does not exist")
        if not remote.remote_accessible:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "remote cache is not remote accessible.")
        return remote

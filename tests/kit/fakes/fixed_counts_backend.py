"""Fake backend correct only on the counts the kit used to hold fixed: a push returns as if it had pushed but
moves nothing once its destination node holds more than a few caches, or its source node more than three links (the
scenario's two caches and one link, and the concurrency relations' four pushes and three peers, pass)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from _proxy import ProxyBackend, ProxyCacheManager, ProxyCluster, ProxyNode

#: the most the backend handles: caches on a node, links of a node
CACHES, LINKS = 4, 3


class FixedCountsCacheManager(ProxyCacheManager):
    cluster: Any = None
    cluster_id = 0

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.registered: set[int] = set()

    def allocate_cache(self, cache_desc, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        cache = self._inner.allocate_cache(cache_desc, *args, **kwargs)
        self.cluster.caches[self.cluster_id] += 1
        return cache

    def deallocate_cache(self, cache):  # noqa: ANN001
        self._inner.deallocate_cache(cache)
        self.cluster.caches[self.cluster_id] -= 1

    def register_cache(self, cache_desc, addrs, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        cache = self._inner.register_cache(cache_desc, addrs, *args, **kwargs)
        self.registered.add(cache.cache_id)
        self.cluster.caches[self.cluster_id] += 1
        return cache

    def unregister_cache(self, cache_id):  # noqa: ANN001
        self._inner.unregister_cache(cache_id)
        if cache_id in self.registered:
            self.registered.discard(cache_id)
            self.cluster.caches[self.cluster_id] -= 1

    def push_cache(self, dst_cache_key, src_cache, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        dst = getattr(dst_cache_key, "cluster_id", None)
        c = self.cluster
        if c.caches[dst] > CACHES or c.links[self.cluster_id] > LINKS:
            return None  # the bytes never move; the call returns as if they had
        return self._inner.push_cache(dst_cache_key, src_cache, *args, **kwargs)


class FixedCountsNode(ProxyNode):
    cache_manager_cls = FixedCountsCacheManager


class FixedCountsCluster(ProxyCluster):
    node_cls = FixedCountsNode

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.caches: Counter[Any] = Counter()
        self.links: Counter[Any] = Counter()

    def node(self, cluster_id: int) -> Any:
        node = super().node(cluster_id)
        node.cache_manager.cluster, node.cache_manager.cluster_id = self, cluster_id
        return node

    def link(self, client: int, server: int) -> None:
        self._inner.link(client, server)
        self.links[client] += 1

    def unlink(self, client: int, server: int) -> None:
        self._inner.unlink(client, server)
        self.links[client] = max(0, self.links[client] - 1)


class FixedCountsBackend(ProxyBackend):
    cluster_cls = FixedCountsCluster


backend = FixedCountsBackend("fake-fixed-counts")

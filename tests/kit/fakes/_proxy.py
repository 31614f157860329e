"""A transparent proxy around the reference backend; each fake overrides one thing."""

from __future__ import annotations

from typing import Any

from reference_impl.backend import backend as reference


class ProxyCacheManager:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # noqa: ANN001
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        return self._inner.push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range,
                                      dst_layer_range, size, tensor_num_per_layer)


class ProxyNode:
    cache_manager_cls = ProxyCacheManager

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.cluster_id = inner.cluster_id
        self.api = inner.api
        self.cache_manager = self.cache_manager_cls(inner.cache_manager)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ProxyCluster:
    node_cls = ProxyNode

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._nodes: dict[int, Any] = {}

    def node(self, cluster_id: int) -> Any:
        if cluster_id not in self._nodes:
            self._nodes[cluster_id] = self.node_cls(self._inner.node(cluster_id))
        return self._nodes[cluster_id]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ProxyBackend:
    cluster_cls = ProxyCluster

    def __init__(self, name: str) -> None:
        self.name = name
        self.version = "0.0.1"

    def capabilities(self) -> dict[str, Any]:
        return reference.capabilities()

    def open_cluster(self, node_specs: Any) -> Any:
        return self.cluster_cls(reference.open_cluster(node_specs))


def backend_with(name: str, cache_manager_cls: type) -> ProxyBackend:
    """A proxy backend whose nodes wrap their cache managers in ``cache_manager_cls``."""
    node_cls = type(f"{cache_manager_cls.__name__}Node", (ProxyNode,), {"cache_manager_cls": cache_manager_cls})
    cluster_cls = type(f"{cache_manager_cls.__name__}Cluster", (ProxyCluster,), {"node_cls": node_cls})
    backend_cls = type(f"{cache_manager_cls.__name__}Backend", (ProxyBackend,), {"cluster_cls": cluster_cls})
    return backend_cls(name)

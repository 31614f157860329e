"""Adapter: the reference as a conformance-kit backend (satisfies docs/architecture.md's protocol structurally).

``ReferenceBackend(name=..., cache_manager_cls=Sub)`` builds a backend whose nodes use a CacheManager
subclass; that is how mutants are made (see README "Hook points"), and how ``vendor_backend`` (entry point
``reference-vendor``) runs the reference in vendor mode (``reference_impl.vendor``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from . import __version__
from .cache import Cache
from .cache_desc import CacheDesc
from .cache_keys import BlocksCacheKey, CacheKey, CacheKeyByIdAndIndex
from .cache_manager import CacheManager
from .cluster_info import LLMClusterInfo
from .config import LLMConfig
from .enums import DataType, LLMRole, Placement
from .fabric import Fabric
from .llm_datadist import LLMDataDist
from .status import LLMException, LLMStatusCode
from .vendor import VendorCacheManager

API = SimpleNamespace(
    CacheDesc=CacheDesc, CacheKey=CacheKey, CacheKeyByIdAndIndex=CacheKeyByIdAndIndex,
    BlocksCacheKey=BlocksCacheKey, Cache=Cache, Placement=Placement, DataType=DataType,
    LLMException=LLMException, LLMStatusCode=LLMStatusCode, LLMConfig=LLMConfig, LLMRole=LLMRole,
    LLMClusterInfo=LLMClusterInfo,
)

CAPABILITIES: dict[str, Any] = {
    "placements": ["HOST", "DEVICE"],
    "blocks_cache": True,
    "register_cache": True,
    "raw_memory": True,
    "faults": ["delay", "drop_link", "kill_node"],
    "memory_pools": True,
    "threads": True,
    "spec_versions": ["8.3.RC1.alpha003", "8.5.0", "9.0.0"],
    "product": "emulator",
    "max_cache_bytes": 1 << 28,
}


class ReferenceNode:
    """One node of a ReferenceCluster: the LLMDataDist plus the harness's view of its memory."""

    def __init__(self, datadist: LLMDataDist) -> None:
        self.datadist = datadist
        self.cluster_id = datadist.cluster_id
        self.api = API

    @property
    def cache_manager(self) -> CacheManager:
        return self.datadist.cache_manager

    @property
    def engine(self) -> Any:
        return self.datadist.engine

    def _tensor_view(self, cache: Cache, index: int) -> np.ndarray:
        if not 0 <= index < len(cache.tensor_addrs):
            raise IndexError(f"tensor index {index} out of range for {cache!r}")
        nbytes = _tensor_nbytes(cache)
        return self.engine.memory.view(cache.tensor_addrs[index], nbytes)

    def write_tensor(self, cache: Cache, index: int, data: np.ndarray) -> None:
        view = self._tensor_view(cache, index)
        arr = np.asarray(data)
        if arr.dtype != np.uint8 or arr.size != view.size:
            raise ValueError(f"write_tensor needs {view.size} uint8 bytes, got {arr.size} of {arr.dtype}")
        np.copyto(view, arr.reshape(-1))

    def read_tensor(self, cache: Cache, index: int) -> np.ndarray:
        return self._tensor_view(cache, index).copy()

    def alloc_memory(self, placement: str, nbytes: int) -> int:
        """Raw memory outside the pools (for register_cache); returns its address."""
        if placement not in ("HOST", "DEVICE"):
            raise ValueError(f"placement must be 'HOST' or 'DEVICE', got {placement!r}")
        space = self.engine.memory.space(Placement[placement])
        return space.allocate_segment(int(nbytes)).base

    def read_memory(self, addr: int, nbytes: int) -> np.ndarray:
        return self.engine.memory.view(addr, nbytes).copy()

    def write_memory(self, addr: int, data: np.ndarray) -> None:
        arr = np.asarray(data, dtype=np.uint8).reshape(-1)
        np.copyto(self.engine.memory.view(addr, arr.size), arr)

    def inject(self, fault: Mapping[str, Any]) -> None:
        self.engine.inject(fault)

    def __repr__(self) -> str:
        return f"ReferenceNode(cluster_id={self.cluster_id})"


def _tensor_nbytes(cache: Cache) -> int:
    """Bytes of one tensor of ``cache`` (from its description at the time of the call)."""
    return cache.cache_desc.size


class ReferenceCluster:
    """Nodes on one fresh Fabric."""

    def __init__(self, node_specs: Sequence[Mapping[str, Any]], cache_manager_cls: type[CacheManager]) -> None:
        self.fabric = Fabric()
        self._nodes: dict[int, ReferenceNode] = {}
        self._closed = False
        try:
            for spec in node_specs:
                self._add_node(spec, cache_manager_cls)
        except BaseException:
            self.close()
            raise

    def _add_node(self, spec: Mapping[str, Any], cache_manager_cls: type[CacheManager]) -> None:
        cluster_id = spec["cluster_id"]
        role = spec.get("role", "MIX")
        role = role if isinstance(role, LLMRole) else LLMRole[str(role)]
        if cluster_id in self._nodes:
            raise ValueError(f"duplicate cluster_id {cluster_id} in node_specs")
        datadist = LLMDataDist(role, cluster_id, fabric=self.fabric, cache_manager_cls=cache_manager_cls)
        datadist.init(dict(spec.get("options", {})))
        self._nodes[cluster_id] = ReferenceNode(datadist)

    @property
    def nodes(self) -> dict[int, ReferenceNode]:
        return dict(self._nodes)

    def node(self, cluster_id: int) -> ReferenceNode:
        return self._nodes[cluster_id]

    def _cluster_info(self, client: int, server: int) -> LLMClusterInfo:
        info = LLMClusterInfo(remote_cluster_id=server)
        info.append_local_ip_info("127.0.0.1", 26000 + client % 1000)
        info.append_remote_ip_info("127.0.0.1", 26000 + server % 1000)
        return info

    def link(self, client: int, server: int) -> None:
        status, rets = self.node(client).datadist.link_clusters([self._cluster_info(client, server)])
        if status != LLMStatusCode.LLM_SUCCESS:
            why = self.fabric.link_errors.get((client, server))
            raise RuntimeError(f"link {client} -> {server} failed: {status} {[str(r) for r in rets]}"
                               + (f" ({why})" if why and status == LLMStatusCode.LLM_PARAM_INVALID else ""))

    def unlink(self, client: int, server: int) -> None:
        """Remove the link client -> server; idempotent (no link, or a finalized client, is a no-op)."""
        datadist = self.node(client).datadist
        if self._closed or not datadist.is_initialized:
            return
        status, rets = datadist.unlink_clusters([self._cluster_info(client, server)])
        if status not in (LLMStatusCode.LLM_SUCCESS, LLMStatusCode.LLM_NOT_YET_LINK):
            raise RuntimeError(f"unlink {client} -> {server} failed: {status} {[str(r) for r in rets]}")

    def set_link_params(self, client: int, server: int, latency_s: float = 0.0,
                        bandwidth: float | None = None) -> None:
        self.fabric.set_link_params(client, server, latency_s, bandwidth)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for node in self._nodes.values():
            node.datadist.finalize()

    def __enter__(self) -> ReferenceCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ReferenceBackend:
    """The reference backend; pass ``cache_manager_cls`` to build a variant (e.g. a mutant)."""

    def __init__(self, name: str = "reference", cache_manager_cls: type[CacheManager] = CacheManager,
                 version: str = __version__) -> None:
        if not (isinstance(cache_manager_cls, type) and issubclass(cache_manager_cls, CacheManager)):
            raise TypeError(f"cache_manager_cls must be a CacheManager subclass, got {cache_manager_cls!r}")
        self.name = name
        self.version = version
        self.cache_manager_cls = cache_manager_cls

    def capabilities(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, list) else v for k, v in CAPABILITIES.items()}

    def open_cluster(self, node_specs: Sequence[Mapping[str, Any]]) -> ReferenceCluster:
        return ReferenceCluster(node_specs, self.cache_manager_cls)

    def __repr__(self) -> str:
        return f"ReferenceBackend(name={self.name!r}, cache_manager_cls={self.cache_manager_cls.__name__})"


backend = ReferenceBackend()

#: the reference in vendor mode: the vendor's departures from the documentation and from memory safety
vendor_backend = ReferenceBackend(name="reference-vendor", cache_manager_cls=VendorCacheManager)

"""``LLMDataDist``: one node of a simulated cluster (the vendor allows one per process; here a Fabric holds many)."""

from __future__ import annotations

from typing import Any

from .cache_manager import CacheManager, cache_manager_disabled, not_initialized
from .checks import check_int32, check_isinstance, check_uint64
from .cluster_info import LLMClusterInfo
from .engine import NodeEngine
from .enums import LLMRole
from .fabric import Fabric, default_fabric
from .options import EngineOptions, normalize_options, parse_engine_options
from .status import LLMStatusCode, raise_if_false


class LLMDataDist:
    """A node: ``init(options)`` attaches it to its Fabric; ``cache_manager`` is the push_cache API."""

    def __init__(self, role: LLMRole, cluster_id: int, *, fabric: Fabric | None = None,
                 cache_manager_cls: type[CacheManager] = CacheManager) -> None:
        check_isinstance("role", role, [LLMRole], allow_none=False)
        check_uint64("cluster_id", cluster_id)
        self._role = role
        self._cluster_id = cluster_id
        self._fabric = fabric
        self._cache_manager_cls = cache_manager_cls
        self._engine: NodeEngine | None = None
        self._cache_manager: CacheManager | None = None
        self._options: dict[str, str] = {}

    @property
    def role(self) -> LLMRole:
        return self._role

    @property
    def cluster_id(self) -> int:
        return self._cluster_id

    @property
    def engine(self) -> NodeEngine:
        """The simulated native engine (not in the vendor API)."""
        if self._engine is None:
            raise not_initialized()
        return self._engine

    @property
    def is_initialized(self) -> bool:
        return self._engine is not None

    def init(self, options: dict[str, str]) -> None:
        if self._engine is not None:
            return
        opts = normalize_options(options)
        parsed = parse_engine_options(opts)
        fabric = self._fabric if self._fabric is not None else default_fabric()
        engine = self._make_engine(fabric, parsed)
        try:
            fabric.attach(engine)
        except Exception:
            engine.shutdown()
            raise
        self._options = opts
        self._engine = engine
        if parsed.enable_cache_manager:
            self._cache_manager = self._cache_manager_cls(engine, opts)

    def _make_engine(self, fabric: Fabric, parsed: EngineOptions) -> NodeEngine:
        """The native engine ``init`` attaches (a subclass may build another kind)."""
        return NodeEngine(fabric, self._cluster_id, self._role, fabric.new_slot(), parsed)

    def finalize(self) -> None:
        engine, self._engine, self._cache_manager = self._engine, None, None
        if engine is not None:
            engine.fabric.detach(engine)
            engine.shutdown()

    @property
    def cache_manager(self) -> CacheManager:
        if self._engine is None:
            raise not_initialized()
        if self._cache_manager is None:
            raise cache_manager_disabled()
        return self._cache_manager

    # ---- links --------------------------------------------------------------------------------------
    def _check_clusters(self, clusters: Any, timeout: Any) -> NodeEngine:
        engine = self.engine
        check_int32("timeout", timeout)
        raise_if_false(timeout > 0, "timeout ({0}) should be > 0.", timeout)
        check_isinstance("clusters", clusters, [list, tuple], LLMClusterInfo, allow_none=False)
        need_ip = engine.options.enable_cache_manager and not engine.options.local_comm_res
        for cluster in clusters:
            if need_ip:
                raise_if_false(len(cluster.local_ip_info_list) > 0,
                               "local_ip_info_list of cluster {0} can not be empty.", cluster.remote_cluster_id)
            check_uint64("remote_cluster_id", cluster.remote_cluster_id)
        return engine

    @staticmethod
    def _overall(rets: list[LLMStatusCode]) -> LLMStatusCode:
        return next((r for r in rets if r != LLMStatusCode.LLM_SUCCESS), LLMStatusCode.LLM_SUCCESS)

    def link_clusters(self, clusters: list[LLMClusterInfo] | tuple[LLMClusterInfo, ...],
                      timeout: int = 3000) -> tuple[LLMStatusCode, list[LLMStatusCode]]:
        """Link this node to each remote cluster (direction: this node may then push into them)."""
        engine = self._check_clusters(clusters, timeout)
        rets = [engine.fabric.link(engine, c.remote_cluster_id) for c in clusters]
        return self._overall(rets), rets

    def unlink_clusters(self, clusters: list[LLMClusterInfo] | tuple[LLMClusterInfo, ...], timeout: int = 3000,
                        force: bool = False) -> tuple[LLMStatusCode, list[LLMStatusCode]]:
        engine = self._check_clusters(clusters, timeout)
        check_isinstance("force", force, [bool], allow_none=False)
        rets = [engine.fabric.unlink(engine, c.remote_cluster_id) for c in clusters]
        return self._overall(rets), rets

    def __repr__(self) -> str:
        return f"LLMDataDist(role={self._role.name}, cluster_id={self._cluster_id})"

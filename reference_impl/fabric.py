"""``Fabric``: one simulated cluster network holding many nodes in one process.

Nodes find each other by cluster_id. A link is directed: ``link_clusters`` on node A naming B lets A push
into B. Each directed pair has simulated link parameters (latency in seconds, bandwidth in bytes/s).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .status import LLMException, LLMStatusCode, log

if TYPE_CHECKING:
    from .engine import NodeEngine, RemoteTable


@dataclass(frozen=True, slots=True)
class LinkParams:
    latency_s: float = 0.0
    bandwidth: float | None = None  # bytes per second; None = unlimited

    def seconds_for(self, nbytes: int) -> float:
        if self.bandwidth is None:
            return self.latency_s
        return self.latency_s + nbytes / self.bandwidth


@dataclass(slots=True, eq=False)
class Link:
    client: NodeEngine
    server: NodeEngine
    #: the server's cache table as synced at the first transfer attempt over this link (None before it), as the
    #: vendor does (facts §1.3 N8): caches the server adds later stay invisible until re-link. A table synced
    #: while the server had never published a cache (version 0) is synced again at the next attempt.
    table: RemoteTable | None = None
    #: the simulated parameters of client -> server (kept current by ``Fabric.set_link_params``)
    params: LinkParams = field(default_factory=LinkParams)


class Fabric:
    """Registry of nodes and directed links of one simulated cluster."""

    def __init__(self, latency_s: float = 0.0, bandwidth: float | None = None) -> None:
        self._check_params(latency_s, bandwidth)
        self.default_params = LinkParams(latency_s, bandwidth)
        self._lock = threading.Lock()
        self.nodes: dict[int, NodeEngine] = {}
        self.links: dict[tuple[int, int], Link] = {}
        self._params: dict[tuple[int, int], LinkParams] = {}
        self._slots = 0
        #: why the last link attempt client -> server was refused, when the status alone does not say it
        self.link_errors: dict[tuple[int, int], str] = {}

    # ---- link parameters ----------------------------------------------------------------------------
    @staticmethod
    def _check_params(latency_s: float, bandwidth: float | None) -> None:
        if not latency_s >= 0:
            raise ValueError(f"latency_s must be >= 0, got {latency_s}")
        if bandwidth is not None and not bandwidth > 0:
            raise ValueError(f"bandwidth must be > 0 bytes/s or None, got {bandwidth}")

    def set_link_params(self, client: int, server: int, latency_s: float = 0.0,
                        bandwidth: float | None = None) -> None:
        """Simulated parameters of the directed link client → server (may be set before linking)."""
        self._check_params(latency_s, bandwidth)
        params = self._params[(client, server)] = LinkParams(latency_s, bandwidth)
        link = self.links.get((client, server))
        if link is not None:
            link.params = params

    def link_params(self, client: int, server: int) -> LinkParams:
        return self._params.get((client, server), self.default_params)

    # ---- nodes --------------------------------------------------------------------------------------
    def new_slot(self) -> int:
        with self._lock:
            slot = self._slots
            self._slots += 1
            return slot

    def attach(self, engine: NodeEngine) -> None:
        with self._lock:
            if engine.cluster_id in self.nodes:
                raise LLMException(f"Cannot init multiple LLMDataDists with cluster_id {engine.cluster_id} "
                                   "on one fabric", status_code=LLMStatusCode.LLM_FAILED)
            self.nodes[engine.cluster_id] = engine

    def detach(self, engine: NodeEngine) -> None:
        with self._lock:
            if self.nodes.get(engine.cluster_id) is engine:
                del self.nodes[engine.cluster_id]
            for pair in [p for p, link in self.links.items() if engine in (link.client, link.server)]:
                del self.links[pair]

    # ---- links --------------------------------------------------------------------------------------
    def link(self, client: NodeEngine, server_id: int) -> LLMStatusCode:
        """Link client -> server. Like the vendor (facts §1.3 "Link-time check"), the two nodes must agree on
        llm.EnableRemoteCacheAccessible, else LLM_PARAM_INVALID and no link."""
        with self._lock:
            server = self.nodes.get(server_id)
            if server is None or not server.alive or not client.alive:
                return LLMStatusCode.LLM_LINK_FAILED
            pair = (client.cluster_id, server_id)
            if pair in self.links:
                return LLMStatusCode.LLM_ALREADY_LINK
            mine = client.options.enable_remote_cache_accessible
            theirs = server.options.enable_remote_cache_accessible
            if mine != theirs:
                why = (f"RemoteCacheAccessible is not identical: cluster {client.cluster_id} has {int(mine)}, "
                       f"remote cluster {server_id} has {int(theirs)}")
                log.error(why)
                self.link_errors[pair] = why
                return LLMStatusCode.LLM_PARAM_INVALID
            self.link_errors.pop(pair, None)
            self.links[pair] = Link(client, server, params=self.link_params(client.cluster_id, server_id))
            return LLMStatusCode.LLM_SUCCESS

    def unlink(self, client: NodeEngine, server_id: int) -> LLMStatusCode:
        with self._lock:
            link = self.links.get((client.cluster_id, server_id))
            if link is None or link.client is not client:
                return LLMStatusCode.LLM_NOT_YET_LINK
            del self.links[(client.cluster_id, server_id)]
            return LLMStatusCode.LLM_SUCCESS

    def usable_link(self, client: NodeEngine, server_id: int) -> Link | None:
        """The link client → server if it exists and both ends are the current, live nodes."""
        link = self.links.get((client.cluster_id, server_id))
        if link is None or link.client is not client:
            return None
        server = link.server
        if self.nodes.get(server_id) is not server or not server.alive:
            return None
        return link


_default_fabric: Fabric | None = None
_default_lock = threading.Lock()


def default_fabric() -> Fabric:
    """The process-wide fabric used by ``LLMDataDist(..., fabric=None)``."""
    global _default_fabric
    with _default_lock:
        if _default_fabric is None:
            _default_fabric = Fabric()
        return _default_fabric

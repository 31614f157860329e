"""The multi-process reference behind the vendor's public API: ``import reference_impl.multiprocess.datadist as
llm_datadist``.

One ``LLMDataDist`` per process, as the vendor allows. ``init(options)`` starts (once per process) this
process's NIXL agent and control listener on ``llm.listenIpInfo``, and builds the reference node with its
memory at real addresses (:mod:`.real_memory`), so a caller can read and write caches by
``Cache.tensor_addrs`` and register memory it allocated itself. ``link_clusters`` connects to the
``remote_ip_info`` of each ``LLMClusterInfo`` (the remote's listen address); ``unlink_clusters`` drops the
link; ``finalize`` takes the process back to its start-up state (another LLMDataDist may then be made).

The control plane is authenticated with a key shared by all processes of one host run: ``NODEHOST_KEY``
(hex; the node host sets it for its node processes). Links go over loopback only (``docs/nixl.md``).

Besides the vendor's names it offers hooks for the kit's node host (``nodehost.vendor_api.EXTENSIONS``):
``CONFORMANCE_DEVICE_MEMORY = "host"`` (DEVICE placement is host memory here), ``CONFORMANCE_FAULTS`` and
``conformance_inject(datadist, fault)`` (the reference's delay and drop_link faults), ``conformance_stats()``
and ``conformance_bench_raw(...)`` (for the self-tests and the benchmark).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Mapping
from typing import Any

from .. import __version__
from ..cache import Cache
from ..cache_desc import CacheDesc
from ..cache_keys import BlocksCacheKey, CacheKey, CacheKeyByIdAndIndex
from ..cache_manager import CacheManager, not_initialized
from ..checks import check_isinstance, check_uint64
from ..cluster_info import LLMClusterInfo
from ..config import LLMConfig, LlmConfig
from ..enums import DataType, LLMRole, Placement
from ..options import OPT_LISTEN_IP_INFO
from ..status import LLMException, LLMStatusCode
from .cache_manager import MultiprocessCacheManager
from .node import NodeRuntime
from .transport import apply_node_env

KEY_ENV = "NODEHOST_KEY"
CONFORMANCE_DEVICE_MEMORY = "host"
CONFORMANCE_FAULTS = ("delay", "drop_link")

_lock = threading.Lock()
_runtime: NodeRuntime | None = None
_current: LLMDataDist | None = None


def _listen_address(options: Mapping[str, str]) -> tuple[str, int] | None:
    text = options.get(OPT_LISTEN_IP_INFO, "")
    if not text:
        return None
    ip, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise LLMException(f"{OPT_LISTEN_IP_INFO} must be 'ip:port', got {text!r}",
                           status_code=LLMStatusCode.LLM_PARAM_INVALID)
    return ip, int(port)


def _process_runtime(listen: tuple[str, int] | None) -> NodeRuntime:
    """This process's NodeRuntime (NIXL agent, control listener), made on first use and kept."""
    global _runtime
    if _runtime is None:
        apply_node_env(override=False)
        key = os.environ.get(KEY_ENV, "")
        authkey = bytes.fromhex(key) if key else os.urandom(32)
        _runtime = NodeRuntime(authkey, listen)
    elif listen is not None:
        _runtime.listen_on(listen)
    return _runtime


def _ip_text(ip: int | str) -> str:
    """LLMClusterInfo keeps an ip as the little-endian int of its four bytes (facts §6)."""
    return ip if isinstance(ip, str) else socket.inet_ntoa(int(ip).to_bytes(4, "little"))


class LLMDataDist:
    """One node of a cluster whose nodes are processes; see the module docstring."""

    #: the node's CacheManager (``datadist_vendor`` uses the vendor-mode one)
    cache_manager_cls: type[MultiprocessCacheManager] = MultiprocessCacheManager

    def __init__(self, role: LLMRole, cluster_id: int) -> None:
        check_isinstance("role", role, [LLMRole], allow_none=False)
        check_uint64("cluster_id", cluster_id)
        self._role = role
        self._cluster_id = cluster_id
        self._rt: NodeRuntime | None = None

    @property
    def cluster_id(self) -> int:
        return self._cluster_id

    def init(self, options: dict[str, str]) -> None:
        global _current
        if self._rt is not None:
            return
        with _lock:
            if _current is not None and _current is not self:
                raise LLMException("Cannot init multiple LLMDataDists", status_code=LLMStatusCode.LLM_FAILED)
            check_isinstance("options", options, [dict], allow_none=False)
            rt = _process_runtime(_listen_address(options))
            rt.init(int(self._role), self._cluster_id, dict(options), self.cache_manager_cls)
            self._rt = rt
            _current = self

    def _runtime(self) -> NodeRuntime:
        if self._rt is None or self._rt.datadist is None:
            raise not_initialized()
        return self._rt

    @property
    def cache_manager(self) -> CacheManager:
        rt = self._runtime()
        assert rt.datadist is not None
        return rt.datadist.cache_manager

    def _links(self, clusters: Any, timeout: Any, op: str) -> tuple[LLMStatusCode, list[LLMStatusCode]]:
        rt = self._runtime()
        assert rt.datadist is not None
        rt.datadist._check_clusters(clusters, timeout)  # the reference's argument checks, same order
        rets = []
        for c in clusters:
            if op == "unlink":
                rets.append(rt.unlink(c.remote_cluster_id))
                continue
            if not c.remote_ip_info_list:
                rets.append(LLMStatusCode.LLM_LINK_FAILED)
                continue
            remote = c.remote_ip_info_list[0]
            rets.append(rt.link(c.remote_cluster_id, (_ip_text(remote["ip"]), int(remote["port"]))))
        overall = next((r for r in rets if r != LLMStatusCode.LLM_SUCCESS), LLMStatusCode.LLM_SUCCESS)
        return overall, rets

    def link_clusters(self, clusters: list[LLMClusterInfo] | tuple[LLMClusterInfo, ...],
                      timeout: int = 3000) -> tuple[LLMStatusCode, list[LLMStatusCode]]:
        return self._links(clusters, timeout, "link")

    def unlink_clusters(self, clusters: list[LLMClusterInfo] | tuple[LLMClusterInfo, ...], timeout: int = 3000,
                        force: bool = False) -> tuple[LLMStatusCode, list[LLMStatusCode]]:
        check_isinstance("force", force, [bool], allow_none=False)
        return self._links(clusters, timeout, "unlink")

    def finalize(self) -> None:
        """Finalize the node: the process keeps its agent and listener, and nothing of this node."""
        global _current
        with _lock:
            rt, self._rt = self._rt, None
            if _current is self:
                _current = None
        if rt is not None:
            rt.reset()

    def __repr__(self) -> str:
        return f"LLMDataDist(role={self._role.name}, cluster_id={self._cluster_id})"


def conformance_stats() -> dict[str, Any]:
    """The node host's stats hook: what this process's runtime holds (NIXL registrations, links, pins, resets)."""
    return _runtime.stats() if _runtime is not None else {}


def conformance_bench_raw(datadist: LLMDataDist, server_id: int, src: Cache, dst_cache_id: int, tpl: int, repeats: int,
                          per_layer: bool, notify: bool) -> list[float]:
    """The node host's benchmark hook: raw NIXL WRITEs of ``src`` into the linked server's cache (no push_cache)."""
    return datadist._runtime().bench_raw(server_id, src, dst_cache_id, tpl, repeats, per_layer, notify)


def conformance_inject(datadist: LLMDataDist, fault: Mapping[str, Any]) -> None:
    """The node host's fault hook: the reference engine's delay / drop_link / clear faults on this node."""
    if fault.get("kind") not in (*CONFORMANCE_FAULTS, "clear"):
        raise ValueError(f"fault kind {fault.get('kind')!r} is not injected here")
    node = datadist._runtime().node
    assert node is not None
    node.inject(dict(fault))


__all__ = [
    "BlocksCacheKey", "Cache", "CacheDesc", "CacheKey", "CacheKeyByIdAndIndex", "CacheManager", "DataType",
    "LLMClusterInfo", "LLMConfig", "LlmConfig", "LLMDataDist", "LLMException", "LLMRole", "LLMStatusCode",
    "Placement", "CONFORMANCE_DEVICE_MEMORY", "CONFORMANCE_FAULTS", "conformance_bench_raw", "conformance_inject",
    "conformance_stats", "__version__",
]

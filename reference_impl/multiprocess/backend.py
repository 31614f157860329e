"""Adapter: the reference with every node in its own process, bytes moved by NIXL (backend "reference-nixl").

``reference_impl.multiprocess.backend:backend`` satisfies the same protocol as
``reference_impl.backend:backend`` (docs/architecture.md). The parent holds proxies:

* ``node.api`` is the reference API namespace (the same classes exist in every process);
* ``node.cache_manager`` forwards each method call over the node's pipe and re-raises the node's exception
  (same type; LLMException with its status_code). Caches come back as :class:`~.wire.CacheProxy` handles;
* ``write_tensor`` / ``read_tensor`` / ``alloc_memory`` / ``read_memory`` / ``write_memory`` / ``inject``
  forward too; ``inject({"kind": "kill_node"})`` SIGKILLs the node's process.

The processes, their pipes and their pool are the node host's (:mod:`nodehost.process`). A call into a dead
node raises LLMException(LLM_FAILED). Node processes are pooled: ``cluster.close()`` resets each live node
process to its start-up state (:meth:`~.node.NodeRuntime.reset`) and keeps it for the next cluster; a process
whose reset fails, or that was killed, is never reused. ``REFERENCE_NIXL_POOL=0`` turns pooling off (every
cluster then starts and ends its own processes). The pool's processes end at interpreter exit.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import multiprocessing
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodehost.process import (
    DEFAULT_POOL_SIZE,
    READY_TIMEOUT_S,
    LeasedProcess,
    NodePool,
    NodeProcess,
    ProcessNode,
    end_all,
)

from .. import __version__
from ..backend import API, CAPABILITIES
from ..cache_manager import cache_manager_disabled
from ..enums import LLMRole
from ..status import LLMException, LLMStatusCode
from .cache_manager import MultiprocessCacheManager
from .node import node_main
from .wire import ParentCodec

#: environment variable: number of spare node processes kept started ahead of need (see NodePool)
SPARES_ENV = "REFERENCE_NIXL_SPARES"
#: environment variable: how many idle node processes the pool keeps between clusters (0: no pooling)
POOL_ENV = "REFERENCE_NIXL_POOL"

#: forwarded Node methods (besides inject)
NODE_METHODS = ("write_tensor", "read_tensor", "alloc_memory", "read_memory", "write_memory")


class NodeGone(LLMException):
    """The node's process is not running (killed, crashed or closed)."""


def _gone(why: str) -> NodeGone:
    return NodeGone(why, status_code=LLMStatusCode.LLM_FAILED)


def start_node_process(ctx: Any, authkey: bytes, codec: ParentCodec, label: str) -> NodeProcess:
    return NodeProcess(ctx, node_main, (), authkey, codec, label, _gone)


def _forwarder(name: str, template: Callable[..., Any]) -> Callable[..., Any]:
    """A method of CacheManagerProxy that runs ``name`` in the node process, with the template's signature."""
    def method(self: CacheManagerProxy, *args: Any, **kwargs: Any) -> Any:
        return self._node.proc.call("cm", name, args, kwargs)

    method.__name__ = name
    method.__qualname__ = f"CacheManagerProxy.{name}"
    functools.update_wrapper(method, template, assigned=("__doc__",), updated=())
    method.__signature__ = inspect.signature(template)  # type: ignore[attr-defined]
    return method


class CacheManagerProxy:
    """``node.cache_manager`` in the parent: every public method runs in the node process.

    The forwarders are methods of the class (one per public method of MultiprocessCacheManager, added below),
    not of the instance: code that moves the proxy between processes treats them as methods."""

    def __init__(self, node: MultiprocessNode) -> None:
        self._node = node

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._node.proc.call("cm_attr", name)

    def __repr__(self) -> str:
        return f"CacheManagerProxy(cluster_id={self._node.cluster_id}, pid={self._node.pid})"


for _name, _template in inspect.getmembers(MultiprocessCacheManager, callable):
    if not _name.startswith("_") and not isinstance(_template, type):
        setattr(CacheManagerProxy, _name, _forwarder(_name, _template))


class MultiprocessNode(ProcessNode):
    """A node of a MultiprocessCluster as the kit sees it (proxy of the node process)."""

    def __init__(self, cluster_id: int, proc: NodeProcess) -> None:
        self.cluster_id = cluster_id
        self.api = API
        self.proc = LeasedProcess(proc)
        self.cache_manager_enabled = False
        self._cm = CacheManagerProxy(self)

    @property
    def cache_manager(self) -> CacheManagerProxy:
        if not self.cache_manager_enabled:
            raise cache_manager_disabled()
        return self._cm

    def __repr__(self) -> str:
        return f"MultiprocessNode(cluster_id={self.cluster_id}, pid={self.pid})"


#: the pool of every MultiprocessBackend in this process (pooled processes are interchangeable)
_POOL = NodePool(key="reference-nixl")
#: pools made for spares without reuse (REFERENCE_NIXL_POOL=0 with REFERENCE_NIXL_SPARES); ended at exit too
_SPARE_POOLS: list[NodePool] = []
_LIVE: weakref.WeakSet[MultiprocessCluster] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    with _LIVE_LOCK:
        clusters = list(_LIVE)
    for cluster in clusters:
        try:
            cluster.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
    for pool in [_POOL, *_SPARE_POOLS]:
        pool.close()


class MultiprocessCluster:
    """Nodes in their own processes; links are NIXL connections plus a control connection."""

    def __init__(self, node_specs: Sequence[Mapping[str, Any]], start_method: str = "spawn", spares: int = 0,
                 pool: NodePool | None = None) -> None:
        parsed = []
        for spec in node_specs:
            role = spec.get("role", "MIX")
            role = role if isinstance(role, LLMRole) else LLMRole[str(role)]
            parsed.append((spec["cluster_id"], role, dict(spec.get("options", {}))))
        ids = [cid for cid, _, _ in parsed]
        for cid in ids:
            if ids.count(cid) > 1:
                raise ValueError(f"duplicate cluster_id {cid} in node_specs")
        self._ctx = multiprocessing.get_context(start_method)
        self._authkey = os.urandom(32)
        self._codec = ParentCodec()
        self._nodes: dict[int, MultiprocessNode] = {}
        self._procs: list[NodeProcess] = []
        self._closed = False
        self._lock = threading.Lock()
        self._pool = pool
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            if pool is not None:
                self._authkey = pool.authkey
                self._procs.extend(pool.lease(len(parsed), spares, self._codec, functools.partial(
                    start_node_process, self._ctx, pool.authkey, self._codec)))
            else:
                for _ in parsed:
                    self._procs.append(start_node_process(self._ctx, self._authkey, self._codec, "node"))
            for (cid, _, _), proc in zip(parsed, self._procs, strict=True):
                proc.label = f"node {cid}"
            deadline = time.monotonic() + READY_TIMEOUT_S
            for proc in self._procs:
                proc.wait_ready(deadline)
            for slot, ((cid, role, options), proc) in enumerate(zip(parsed, self._procs, strict=True)):
                node = MultiprocessNode(cid, proc)
                node.cache_manager_enabled = bool(proc.call("init", int(role), cid, options, slot))
                self._nodes[cid] = node
        except BaseException:
            self.close()
            raise

    @property
    def nodes(self) -> dict[int, MultiprocessNode]:
        return dict(self._nodes)

    def node(self, cluster_id: int) -> MultiprocessNode:
        return self._nodes[cluster_id]

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def link(self, client: int, server: int) -> None:
        self._link("link", client, server)

    def unlink(self, client: int, server: int) -> None:
        self._link("unlink", client, server)

    def _link(self, op: str, client: int, server: int) -> None:
        cnode = self.node(client)
        snode = self._nodes.get(server)
        if op == "link" and (snode is None or not snode.alive):
            status = LLMStatusCode.LLM_LINK_FAILED
        else:
            args = (server, snode.proc.address) if op == "link" and snode is not None else (server,)
            try:
                status = LLMStatusCode(cnode.proc.call(op, *args))
            except NodeGone:
                status = LLMStatusCode.LLM_LINK_FAILED if op == "link" else LLMStatusCode.LLM_UNLINK_FAILED
        if status != LLMStatusCode.LLM_SUCCESS:
            raise RuntimeError(f"{op} {client} -> {server} failed: {status} [{status}]")

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._pool is not None:
            self._pool.give_back(self._procs)
        else:
            end_all(self._procs)
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def __enter__(self) -> MultiprocessCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            try:
                self.close()
            except Exception:  # noqa: BLE001
                pass


class MultiprocessBackend:
    """The reference backend with one process per node and NIXL as the data plane."""

    def __init__(self, name: str = "reference-nixl", version: str = __version__, start_method: str = "spawn",
                 spares: int | None = None, pool: NodePool | None | bool = True) -> None:
        """``pool``: True (default) the process-wide pool, unless ``REFERENCE_NIXL_POOL=0``; False: every
        cluster starts and ends its own processes; or a NodePool of its own."""
        self.name = name
        self.version = version
        self.start_method = start_method
        self.spares = spares
        self._pool_choice = pool

    @staticmethod
    def _env_int(name: str, default: int) -> int:
        text = os.environ.get(name, "").strip()
        return int(text) if text.isdigit() else default

    def _spares(self) -> int:
        return self.spares if self.spares is not None else self._env_int(SPARES_ENV, 0)

    @property
    def pool(self) -> NodePool | None:
        if isinstance(self._pool_choice, NodePool):
            return self._pool_choice
        if self._pool_choice is False:
            return None
        size = self._env_int(POOL_ENV, DEFAULT_POOL_SIZE)
        if size == 0:
            return None
        _POOL.max_idle = size
        return _POOL

    def capabilities(self) -> dict[str, Any]:
        caps = {k: list(v) if isinstance(v, list) else v for k, v in CAPABILITIES.items()}
        caps["faults"] = ["delay", "drop_link", "kill_node"]
        return caps

    def open_cluster(self, node_specs: Sequence[Mapping[str, Any]]) -> MultiprocessCluster:
        pool = self.pool
        if pool is None and self._spares() > 0:
            pool = NodePool(max_idle=0)  # spares without reuse: taken processes end with their cluster
            _SPARE_POOLS.append(pool)
            self._pool_choice = pool
        return MultiprocessCluster(node_specs, self.start_method, self._spares(), pool)

    def __repr__(self) -> str:
        return f"MultiprocessBackend(name={self.name!r})"


backend = MultiprocessBackend()

"""The node host as a conformance-kit backend: one process per node, an ``llm_datadist``-compatible module in each.

``NodeHostBackend(module)`` satisfies the backend protocol (docs/architecture.md) for any implementation
module with the vendor's public API: the real ``llm_datadist`` (entry point ``llm_datadist``), or the
multi-process reference (``reference_impl.multiprocess.datadist``). The parent imports the module too, for
``node.api`` (the same classes as in the node processes, so their enums and value types cross the data-only wire
by name, :mod:`nodehost.wire`) and never calls it.

* ``open_cluster`` leases one node process per node spec from the backend's pool, and ``init``s each with
  the spec's role, cluster id and options; ``link`` / ``unlink`` make the client call ``link_clusters`` /
  ``unlink_clusters`` naming the server's listen address;
* ``node.cache_manager`` forwards each public method (signatures taken from the node) and re-raises the
  node's exception (an LLMException keeps its status_code);
* ``write_tensor`` / ``read_tensor`` / ``alloc_memory`` / ``read_memory`` / ``write_memory`` run in the node
  through its memory accessors, or, for a node on this host, as copies in its shared memory
  (:mod:`nodehost.node_access`); ``inject({"kind": "kill_node"})`` SIGKILLs the node's process, other faults
  need the implementation's ``conformance_inject`` hook;
* ``cluster.close()`` gives the processes back to the pool (reset, or ended when the reset fails).

Settings (``nodehost.settings``: each from its environment variable, else from the YAML file ``NODEHOST_CONFIG``
names, else its default): ``pool`` / ``NODEHOST_POOL`` (idle processes kept, default 8; 0: no reuse),
``device_ids`` / ``NODEHOST_DEVICE_IDS`` (device ids handed to the nodes of a cluster in order, e.g. ``0,1``),
``device_ips`` / ``NODEHOST_DEVICE_IPS`` (their listen ips, same order), ``device_memory`` /
``NODEHOST_DEVICE_MEMORY`` (see nodehost.memory), ``hosts`` / ``NODEHOST_HOSTS`` (execnet SSH specs,
``ssh=user@host//python=...``, comma-separated: other hosts, see nodehost.hosts; node i of a cluster runs on host
i modulo their number). ``NODEHOST_LISTEN_IP`` (default 127.0.0.1) is read by the node processes.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import inspect
import multiprocessing
import os
import threading
import time
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from datawire.vocabulary import NODE_API_NAMES

from . import settings
from .driver import node_main
from .environment import NODE_ENV
from .hosts import host
from .memory import DEVICE_MEMORY_ENV, device_accessor_kind
from .node_access import ProcessNode
from .process import (
    READY_TIMEOUT_S,
    LeasedProcess,
    NodePool,
    NodeProcess,
    end_all,
)
from .shared import SharedView
from .vendor_api import CACHE_MANAGER
from .wire import ParentCodec
from .wire import proxy_class as cache_proxy_class

SPEC_VERSIONS = ["8.3.RC1.alpha003", "8.5.0", "9.0.0"]


class CacheManagerProxy:
    """``node.cache_manager`` in the parent: the vendor's cache-manager methods, each run in the node.

    The methods are those of the class :func:`proxy_class` makes for the implementation's signatures (methods
    of the class, not of the instance: a kit that moves the proxy between processes treats them as methods)."""

    def __init__(self, node: HostNode) -> None:
        self._node = node

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"{name!r}: not a cache-manager method of the vendor API that this implementation has")

    def __repr__(self) -> str:
        return f"CacheManagerProxy(cluster_id={self._node.cluster_id}, pid={self._node.pid})"


def _forwarder(name: str, sig: inspect.Signature | None) -> Any:
    def method(self: CacheManagerProxy, *args: Any, **kwargs: Any) -> Any:
        return self._node.proc.call("cm", name, args, kwargs)

    method.__name__ = name
    method.__qualname__ = f"CacheManagerProxy.{name}"
    if sig is not None:
        self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
        method.__signature__ = sig.replace(parameters=[self_param, *sig.parameters.values()])  # type: ignore[attr-defined]
    return method


_PROXY_CLASSES: dict[tuple[tuple[str, str], ...], type] = {}
_PROXY_LOCK = threading.Lock()


def proxy_class(signatures: Mapping[str, inspect.Signature | None]) -> type:
    """The CacheManagerProxy subclass with a forwarder per method the node reported (one class per set)."""
    names = {n: sig for n, sig in signatures.items() if n in CACHE_MANAGER}
    key = tuple(sorted((n, str(sig)) for n, sig in names.items()))
    with _PROXY_LOCK:
        cls = _PROXY_CLASSES.get(key)
        if cls is None:
            cls = _PROXY_CLASSES[key] = type("CacheManagerProxy", (CacheManagerProxy,),
                                             {n: _forwarder(n, sig) for n, sig in names.items()})
        return cls


class HostNode(ProcessNode):
    """A node as the kit sees it: a proxy of its process."""

    def __init__(self, cluster_id: int, proc: NodeProcess, api: Any, init: Mapping[str, Any]) -> None:
        self.cluster_id = cluster_id
        self.api = api
        self.proc = LeasedProcess(proc)
        self.address = tuple(init["address"])
        self.cache_manager_enabled = bool(init["cache_manager"])
        signatures = init.get("signatures")
        if signatures is not None or proc.cm_class is None:  # else the same class as the process's last cluster
            proc.cm_class = proxy_class(signatures or {})
        self._cm = proc.cm_class(self)
        self._proxy_cls = cache_proxy_class(api.Cache)  # what this node's caches are in the parent
        shared = init.get("shared")
        # the node's memory is mapped here only for a process on this host whose DEVICE memory is host memory
        if proc.host is None and isinstance(shared, dict) and shared.get("device_is_host") is True:
            self.shared = SharedView(proc.pid)
            self.shared.update(shared.get("segments") or [])

    def owns(self, cache: Any) -> bool:
        return type(cache) is self._proxy_cls and getattr(cache, "_nh_owner", None) == self.cluster_id

    @property
    def cache_manager(self) -> CacheManagerProxy:
        if not self.cache_manager_enabled:
            self.proc.call("cm_check")  # raises what the implementation raises
        return self._cm

    def __repr__(self) -> str:
        return f"HostNode(cluster_id={self.cluster_id}, pid={self.pid})"


class HostCluster:
    """The nodes of one cluster, each in a process of the backend's pool."""

    def __init__(self, backend: NodeHostBackend, node_specs: Sequence[Mapping[str, Any]]) -> None:
        parsed = []
        for spec in node_specs:
            role = spec.get("role", "MIX")
            parsed.append((spec["cluster_id"], str(getattr(role, "name", role)), dict(spec.get("options", {}))))
        ids = [cid for cid, _, _ in parsed]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate cluster_id in node_specs: {ids}")
        self._backend = backend
        self._codec = ParentCodec(backend.module)
        self._nodes: dict[int, HostNode] = {}
        self._procs: list[NodeProcess] = []
        self._closed = False
        self._lock = threading.Lock()
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            config = settings.load()
            devices, ips = config.device_ids, config.device_ips
            if devices and len(devices) < len(parsed):
                raise ValueError(f"{config.source['device_ids']} names {len(devices)} devices; this cluster has "
                                 f"{len(parsed)} nodes")
            self._procs = self._lease(len(parsed))
            deadline = time.monotonic() + READY_TIMEOUT_S
            inits = []
            for slot, ((cid, role, options), proc) in enumerate(zip(parsed, self._procs, strict=True)):
                proc.label = f"node {cid}"
                proc.wait_ready(deadline)
                args = (role, cid, options, int(devices[slot]) if devices else None,
                        ips[slot] if slot < len(ips) else None)
                inits.append((slot, cid, args, proc.submit("init", *args)))  # every node's init at once
            for slot, cid, args, answer in inits:
                self._nodes[cid] = self._init_node(slot, cid, args, answer, deadline)
        except BaseException:
            self.close()
            raise

    def _lease(self, n: int) -> list[NodeProcess]:
        """A process per slot: local, or on the slot's host; from the slot's pool when pooling."""
        procs: list[NodeProcess] = []
        authkey = os.urandom(32)
        try:
            for slot in range(n):
                where = self._backend.host_for(slot)
                pool = self._backend.pool(where)
                if pool is None:
                    procs.append(self._backend.start_process("node", self._codec, authkey, where))
                    continue
                start = functools.partial(self._start_in, pool, where)
                procs += pool.lease(1, 0, self._codec, start)
        except BaseException:
            end_all(procs)
            raise
        return procs

    def _start_in(self, pool: NodePool, where: str | None, label: str) -> NodeProcess:
        return self._backend.start_process(label, self._codec, pool.authkey, where)

    def _pool_of(self, proc: NodeProcess) -> NodePool | None:
        return self._backend.pool(proc.host)

    def _init_node(self, slot: int, cid: int, args: tuple[Any, ...], answer: Any, deadline: float) -> HostNode:
        proc = self._procs[slot]
        reset_failed = not proc.reset_succeeded()
        try:
            if reset_failed:  # its init's answer may never come (a reset that hangs holds the node's reading thread)
                raise RuntimeError(f"{proc.label}: the reset before this cluster failed")
            init = answer(None)
        except Exception as exc:
            pool = self._pool_of(proc)
            if pool is None or proc.lease <= 1 or not (reset_failed or self._may_be_the_process(exc)):
                raise
            # a reused process that cannot host the new LLMDataDist: replace it by a fresh one, once
            pool.discard(proc)
            proc = self._procs[slot] = self._start_in(pool, proc.host, f"node {cid}")
            proc.lease += 1
            proc.wait_ready(deadline)
            init = proc.call("init", *args)
        return HostNode(cid, proc, self._backend.api, init)

    def _may_be_the_process(self, exc: Exception) -> bool:
        """Whether an init failure may come from the reused process rather than from the options: not a
        TypeError/ValueError, and an LLMException only with LLM_FAILED (the vendor's "Cannot init multiple
        LLMDataDists"); a bad option fails the same way in a fresh process, so it is not retried."""
        if isinstance(exc, (TypeError, ValueError)):
            return False
        status = getattr(exc, "status_code", None)
        failed = self._backend.module.LLMStatusCode.LLM_FAILED
        return status is None or int(getattr(status, "value", status)) == int(failed.value)

    @property
    def nodes(self) -> dict[int, HostNode]:
        return dict(self._nodes)

    def node(self, cluster_id: int) -> HostNode:
        return self._nodes[cluster_id]

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def link(self, client: int, server: int) -> None:
        self._link("link", client, server)

    def unlink(self, client: int, server: int) -> None:
        self._link("unlink", client, server)

    def _link(self, op: str, client: int, server: int) -> None:
        status_enum = self._backend.module.LLMStatusCode
        cnode = self.node(client)
        snode = self._nodes.get(server)
        if snode is None or (op == "link" and not snode.alive):
            status = int(status_enum.LLM_LINK_FAILED.value if op == "link" else status_enum.LLM_UNLINK_FAILED.value)
        else:
            try:
                status = int(cnode.proc.call(op, server, snode.address))
            except Exception:  # noqa: BLE001 - a dead client, or the implementation raised: the link failed
                if op == "unlink" and not cnode.alive:
                    return  # unlinking from a dead node: nothing is left to unlink
                failed = status_enum.LLM_LINK_FAILED if op == "link" else status_enum.LLM_UNLINK_FAILED
                status = int(failed.value)
        ok = {int(status_enum.LLM_SUCCESS.value)}
        if op == "unlink":
            ok.add(int(status_enum.LLM_NOT_YET_LINK.value))
        if status not in ok:
            name = next((m.name for m in status_enum if int(m.value) == status), str(status))
            raise RuntimeError(f"{op} {client} -> {server} failed: LLMStatusCode.{name}")

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        pools: dict[int, tuple[NodePool | None, list[NodeProcess]]] = {}
        for proc in self._procs:
            pool = self._pool_of(proc)
            pools.setdefault(id(pool), (pool, []))[1].append(proc)
        for pool, procs in pools.values():
            if pool is not None:
                pool.give_back(procs)
            else:
                end_all(procs)
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def __enter__(self) -> HostCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NodeHostBackend:
    """A backend whose nodes run ``module`` (an llm_datadist-compatible implementation) one per process."""

    def __init__(self, module: str, name: str | None = None, version: str | None = None,
                 pool: NodePool | bool = True, start_method: str = "spawn", product: str = "llm_datadist",
                 hosts: Sequence[str] | None = None) -> None:
        """``hosts`` (else $NODEHOST_HOSTS / the config file's ``hosts``): execnet SSH specs of the other hosts that
        run the nodes (nodehost.hosts)."""
        self.module_name = module
        self.name = name or f"nodehost-{module}"
        self._version = version
        self._pool_choice = pool
        self.start_method = start_method
        self.product = product
        self._module: Any = None
        self._hosts = list(hosts) if hosts is not None else None

    @property
    def hosts(self) -> list[str]:
        if self._hosts is not None:
            return list(self._hosts)
        return list(settings.load().hosts)

    def host_for(self, slot: int) -> str | None:
        hosts = self.hosts
        return hosts[slot % len(hosts)] if hosts else None

    @property
    def module(self) -> Any:
        if self._module is None:
            try:
                self._module = importlib.import_module(self.module_name)
            except ImportError as exc:
                raise ImportError(f"the implementation module {self.module_name!r} does not import ({exc}); for the "
                                  "vendor package, source CANN's set_env.sh first (docs/ascend-host.md)") from None
        return self._module

    @property
    def version(self) -> str:  # type: ignore[override]
        if self._version is not None:
            return self._version
        try:
            return str(getattr(self.module, "__version__", "unknown"))
        except ImportError:
            return "not installed"

    @property
    def api(self) -> SimpleNamespace:
        mod = self.module
        return SimpleNamespace(**{n: getattr(mod, n) for n in NODE_API_NAMES if hasattr(mod, n)})

    def pool(self, where: str | None = None) -> NodePool | None:
        """The pool for nodes on host ``where`` (None: local ones); None when pooling is off."""
        if isinstance(self._pool_choice, NodePool):
            if where is None:
                return self._pool_choice
            return _shared_pool(f"{self._pool_choice.key or id(self._pool_choice)}@{where}")
        if self._pool_choice is False:
            return None
        size = settings.load().pool
        if size == 0:
            return None
        pool = _shared_pool(self.module_name if where is None else f"{self.module_name}@{where}")
        pool.max_idle = size
        return pool

    def start_process(self, label: str, codec: ParentCodec, authkey: bytes, where: str | None = None) -> NodeProcess:
        gone = functools.partial(_gone, self.module)
        # the node processes read the device-memory policy from their environment (a config file's value too)
        env = {**NODE_ENV, DEVICE_MEMORY_ENV: settings.load().device_memory}
        if where is not None:  # another host: the pool's key is every node's control-plane key there too
            return NodeProcess.on_host(host(where), self.module_name, env, authkey, codec, label, gone)
        ctx = multiprocessing.get_context(self.start_method)
        return NodeProcess(ctx, node_main, (self.module_name, env), authkey, codec, label, gone)

    def device_memory(self) -> str | None:
        says_host = getattr(self.module, "CONFORMANCE_DEVICE_MEMORY", None) == "host"
        return device_accessor_kind(settings.load().device_memory, says_host)

    def capabilities(self) -> dict[str, Any]:
        """Reads the settings first, so a bad one ends a certification before anything runs (usage error)."""
        settings.load()
        mod = self.module
        placements = ["HOST"] + (["DEVICE"] if self.device_memory() else [])
        faults = ["kill_node"] + [f for f in getattr(mod, "CONFORMANCE_FAULTS", ()) if f != "kill_node"]
        return {
            "placements": placements, "blocks_cache": True, "register_cache": True, "raw_memory": True,
            "faults": sorted(set(faults), key=faults.index), "memory_pools": True, "threads": True,
            "spec_versions": list(SPEC_VERSIONS), "product": self.product, "max_cache_bytes": 1 << 28,
        }

    def open_cluster(self, node_specs: Sequence[Mapping[str, Any]]) -> HostCluster:
        return HostCluster(self, node_specs)

    def __repr__(self) -> str:
        return f"NodeHostBackend(module={self.module_name!r}, name={self.name!r})"


def _gone(module: Any, why: str) -> BaseException:
    return module.LLMException(why, status_code=module.LLMStatusCode.LLM_FAILED)


_POOLS: dict[str, NodePool] = {}
_POOLS_LOCK = threading.Lock()
_LIVE: set[HostCluster] = set()
_LIVE_LOCK = threading.Lock()


#: the control-plane key of every pooled node process this process starts, here and on other hosts: nodes of one
#: cluster may come from different pools (one per host), and must accept each other's links
_POOL_KEY = os.urandom(32)


def _shared_pool(key: str) -> NodePool:
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = NodePool(key=key)
            pool.authkey = _POOL_KEY
        return pool


@atexit.register
def _close_all() -> None:
    with _LIVE_LOCK:
        clusters = list(_LIVE)
    for cluster in clusters:
        try:
            cluster.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
    for pool in pools:
        pool.close()


#: the real vendor package (entry point ``llm_datadist``)
llm_datadist = NodeHostBackend("llm_datadist", name="llm_datadist")
#: the multi-process reference through its vendor API (docs/nixl.md)
reference = NodeHostBackend("reference_impl.multiprocess.datadist", name="reference-nodehost", product="emulator")
#: the same in vendor mode: must fail exactly the clauses whose `deviation:` says so, as reference-vendor does
reference_vendor = NodeHostBackend("reference_impl.multiprocess.datadist_vendor", name="reference-vendor-nodehost",
                                   product="emulator")

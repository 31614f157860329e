"""Adapter: the reference with every node in its own process, bytes moved by NIXL (backend "reference-nixl").

``reference_impl.multiprocess.backend:backend`` satisfies the same protocol as
``reference_impl.backend:backend`` (docs/architecture.md). The parent holds proxies:

* ``node.api`` is the reference API namespace (the same classes exist in every process);
* ``node.cache_manager`` forwards each method call over the node's pipe and re-raises the node's exception
  (same type; LLMException with its status_code). Caches come back as :class:`~.wire.CacheProxy` handles;
* ``write_tensor`` / ``read_tensor`` / ``alloc_memory`` / ``read_memory`` / ``write_memory`` / ``inject``
  forward too; ``inject({"kind": "kill_node"})`` SIGKILLs the node's process.

A call into a dead node raises LLMException(LLM_FAILED). ``cluster.close()`` (also run at interpreter exit)
ends every process the cluster started.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import itertools
import multiprocessing
import os
import pickle
import signal
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import __version__
from ..backend import API, CAPABILITIES
from ..cache_manager import cache_manager_disabled
from ..enums import LLMRole
from ..status import LLMException, LLMStatusCode
from .cache_manager import MultiprocessCacheManager
from .control import shutdown_connection
from .node import node_main
from .wire import ParentCodec, decode_exception

READY_TIMEOUT_S = 120.0
#: environment variable: number of spare node processes kept started (opt-in; see SparePool)
SPARES_ENV = "REFERENCE_NIXL_SPARES"
STOP_GRACE_S = 3.0

#: forwarded Node methods (besides inject)
NODE_METHODS = ("write_tensor", "read_tensor", "alloc_memory", "read_memory", "write_memory")


class NodeGone(LLMException):
    """The node's process is not running (killed, crashed or closed)."""


class _Pending:
    __slots__ = ("event", "status", "value")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.status = ""
        self.value: Any = None


class NodeProcess:
    """One node process and the pipe to it; calls may come from several threads at once."""

    def __init__(self, ctx: Any, authkey: bytes, codec: ParentCodec, label: str) -> None:
        self.codec = codec
        self.label = label
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=node_main, args=(child_conn, os.getpid(), authkey), daemon=True,
                                   name=f"reference-nixl-{label}")
        self.process.start()
        child_conn.close()
        self.pid: int = self.process.pid
        self.address: tuple[str, int] | None = None
        self.dead = threading.Event()
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._reader: threading.Thread | None = None

    def wait_ready(self, deadline: float) -> None:
        while not self.conn.poll(0.05):
            if not self.process.is_alive():
                raise RuntimeError(f"{self.label} process exited during start-up (exit code {self.process.exitcode})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.label} process did not start within {READY_TIMEOUT_S:.0f} s")
        try:
            kind, *payload = pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError):
            self.process.join(1.0)
            raise RuntimeError(f"{self.label} process exited during start-up (exit code {self.process.exitcode}); "
                               "a script that opens clusters needs an `if __name__ == '__main__':` guard "
                               "(spawn start method)") from None
        if kind == "fail":
            kind0, payload0 = payload[0]
            raise decode_exception(kind0, payload0, pickle.loads, f"{self.label} start-up")
        self.address = tuple(payload[0])  # type: ignore[assignment]
        self._reader = threading.Thread(target=self._read_loop, name=f"{self.label}-reader", daemon=True)
        self._reader.start()

    def _read_loop(self) -> None:
        try:
            while True:
                data = self.conn.recv_bytes()
                try:
                    req, status, value, _seen = self.codec.loads(data)
                except Exception as exc:  # noqa: BLE001 - an undecodable reply fails that request only
                    req, status, value = getattr(exc, "req", 0), "local_err", exc
                with self._lock:
                    p = self._pending.pop(req, None)
                if p is not None:
                    p.status, p.value = status, value
                    p.event.set()
        except (EOFError, OSError):
            pass
        finally:
            self.dead.set()
            with self._lock:
                pending, self._pending = self._pending, {}
            for p in pending.values():
                p.status = "gone"
                p.event.set()

    def _gone(self) -> NodeGone:
        return NodeGone(f"{self.label} process (pid {self.pid}) is not running",
                        status_code=LLMStatusCode.LLM_FAILED)

    def call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        p = _Pending()
        req = next(self._ids)
        data = self.codec.dumps((req, op, args, kwargs))
        with self._lock:
            if self.dead.is_set():
                raise self._gone()
            self._pending[req] = p
        try:
            with self._send_lock:
                self.conn.send_bytes(data)
        except (OSError, ValueError):
            with self._lock:
                self._pending.pop(req, None)
            raise self._gone() from None
        p.event.wait()
        if p.status == "ok":
            return p.value
        if p.status == "err":
            ekind, epayload = p.value
            raise decode_exception(ekind, epayload, self.codec.loads, self.label)
        if p.status == "local_err":
            raise p.value
        raise self._gone()

    def kill(self) -> None:
        """SIGKILL the process and wait until it is gone."""
        if self.process.pid is not None and self.process.exitcode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.join(10.0)
        if self._reader is not None:
            self.dead.wait(5.0)
        else:
            self.dead.set()

    def request_exit(self) -> None:
        if self.dead.is_set():
            return
        try:
            with self._send_lock:
                self.conn.send_bytes(self.codec.dumps((0, "exit", (), {})))
        except (OSError, ValueError):
            pass

    def finish(self, deadline: float) -> None:
        """Wait for the process until ``deadline``, then kill it; close the pipe."""
        self.process.join(max(0.0, deadline - time.monotonic()))
        if self.process.exitcode is None:
            self.kill()
        self.process.join(5.0)
        shutdown_connection(self.conn)
        if self._reader is not None:
            self._reader.join(2.0)
        try:
            self.process.close()
        except ValueError:
            pass


def _forwarder(node: MultiprocessNode, name: str, template: Callable[..., Any] | None) -> Callable[..., Any]:
    def method(*args: Any, **kwargs: Any) -> Any:
        return node.proc.call("cm", name, args, kwargs)

    method.__name__ = method.__qualname__ = name
    if template is not None:
        functools.update_wrapper(method, template, assigned=("__doc__",), updated=())
        sig = inspect.signature(template)
        method.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[p for p in sig.parameters.values() if p.name != "self"])
    return method


class CacheManagerProxy:
    """``node.cache_manager`` in the parent: every public method runs in the node process."""

    def __init__(self, node: MultiprocessNode) -> None:
        self._node = node

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        template = getattr(MultiprocessCacheManager, name, None)
        if callable(template) and not isinstance(template, type):
            fn = _forwarder(self._node, name, template)
            self.__dict__[name] = fn
            return fn
        return self._node.proc.call("cm_attr", name)

    def __repr__(self) -> str:
        return f"CacheManagerProxy(cluster_id={self._node.cluster_id}, pid={self._node.pid})"


class MultiprocessNode:
    """A node of a MultiprocessCluster as the kit sees it (proxy of the node process)."""

    def __init__(self, cluster_id: int, proc: NodeProcess) -> None:
        self.cluster_id = cluster_id
        self.api = API
        self.proc = proc
        self.cache_manager_enabled = False
        self._cm = CacheManagerProxy(self)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return not self.proc.dead.is_set()

    @property
    def cache_manager(self) -> CacheManagerProxy:
        if not self.cache_manager_enabled:
            raise cache_manager_disabled()
        return self._cm

    def write_tensor(self, cache: Any, index: int, data: np.ndarray) -> None:
        self.proc.call("node", "write_tensor", (cache, index, np.asarray(data)))

    def read_tensor(self, cache: Any, index: int) -> np.ndarray:
        return self.proc.call("node", "read_tensor", (cache, index))

    def alloc_memory(self, placement: str, nbytes: int) -> int:
        return self.proc.call("node", "alloc_memory", (placement, nbytes))

    def read_memory(self, addr: int, nbytes: int) -> np.ndarray:
        return self.proc.call("node", "read_memory", (addr, nbytes))

    def write_memory(self, addr: int, data: np.ndarray) -> None:
        self.proc.call("node", "write_memory", (addr, np.asarray(data)))

    def inject(self, fault: Mapping[str, Any]) -> None:
        if not isinstance(fault, Mapping):
            raise TypeError(f"fault must be a mapping, got {type(fault).__name__}")
        if fault.get("kind") == "kill_node":
            self.proc.kill()
            return
        self.proc.call("node", "inject", (dict(fault),))

    def stats(self) -> dict[str, Any]:
        return self.proc.call("stats")

    def __repr__(self) -> str:
        return f"MultiprocessNode(cluster_id={self.cluster_id}, pid={self.pid})"


class SparePool:
    """Opt-in (``REFERENCE_NIXL_SPARES=N`` or ``MultiprocessBackend(spares=N)``): N node processes started
    ahead of time, so opening a cluster does not wait for Python start-up and NIXL agent creation (~0.8 s).

    A spare belongs to no cluster until a cluster takes it; from then on it ends with that cluster like any
    node process. Spares left at interpreter exit are ended by the atexit hook (and by their watchdog if
    the parent dies). All spares of a parent share one authkey.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: list[NodeProcess] = []
        self.authkey = os.urandom(32)

    def take(self, ctx: Any, n: int, keep: int, codec: ParentCodec) -> list[NodeProcess]:
        with self._lock:
            taken = [p for p in self._procs if p.process.exitcode is None][:n]
            self._procs = [p for p in self._procs if p not in taken and p.process.exitcode is None]
            while len(taken) < n:
                taken.append(NodeProcess(ctx, self.authkey, codec, "node"))
            while len(self._procs) < keep:
                self._procs.append(NodeProcess(ctx, self.authkey, codec, "spare node"))
        for p in taken:
            p.codec = codec
        return taken

    def close(self) -> None:
        with self._lock:
            procs, self._procs = self._procs, []
        for p in procs:
            p.kill()
            p.finish(time.monotonic())


_SPARES = SparePool()
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
    _SPARES.close()


class MultiprocessCluster:
    """Nodes in their own processes; links are NIXL connections plus a control connection."""

    def __init__(self, node_specs: Sequence[Mapping[str, Any]], start_method: str = "spawn", spares: int = 0) -> None:
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
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            if spares > 0:
                self._authkey = _SPARES.authkey
                self._procs.extend(_SPARES.take(self._ctx, len(parsed), spares, self._codec))
            else:
                for _ in parsed:
                    self._procs.append(NodeProcess(self._ctx, self._authkey, self._codec, "node"))
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
        for proc in self._procs:
            proc.request_exit()
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in self._procs:
            proc.finish(deadline)
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
                 spares: int | None = None) -> None:
        self.name = name
        self.version = version
        self.start_method = start_method
        self.spares = spares

    def _spares(self) -> int:
        if self.spares is not None:
            return self.spares
        text = os.environ.get(SPARES_ENV, "0")
        return int(text) if text.isdigit() else 0

    def capabilities(self) -> dict[str, Any]:
        caps = {k: list(v) if isinstance(v, list) else v for k, v in CAPABILITIES.items()}
        caps["faults"] = ["delay", "drop_link", "kill_node"]
        return caps

    def open_cluster(self, node_specs: Sequence[Mapping[str, Any]]) -> MultiprocessCluster:
        return MultiprocessCluster(node_specs, self.start_method, self._spares())

    def __repr__(self) -> str:
        return f"MultiprocessBackend(name={self.name!r})"


backend = MultiprocessBackend()

"""The node process of the node host: one ``llm_datadist``-compatible implementation, driven by its public API.

``node_main(conn, parent_pid, authkey, module_name)`` imports the implementation module by name and serves the
parent's requests (:mod:`nodehost.serve`). Everything it does to the implementation goes through the vendor's
public Python API as the facts sheet documents it (the names are listed in :mod:`nodehost.vendor_api`; a
self-test parses this file and checks them):

* ``init``: ``vendor.LLMDataDist(role, cluster_id)`` and ``datadist.init(options)``: the suite's option strings
  plus ``llm.listenIpInfo`` (this process's listen address) and ``ge.exec.deviceId`` when a device is assigned;
* ``link`` / ``unlink``: ``datadist.link_clusters([info])`` / ``datadist.unlink_clusters([info])`` with a
  ``vendor.LLMClusterInfo`` naming the server's cluster id and listen address;
* ``cm``: a call of a cache-manager method (only those the facts sheet lists);
* memory: through :mod:`nodehost.memory` accessors, by the addresses in ``cache.tensor_addrs``;
* ``reset``: ``datadist.finalize()`` and back to the start-up state (the pool reuses the process).

Convention the name check relies on: vendor objects are held in variables named ``vendor`` (the module),
``datadist``, ``info``, ``cm``, ``cache``, ``desc`` and ``exc``; only attributes on those names count as
vendor names.
"""

from __future__ import annotations

import errno
import importlib
import inspect
import os
import socket
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import shared
from .memory import (
    DEVICE_MEMORY_ENV,
    HostMemory,
    Intervals,
    MemoryAccessor,
    device_accessor_kind,
    make_device_accessor,
)
from .node_access import JOINED_READS
from .serve import ActiveRequests, report_start_failure, serve, start_watchdog
from .vendor_api import CACHE_MANAGER
from .wire import NodeCodec

#: environment variable: the address node processes listen on (the ip; the port is picked per process)
LISTEN_IP_ENV = "NODEHOST_LISTEN_IP"
#: environment variable the node processes get: the pool's shared secret, hex
KEY_ENV = "NODEHOST_KEY"
RESET_DRAIN_S = 5.0
#: requests that never wait on anything (see VendorNode.quick); the others (a push, a link, a deallocation that
#: revokes pins) run on a worker thread, so requests from several of the parent's threads overlap. A reset runs
#: on the reading thread too, though it waits for the previous cluster's requests: what the parent sends after
#: it (the next cluster's init, sent before the reset's answer comes back) must run after it
QUICK_OPS = frozenset({"node", "node_each", "node_read", "node_alloc", "init", "cm_check", "reset"})
QUICK_CM = frozenset({"allocate_cache", "register_cache", "allocate_blocks_cache", "register_blocks_cache"})
LINK_TIMEOUT_MS = 10000


#: how many listen ports a node tries at init (each free when picked; another process may bind it before the node)
PORT_TRIES = 3


def _free_port(ip: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((ip, 0))
        return int(s.getsockname()[1])


def _status_int(code: Any) -> int:
    return int(getattr(code, "value", code))


class VendorNode:
    """What a node process holds: the implementation module, at most one LLMDataDist, memory accessors."""

    def __init__(self, module_name: str) -> None:
        self.module_name = module_name
        self.vendor = importlib.import_module(module_name)
        self.codec = NodeCodec(self.vendor)
        self.active = ActiveRequests()
        self.host = HostMemory()
        self.device: MemoryAccessor | None = None
        self._device_ranges = Intervals()  # known DEVICE memory
        self._ranges_lock = threading.Lock()
        self.datadist: Any = None
        self._signatures_sent: type | None = None  # the cache-manager class whose signatures the parent has
        self.ip = os.environ.get(LISTEN_IP_ENV, "127.0.0.1")
        self.port = _free_port(self.ip)
        self.listen = (self.ip, self.port)  # this node's address in links (the device's ip when one is given)
        self.resets = 0

    # ---- requests ------------------------------------------------------------------------------------
    def quick(self, op: str, args: Sequence[Any]) -> bool:
        """Requests that never wait (on a peer, a pin or a push): nodehost.serve answers them on its reading
        thread."""
        return op in QUICK_OPS or (op == "cm" and bool(args) and args[0] in QUICK_CM)

    def dispatch(self, op: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if op == "cm":
            name, cargs, ckwargs = args
            return self._cm_call(name, cargs, ckwargs)
        if op == "node":
            name, nargs = args
            return self._node_call(name, nargs)
        if op == "node_each":  # one request for a per-tensor step; stops at the first exception
            name, arg_lists = args
            return [self._node_call(name, nargs) for nargs in arg_lists]
        if op == "node_read":  # node_each of a read, its results joined: [sizes, bytes]
            name, arg_lists = args
            if name not in JOINED_READS:
                raise ValueError(f"node_read: {name!r} is not one of {JOINED_READS}")
            got = [np.asarray(self._node_call(name, nargs), dtype=np.uint8).reshape(-1) for nargs in arg_lists]
            return [[int(g.size) for g in got], np.concatenate(got) if got else np.empty(0, dtype=np.uint8)]
        if op == "init":
            return self.init(*args)
        if op == "link":
            return self.link(*args)
        if op == "unlink":
            return self.unlink(*args)
        if op == "node_alloc":  # alloc_memory of each, with the segment of the memory where it is shared
            h = shared.heap()
            addrs = [self._node_call("alloc_memory", nargs) for nargs in args[0]]
            return [[a, h.segment_at(a) if h is not None else None] for a in addrs]
        if op == "cm_check":
            return self._datadist().cache_manager is not None
        if op == "reset":
            self.reset()
            return self.stats()
        if op == "stats":
            return self.stats()
        raise ValueError(f"unknown node request {op!r}")

    def _datadist(self) -> Any:
        if self.datadist is None:
            raise RuntimeError("node is not initialized")
        return self.datadist

    def stats(self) -> dict[str, Any]:
        """What the process holds (the pool's self-tests read it after a reset); an implementation's own figures
        come from its ``conformance_stats()`` hook, where it has one."""
        own = getattr(self.vendor, "conformance_stats", None)
        return {**(own() if own is not None else {}), "pid": os.getpid(), "initialized": self.datadist is not None,
                "resets": self.resets, "host_allocations": self.host.count(), "address": (self.ip, self.port)}

    # ---- the LLMDataDist ----------------------------------------------------------------------------
    def init(self, role_name: str, cluster_id: int, options: Mapping[str, str], device_id: int | None,
             listen_ip: str | None) -> dict[str, Any]:
        if self.datadist is not None:
            raise RuntimeError("node is already initialized (reset it first)")
        vendor = self.vendor
        ip = listen_ip or self.ip
        for attempt in range(PORT_TRIES):
            self.listen = (ip, self.port)
            opts = {str(k): str(v) for k, v in options.items()}
            opts.setdefault("llm.listenIpInfo", f"{ip}:{self.port}")
            if device_id is not None:
                opts.setdefault("ge.exec.deviceId", str(device_id))
            datadist = vendor.LLMDataDist(getattr(vendor.LLMRole, role_name), cluster_id)
            try:
                datadist.init(opts)
                break
            except OSError as bind_error:  # not a vendor object (``exc`` names those: tests/nodehost/test_vendor_names)
                # the port was free when this process started, and another process may have bound it since (a
                # loaded machine opens many): another free port, where the caller did not name the address
                if bind_error.errno != errno.EADDRINUSE or "llm.listenIpInfo" in options or attempt == PORT_TRIES - 1:
                    raise
                self.port = _free_port(self.ip)
        self.datadist = datadist
        self.codec = self.codec.successor(cluster_id)
        says_host = getattr(vendor, "CONFORMANCE_DEVICE_MEMORY", None) == "host"
        kind = device_accessor_kind(os.environ.get(DEVICE_MEMORY_ENV, "auto"), says_host)
        if self.device is None or self.device.kind != kind:
            self.device = make_device_accessor(kind, device_id or 0, self.host)
        try:
            cm = datadist.cache_manager
        except Exception:  # noqa: BLE001 - the cache manager is off in these options
            self._signatures_sent = None
            return {"cache_manager": False, "signatures": {}, "address": (ip, self.port), "shared": self.shared_info()}
        # the signatures go once per cache-manager class: the parent keeps them with this process
        sent = type(cm) is self._signatures_sent
        self._signatures_sent = type(cm)
        return {"cache_manager": True, "signatures": None if sent else self._signatures(cm), "address": (ip, self.port),
                "shared": self.shared_info()}

    def shared_info(self) -> dict[str, Any]:
        """The memory a parent on this host may map (nodehost.shared), and whether this node reads DEVICE memory
        as host memory (else a parent must leave every access to the node: a DEVICE read here goes elsewhere, or
        is refused)."""
        h = shared.heap()
        return {"segments": h.segments() if h is not None else [], "device_is_host": self.device is self.host}

    @staticmethod
    def _signatures(cm: Any) -> dict[str, Any]:
        """The vendor cache-manager methods this implementation has, with their signatures for the parent's
        forwarders (None where a signature cannot be taken; a default that is not data crosses as its repr)."""
        out: dict[str, Any] = {}
        for name in CACHE_MANAGER:
            method = getattr(cm, name, None)
            if method is None:
                continue
            try:
                sig: inspect.Signature | None = inspect.signature(method)
            except (TypeError, ValueError):  # a native method without one: the forwarder goes without
                sig = None
            out[name] = sig
        return out

    def _cluster_info(self, server_id: int, address: Sequence[Any]) -> Any:
        info = self.vendor.LLMClusterInfo()
        info.remote_cluster_id = server_id
        info.append_local_ip_info(*self.listen)
        info.append_remote_ip_info(str(address[0]), int(address[1]))
        return info

    def link(self, server_id: int, address: Sequence[Any]) -> int:
        datadist = self._datadist()
        status, _per_cluster = datadist.link_clusters([self._cluster_info(server_id, address)], LINK_TIMEOUT_MS)
        return _status_int(status)

    def unlink(self, server_id: int, address: Sequence[Any]) -> int:
        datadist = self._datadist()
        status, _per_cluster = datadist.unlink_clusters([self._cluster_info(server_id, address)], LINK_TIMEOUT_MS)
        return _status_int(status)

    def _cm_call(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if name not in CACHE_MANAGER:
            raise AttributeError(f"the cache manager has no public method {name!r} in the vendor API")
        cm = self._datadist().cache_manager
        result = getattr(cm, name)(*args, **kwargs)
        if isinstance(result, self.vendor.Cache):
            self._note_cache(result)
        return result

    def reset(self) -> None:
        """``finalize()``, wait for the previous cluster's requests, free the host's memory, forget handles."""
        datadist, self.datadist = self.datadist, None
        if datadist is not None:
            datadist.finalize()
        if not self.active.wait_idle(RESET_DRAIN_S):
            raise RuntimeError(f"{self.active.count - 1} request(s) of the previous cluster still running")
        self.host.release_all()
        if self.device is not None and self.device is not self.host:
            self.device.release_all()
        with self._ranges_lock:
            self._device_ranges.clear()
        self.codec = self.codec.successor()
        self.resets += 1

    # ---- memory -------------------------------------------------------------------------------------
    def _note_cache(self, cache: Any) -> None:
        desc = cache.cache_desc
        if desc.placement == self.vendor.Placement.DEVICE:
            with self._ranges_lock:
                for a in cache.tensor_addrs:
                    self._device_ranges.add(int(a), int(a) + int(desc.size))

    def _accessor_for(self, addr: int, nbytes: int) -> MemoryAccessor:
        with self._ranges_lock:
            device = self._device_ranges.covers(addr, addr + nbytes)
        if device:
            return self._device_accessor()
        return self.host

    def _device_accessor(self) -> MemoryAccessor:
        if self.device is None:
            raise NotImplementedError("no access to DEVICE memory here (no acl; see NODEHOST_DEVICE_MEMORY)")
        return self.device

    def _tensor(self, cache: Any, index: int) -> tuple[MemoryAccessor, int, int]:
        addrs = cache.tensor_addrs
        if not 0 <= index < len(addrs):
            raise IndexError(f"tensor index {index} out of range for {cache!r}")
        desc = cache.cache_desc
        host = desc.placement == self.vendor.Placement.HOST
        return (self.host if host else self._device_accessor()), int(addrs[index]), int(desc.size)

    def _node_call(self, name: str, args: Sequence[Any]) -> Any:
        if name == "write_tensor":
            cache, index, data = args
            acc, addr, nbytes = self._tensor(cache, index)
            arr = np.asarray(data)
            if arr.dtype != np.uint8 or arr.size != nbytes:
                raise ValueError(f"write_tensor needs {nbytes} uint8 bytes, got {arr.size} of {arr.dtype}")
            acc.write(addr, arr)
            return None
        if name == "read_tensor":
            cache, index = args
            acc, addr, nbytes = self._tensor(cache, index)
            return acc.read(addr, nbytes)
        if name == "alloc_memory":
            placement, nbytes = args
            if placement == "HOST":
                return self.host.alloc(int(nbytes))
            if placement != "DEVICE":
                raise ValueError(f"placement must be 'HOST' or 'DEVICE', got {placement!r}")
            addr = self._device_accessor().alloc(int(nbytes))
            with self._ranges_lock:
                self._device_ranges.add(addr, addr + int(nbytes))
            return addr
        if name == "read_memory":
            addr, nbytes = args
            return self._accessor_for(int(addr), int(nbytes)).read(int(addr), int(nbytes))
        if name == "write_memory":
            addr, data = args
            arr = np.asarray(data, dtype=np.uint8).reshape(-1)
            self._accessor_for(int(addr), arr.size).write(int(addr), arr)
            return None
        if name == "inject":
            (fault,) = args
            inject = getattr(self.vendor, "conformance_inject", None)
            if inject is None:
                raise NotImplementedError(f"fault {fault.get('kind')!r} is not supported by {self.module_name}")
            return inject(self._datadist(), dict(fault))
        if name == "bench_raw":  # a benchmark's baseline: the implementation's own transfer, without push_cache
            bench = getattr(self.vendor, "conformance_bench_raw", None)
            if bench is None:
                raise NotImplementedError(f"{self.module_name} has no raw transfer to measure")
            return bench(self._datadist(), *args)
        raise AttributeError(f"node has no method {name!r}")


def node_main(conn: Any, parent_pid: int, authkey: bytes, module_name: str, env: Mapping[str, str]) -> None:
    """Process entry point (spawn): the parent's environment defaults first, then the implementation.

    ``NODEHOST_KEY`` (hex) carries the pool's shared secret to the implementation, for an implementation whose
    nodes authenticate each other (the reference's control plane does); the real package ignores it."""
    for name, value in env.items():  # defaults: an agent's environment (its network device) wins
        os.environ.setdefault(name, value)
    os.environ[KEY_ENV] = authkey.hex()
    start_watchdog(parent_pid)
    try:
        rt = VendorNode(module_name)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
        report_start_failure(conn, exc)
    serve(conn, rt, (rt.ip, rt.port))

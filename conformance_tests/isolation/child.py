"""The backend's process: imports the backend and serves the kit's requests over a pipe.

Started by :mod:`conformance_tests.isolation.executor` as ``python -m conformance_tests.isolation.child FD
TARGET``.  A request the kit makes from one of its own threads runs on a thread here too, so the kit's concurrent
pushes overlap as they would in process; the others run in turn on the reading thread (a thread hand-off per
call would cost more than the call).  The process ignores Ctrl-C (the kit decides what an interrupt ends) and exits when the pipe closes.
"""

from __future__ import annotations

import inspect
import os
import signal
import sys
import threading
import types
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from ..backend import call_each
from . import wire

ROOT = 0  # the handle of the backend object itself


class Registry:
    """The objects the kit holds handles to, by handle number (and back, so an object keeps one handle)."""

    def __init__(self, root: Any) -> None:
        self.objects: dict[int, Any] = {ROOT: root}
        self.handles: dict[int, int] = {id(root): ROOT}
        self.next = 1
        self.lock = threading.Lock()

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType):
            return ("module", obj.__name__)
        if wire.by_value(obj):
            return None
        with self.lock:
            hid = self.handles.get(id(obj))
            if hid is None:
                hid, self.next = self.next, self.next + 1
                self.objects[hid] = obj
                self.handles[id(obj)] = hid
        return ("handle", hid, f"{type(obj).__module__}.{type(obj).__qualname__}")

    def persistent_load(self, pid: Any) -> Any:
        """A handle the kit sent back: the very object it names."""
        return self.objects[int(pid[1])]

    def release(self, hids: list[int]) -> None:
        with self.lock:
            for hid in hids:
                obj = self.objects.pop(hid, None)
                if obj is not None:
                    self.handles.pop(id(obj), None)


def _attribute(registry: Registry, obj: Any, name: str) -> Any:
    value = getattr(obj, name)
    if inspect.ismethod(value) and value.__self__ is obj and callable(getattr(type(obj), name, None)):
        # called through the owner's handle: one round trip, no handle per lookup; the signature goes along
        # (the suite inspects push_cache's)
        try:
            signature = inspect.signature(value)
        except (TypeError, ValueError):
            signature = None
        # a method of the class: the kit may take it as a method of every object of this class
        return ("method", (name, signature, f"{type(obj).__module__}.{type(obj).__qualname__}"))
    return ("value", value)


def serve(conn: Connection, target: str) -> None:
    from conformance_tests.resolution import BackendError, backend_capabilities, resolve_backend

    try:
        backend, resolved = resolve_backend(target)
        caps = backend_capabilities(backend)
    except BackendError as exc:
        conn.send_bytes(wire.dumps(("error", str(exc)), None))
        return
    registry = Registry(backend)
    send_lock = threading.Lock()

    def reply(rid: int, status: str, kind: str, value: Any) -> None:
        # the payload is pickled apart from the header: the kit can fail to rebuild a value and still know
        # which request it answered and what was raised
        text = f"{type(value).__module__}.{type(value).__qualname__}: {value}" if status == "raise" else ""
        try:
            payload = wire.dumps(value, registry.persistent_id)
        except Exception as exc:  # noqa: BLE001 - an unpicklable result or exception is reported, not fatal
            status, kind, payload = "raise", "value", b""
            text = f"{type(exc).__name__}: the backend's {type(value).__name__} cannot be sent: {exc}"
        data = wire.dumps((rid, status, kind, text[:2000], payload), None)
        with send_lock:
            conn.send_bytes(data)

    def handle(rid: int, op: str, hid: int, name: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            obj = registry.objects[hid]
            if op == "getattr":
                result = _attribute(registry, obj, str(name))
            elif op == "call":
                result = ("value", (getattr(obj, str(name)) if name else obj)(*args, **kwargs))
            elif op == "each":  # per-tensor steps: through the node's own batch when it has one
                result = ("value", call_each(obj, str(name), args[0]))
            else:
                raise ValueError(f"unknown request {op!r}")
        except BaseException as exc:  # noqa: BLE001 - every exception goes back to the kit
            reply(rid, "raise", "value", exc)
        else:
            reply(rid, "ok", *result)

    conn.send_bytes(wire.dumps(("ready", {"name": str(getattr(backend, "name", "") or ""),
                                          "version": str(getattr(backend, "version", "?")),
                                          "target": resolved, "caps": caps}), None))
    with ThreadPoolExecutor(max_workers=32, thread_name_prefix="request") as pool:
        while True:
            try:
                data = conn.recv_bytes()
            except (EOFError, OSError):
                break
            rid, op, hid, name, args, kwargs, released, threaded = wire.loads(data, registry.persistent_load)
            if released:
                registry.release(released)
            if op == "stop":
                break
            if threaded:
                pool.submit(handle, rid, op, hid, name, args, kwargs)
            else:
                handle(rid, op, hid, name, args, kwargs)
    os._exit(0)  # threads the backend left behind must not keep this process alive


def _die_with_parent() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the kit killed with SIGKILL takes this process along
    except Exception:  # noqa: BLE001 - not Linux: the pipe closing still ends the process
        pass


def main(argv: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    fd, target = int(argv[0]), argv[1]
    conn = Connection(fd)
    serve(conn, target)


if __name__ == "__main__":
    main(sys.argv[1:])

"""The backend's process: imports the backend and serves the kit's requests over a pipe.

Started by :mod:`conformance_tests.isolation.executor` as ``python -m conformance_tests.isolation.child FD
TARGET``.  A request the kit makes from one of its own threads runs on a thread here too, so the kit's concurrent
pushes overlap as they would in process; the others run in turn on the reading thread (a thread hand-off per
call would cost more than the call).  What crosses is data only (:mod:`.wire`).  The process ignores Ctrl-C (the
kit decides what an interrupt ends) and exits when the pipe closes, after the backend's exit functions.
"""

from __future__ import annotations

import atexit
import inspect
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from datawire import Codec, Names, NotData, WireError, frames, rpc

from ..backend import call_each
from . import wire
from .api import describe

ROOT = 0  # the handle of the backend object itself


class Registry:
    """The objects the kit holds handles to, by handle number (and back, so an object keeps one handle), and the
    API enums described so far (their members cross by name)."""

    def __init__(self, root: Any) -> None:
        self.objects: dict[int, Any] = {ROOT: root}
        self.handles: dict[int, int] = {id(root): ROOT}
        self.next = 1
        self.lock = threading.Lock()
        self.names = Names()

    def export(self, obj: Any) -> list[Any]:
        """The handle of an object that is not data: ``[number, type name]`` (the name is for people only)."""
        with self.lock:
            hid = self.handles.get(id(obj))
            if hid is None:
                hid, self.next = self.next, self.next + 1
                self.objects[hid] = obj
                self.handles[id(obj)] = hid
        return [hid, f"{type(obj).__module__}.{type(obj).__qualname__}"]

    def resolve(self, fields: list[Any]) -> Any:
        """A handle the kit sent back: the very object it names."""
        if len(fields) != 1 or type(fields[0]) is not int or fields[0] not in self.objects:
            raise WireError(f"unknown handle {fields!r}")
        return self.objects[fields[0]]

    def release(self, hids: list[int]) -> None:
        with self.lock:
            for hid in hids:
                obj = self.objects.pop(hid, None)
                if obj is not None:
                    self.handles.pop(id(obj), None)


def _attribute(obj: Any, name: str) -> list[Any]:
    value = getattr(obj, name)
    if not inspect.ismethod(value):
        return [wire.VALUE, value]
    # called through the owner's handle by name: one round trip, no handle per lookup; the signature goes along
    # (the suite inspects the operation's)
    try:
        signature: inspect.Signature | None = inspect.signature(value)
    except (TypeError, ValueError):
        signature = None
    if value.__self__ is obj and callable(getattr(type(obj), name, None)):
        # a method of the class: the kit may take it as a method of every object of this class
        return [wire.METHOD, [name, signature, f"{type(obj).__module__}.{type(obj).__qualname__}"]]
    # a bound method the object hands out without its class defining it (an adapter forwarding through
    # __getattr__ gives another object's): still called by name on this object, so it keeps its signature, but
    # no class name, so the kit holds it for no other object (another object of the class may forward elsewhere)
    return [wire.METHOD, [name, signature, None]]


def capabilities_as_data(caps: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The capabilities that are data, and one line for each that is not (it is left out: never a handle)."""
    strict = Codec()
    kept: dict[str, Any] = {}
    left_out: list[str] = []
    for key, value in caps.items():
        try:
            strict.encode([key, value])
        except (NotData, RecursionError) as exc:
            left_out.append(f"{key!r}: {exc}"[:300])
            continue
        kept[key] = value
    return kept, left_out


def serve(conn: Connection, target: str) -> None:
    from conformance_tests.resolution import BackendError, backend_capabilities, resolve_backend

    try:
        backend, resolved = resolve_backend(target)
        caps, left_out = capabilities_as_data(backend_capabilities(backend))
    except BackendError as exc:
        frames.send(conn, *rpc.hello_frame(rpc.ERR, Codec().encode_parts(exc)))
        return
    registry = Registry(backend)
    codec = Codec(registry.names, export=registry.export, import_handle=registry.resolve)
    responder = rpc.Responder(conn, lambda _op, body: (wire.read_request(codec, body), None),
                              lambda _status, value, _context: codec.encode_parts(value), "the backend")

    def handle(request: rpc.Request) -> Any:
        hid, name, args, kwargs, _released, _threaded = request.args
        obj = registry.objects[hid]
        if request.op == "getattr":
            return _attribute(obj, str(name))
        if request.op == "call":
            return (getattr(obj, str(name)) if name else obj)(*args, **kwargs)
        if request.op == "each":  # per-tensor steps: through the node's own batch when it has one
            return call_each(obj, str(name), args[0])
        if request.op == "api":  # the node's api, described as data (the kit builds its own classes)
            description, enums = describe(obj.api)
            for enum_name, cls in enums.items():
                registry.names.add_enum(enum_name, cls)
            return description
        raise ValueError(f"unknown request {request.op!r}")

    frames.send(conn, *rpc.hello_frame(rpc.OK, codec.encode_parts({
        "name": str(getattr(backend, "name", "") or ""), "version": str(getattr(backend, "version", "?")),
        "target": resolved, "caps": caps, "caps_left_out": left_out})))
    with ThreadPoolExecutor(max_workers=32, thread_name_prefix="request") as pool:
        for request in responder.requests():
            _hid, _name, _args, _kwargs, released, threaded = request.args
            if released:
                registry.release(released)
            if request.op == "stop":
                break
            if threaded:
                pool.submit(responder.answer, request, handle)
            else:
                responder.answer(request, handle)
    # what the backend registered to run at exit runs (the node host ends its nodes on other hosts and waits for
    # its ssh processes: nothing it started there outlives the run), but threads it left behind must not keep
    # this process alive
    atexit._run_exitfuncs()
    os._exit(0)


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
    os.set_inheritable(fd, False)  # a process the backend starts does not inherit the kit's pipe
    conn = Connection(fd)
    serve(conn, target)


if __name__ == "__main__":
    main(sys.argv[1:])

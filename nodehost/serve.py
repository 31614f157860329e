"""The node's side of the pipe: serve the parent's requests, each on a worker thread, until told to stop.

A runtime (what the node process holds) has ``dispatch(op, args, kwargs)``, a ``codec`` (:class:`nodehost.wire.
NodeCodec`: the data-only wire) and, optionally, ``quick(op, args)``: requests that never wait on anything, answered
on the reading thread instead of a worker (a thread hand-off costs more than they do). ``serve`` counts the requests in flight (a ``reset`` waits for the previous
cluster's to end: :class:`ActiveRequests`), answers every request, even one that raised, and exits the process
when the pipe closes, when the parent says ``exit``, or when a frame is not the wire's. A watchdog exits it when
the parent process is gone, so no node process outlives its parent.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from datawire import frames

from .wire import ERR, OK, first_frame

WATCHDOG_PERIOD_S = 0.5
MAX_WORKERS = 16


class Runtime(Protocol):
    codec: Any
    active: ActiveRequests

    def dispatch(self, op: str, args: Any, kwargs: Any) -> Any: ...


class ActiveRequests:
    """How many of the parent's requests are being served; ``wait_idle`` waits until only the caller's is."""

    def __init__(self) -> None:
        self.count = 0
        self._cv = threading.Condition()

    def started(self) -> None:
        with self._cv:
            self.count += 1

    def ended(self) -> None:
        with self._cv:
            self.count -= 1
            self._cv.notify_all()

    def wait_idle(self, timeout: float, keep: int = 1) -> bool:
        """True once no more than ``keep`` run (by default: none but the calling request); False after
        ``timeout`` seconds."""
        with self._cv:
            return self._cv.wait_for(lambda: self.count <= keep, timeout)


def _watchdog(parent_pid: int) -> None:
    while True:
        time.sleep(WATCHDOG_PERIOD_S)
        if os.getppid() != parent_pid:
            os._exit(0)


def start_watchdog(parent_pid: int) -> None:
    threading.Thread(target=_watchdog, args=(parent_pid,), name="watchdog", daemon=True).start()


def report_start_failure(conn: Any, exc: BaseException) -> None:
    """Tell the parent why the node could not start, then exit."""
    try:
        frames.send(conn, first_frame("fail", exc))
    finally:
        os._exit(1)


def serve(conn: Any, rt: Runtime, address: Any) -> None:
    """Report ``["ready", address, pid]``, then serve requests until the pipe closes; never returns."""
    frames.send(conn, first_frame("ready", tuple(address), os.getpid()))
    send_lock = threading.Lock()

    def reply(req: int, status: str, value: Any, seen: list[Any]) -> None:
        codec = rt.codec  # a reset replaces the codec: read it for every message
        try:
            sections = codec.reply(req, status, value, seen)
        except Exception as exc:  # noqa: BLE001 - a result that is not data fails its request
            sections = codec.reply(req, ERR, RuntimeError(f"the node's {type(value).__name__} cannot be sent: {exc}"),
                                   [])
        with send_lock:
            frames.send(conn, *sections)

    def run(req: int, op: str, args: Any, kwargs: Any, seen: list[Any]) -> None:
        try:
            try:
                result, status = rt.dispatch(op, args, kwargs), OK
            except BaseException as exc:  # noqa: BLE001 - every error goes back to the parent
                result, status = exc, ERR
        finally:
            rt.active.ended()
        try:
            reply(req, status, result, seen)
        except (OSError, EOFError):
            os._exit(0)

    pool = ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="node-req")
    # a reset replaces the codec: read it for every request
    for (req, op, args, kwargs), seen in frames.incoming(conn, lambda sections: rt.codec.decode_request(sections),
                                                         "node process"):
        if op == "exit":
            break
        rt.active.started()  # counted before the worker runs, so a reset that follows sees it
        quick = getattr(rt, "quick", None)
        if quick is not None and quick(op, args):
            run(req, op, args, kwargs, seen)  # one that never waits: answered here, no thread hand-off
        else:
            pool.submit(run, req, op, args, kwargs, seen)
    os._exit(0)

"""The node's side of the pipe: serve the parent's requests, each on a worker thread, until told to stop.

A runtime (what the node process holds) has ``dispatch(op, args, kwargs)`` and a ``codec`` with ``dumps``,
``loads`` (returning the request and the caches it named) and ``encode_error``. ``serve`` counts the requests
in flight (a ``reset`` waits for the previous cluster's to end: :class:`ActiveRequests`), answers every
request, even one that raised, and exits the process when the pipe closes or the parent says ``exit``. A
watchdog exits it when the parent process is gone, so no node process outlives its parent.
"""

from __future__ import annotations

import os
import pickle
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

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

    def wait_idle(self, timeout: float) -> bool:
        """True once no request but the calling one runs; False after ``timeout`` seconds."""
        with self._cv:
            return self._cv.wait_for(lambda: self.count <= 1, timeout)


def _watchdog(parent_pid: int) -> None:
    while True:
        time.sleep(WATCHDOG_PERIOD_S)
        if os.getppid() != parent_pid:
            os._exit(0)


def start_watchdog(parent_pid: int) -> None:
    threading.Thread(target=_watchdog, args=(parent_pid,), name="watchdog", daemon=True).start()


def report_start_failure(conn: Any, exc: BaseException, encode: Callable[[BaseException], Any]) -> None:
    """Tell the parent why the node could not start, then exit."""
    try:
        conn.send_bytes(pickle.dumps(("fail", encode(exc))))
    finally:
        os._exit(1)


def serve(conn: Any, rt: Runtime, address: Any) -> None:
    """Report ``("ready", address, pid)``, then serve requests until the pipe closes; never returns."""
    conn.send_bytes(pickle.dumps(("ready", address, os.getpid())))
    send_lock = threading.Lock()

    def reply(msg: Any) -> None:
        codec = rt.codec  # a reset replaces the codec: read it for every message
        try:
            data = codec.dumps(msg)
        except Exception as exc:  # noqa: BLE001 - an unpicklable result becomes an error
            data = codec.dumps((msg[0], "err", codec.encode_error(exc), []))
        with send_lock:
            conn.send_bytes(data)

    def run(req: int, op: str, args: Any, kwargs: Any, seen: list[Any]) -> None:
        try:
            try:
                result = rt.dispatch(op, args, kwargs)
            except BaseException as exc:  # noqa: BLE001 - every error goes back to the parent
                msg: Any = (req, "err", rt.codec.encode_error(exc), seen)
            else:
                msg = (req, "ok", result, seen)
        finally:
            rt.active.ended()
        try:
            reply(msg)
        except (OSError, EOFError):
            os._exit(0)

    pool = ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="node-req")
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            break
        try:
            (req, op, args, kwargs), seen = rt.codec.loads(data)
        except Exception as exc:  # noqa: BLE001 - the request id is unknown: answer request 0
            reply((0, "err", rt.codec.encode_error(exc), []))
            continue
        if op == "exit":
            break
        rt.active.started()  # counted before the worker runs, so a reset that follows sees it
        pool.submit(run, req, op, args, kwargs, seen)
    os._exit(0)

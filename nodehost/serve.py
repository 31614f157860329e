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

from datawire import frames, rpc

from .wire import hello_frame

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
        frames.send(conn, *hello_frame(rpc.ERR, exc))
    finally:
        os._exit(1)


def serve(conn: Any, rt: Runtime, address: Any) -> None:
    """Report ready (``[address, pid]``), then serve requests until the pipe closes; never returns."""
    frames.send(conn, *hello_frame(rpc.OK, [tuple(address), os.getpid()]))
    # a reset replaces the codec: read it for every message
    responder = rpc.Responder(conn, lambda op, body: rt.codec.decode_request(op, body),
                              lambda status, value, seen: rt.codec.reply(status, value, seen), "the node")

    def dispatch(request: rpc.Request) -> Any:
        try:
            args, kwargs = request.args
            return rt.dispatch(request.op, args, kwargs)
        finally:
            rt.active.ended()

    def run(request: rpc.Request) -> None:
        try:
            responder.answer(request, dispatch)
        except (OSError, EOFError):
            os._exit(0)

    pool = ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="node-req")
    quick = getattr(rt, "quick", None)
    for request in responder.requests():
        if request.op == "exit":
            break
        rt.active.started()  # counted before the worker runs, so a reset that follows sees it
        if quick is not None and quick(request.op, request.args[0]):
            run(request)  # one that never waits: answered here, no thread hand-off
        else:
            pool.submit(run, request)
    os._exit(0)

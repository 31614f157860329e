"""The backend's process as seen from the kit: start it, send requests, wait with a deadline, bury it.

A request waits for its reply no longer than :meth:`conformance_tests.deadlines.Deadlines.remaining` allows.  When the
deadline passes the process is killed (SIGKILL works whatever the backend is doing, even hanging in native
code holding its GIL); when the process dies on its own (a segfault, ``os._exit``) the pipe closes.  Either
way every request, the pending ones and the later ones, raises :class:`BackendLost` naming the request, the
signal or exit status and the tail of the process's output, until the plugin starts a new process for the
next test (:meth:`Executor.revive`).
"""

from __future__ import annotations

import atexit
import importlib
import inspect
import itertools
import multiprocessing
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..deadlines import Deadlines
from ..errors import HarnessError
from . import wire

#: how long a new backend process may take to import the backend and say it is ready
START_TIMEOUT_S = 120.0
#: lines of the process's output (stdout and stderr together) an error row quotes
TAIL_LINES = 15


class BackendLost(HarnessError):
    """The backend's process died or was killed; ``hung`` when the kit killed it for not answering."""

    def __init__(self, step: str, detail: str, hung: bool = False) -> None:
        super().__init__(step, detail)
        self.hung = hung


class StartError(Exception):
    """The backend's process could not start the backend (one line)."""


def describe_status(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"was killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


class Executor:
    """One backend process at a time; a new one after a loss, on :meth:`revive`. ``make_handle(executor, hid,
    type_name)`` turns a handle the backend's process sends into the kit's object for it; ``deadlines`` bound every
    wait for a reply."""

    def __init__(self, target: str, deadlines: Deadlines, make_handle: Callable[[Executor, int, str], Any],
                 handle_id: Callable[[Any], int | None]) -> None:
        self.target = target
        self.deadlines = deadlines
        self.make_handle = make_handle
        #: the handle number of one of the kit's handle objects (None for anything else)
        self.handle_id = handle_id
        #: the kit's handle objects, one per object of the backend's process ((generation, handle) -> handle)
        self.handles: weakref.WeakValueDictionary[tuple[int, int], Any] = weakref.WeakValueDictionary()
        #: (class, method name) -> signature, for the methods seen so far (a class's methods are looked up once)
        self.methods: dict[tuple[str, str], inspect.Signature | None] = {}
        self.generation = 0
        self.lost: BackendLost | None = None
        self.info: dict[str, Any] = {}
        self._ids = itertools.count(1)
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._reading = False
        self._replies: dict[int, Any] = {}
        self._released: list[int] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Any = None
        self._poller: Any = None
        self._log: Any = None
        self.start()
        atexit.register(self.close)

    # ------------------------------------------------------------------------------------------ life

    def start(self) -> None:
        parent, child = multiprocessing.Pipe(duplex=True)
        self._log = tempfile.TemporaryFile(prefix="push-cache-backend-")
        fd = child.fileno()
        self._proc = subprocess.Popen(  # noqa: S603 - our own module, with the interpreter running the kit
            [sys.executable, "-m", "conformance_tests.isolation.child", str(fd), self.target],
            pass_fds=(fd,), stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches the kit, which ends the run and this process
        )
        child.close()
        self._conn = parent
        # one poll object for the connection's life (Connection.poll builds a selector per call)
        self._poller = select.poll()
        self._poller.register(parent.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        self.generation += 1
        self.lost = None
        self._replies.clear()
        self._released.clear()
        if not parent.poll(START_TIMEOUT_S):
            self._kill()
            raise StartError(f"the backend's process did not start {self.target} within {START_TIMEOUT_S:.0f}s"
                             f"{self.tail()}")
        try:
            status, value = wire.loads(parent.recv_bytes(), None)
        except (EOFError, OSError):
            raise StartError(f"the backend's process {self._death()} while starting {self.target}"
                             f"{self.tail()}") from None
        if status == "error":
            self._kill()
            raise StartError(str(value))
        self.info = dict(value)

    def revive(self) -> bool:
        """Start a new process when the last one was lost; True when it did."""
        if self.lost is None:
            return False
        self._kill()
        self.start()
        return True

    def close(self) -> None:
        if self._proc is None:
            return
        try:
            with self._send_lock:
                self._conn.send_bytes(wire.dumps((0, "stop", 0, None, (), {}, [], False), None))
            self._proc.wait(2.0)
        except Exception:  # noqa: BLE001 - it is going away either way
            pass
        self._kill()

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                proc.kill()
            except OSError:
                pass
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                pass
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _death(self) -> str:
        assert self._proc is not None
        try:
            self._proc.wait(5.0)
        except subprocess.TimeoutExpired:
            pass
        return describe_status(self._proc.poll())

    def tail(self) -> str:
        """The last lines the process wrote (stdout and stderr), as a suffix for an error message."""
        if self._log is None:
            return ""
        try:
            self._log.flush()
            size = self._log.seek(0, os.SEEK_END)
            self._log.seek(max(0, size - 8000))
            text = self._log.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        lines = [ln for ln in text.splitlines() if ln.strip()][-TAIL_LINES:]
        return ("; its output ended with:\n" + "\n".join(lines)) if lines else "; it wrote nothing"

    def _lose(self, step: str, why: str, hung: bool = False) -> BackendLost:
        if self.lost is None:
            self.lost = BackendLost(step, why + self.tail(), hung=hung)
        return self.lost

    # ------------------------------------------------------------------------------------------ requests

    def release(self, hid: int, generation: int) -> None:
        if generation == self.generation and hid != 0:  # 0 is the backend itself, held for the whole run
            self._released.append(hid)

    def unrelease(self, hid: int) -> None:
        if hid in self._released:
            self._released.remove(hid)

    def request(self, remote: Any, op: str, name: str | None, args: tuple[Any, ...] = (),
                kwargs: dict[str, Any] | None = None) -> tuple[str, Any]:
        kind = remote._type.rsplit(".", 1)[-1]
        step = f"{kind}.{name}" if name else f"calling {kind}"
        if remote._generation != self.generation:
            raise BackendLost(step, "the object belongs to a backend process that has ended")
        if self.lost is not None:
            raise BackendLost(step, f"the backend's process was lost earlier in this test ({self.lost})",
                              hung=self.lost.hung)
        rid = next(self._ids)
        released, self._released = self._released, []
        threaded = threading.current_thread() is not threading.main_thread()
        data = wire.dumps((rid, op, remote._hid, name, args, kwargs or {}, released, threaded), self._outgoing)
        try:
            with self._send_lock:
                self._conn.send_bytes(data)
        except (OSError, AttributeError):
            raise self._lose(step, f"the backend's process {self._death()} before {step}") from None
        rid_, status, kind, text, payload = self._await(rid, step)
        try:
            value = wire.loads(payload, self._incoming)
        except Exception as exc:  # noqa: BLE001 - a class the kit's process cannot import
            if status == "raise":
                raise wire.RemoteError(text.partition(":")[0], text.partition(":")[2].strip()) from None
            raise HarnessError(step, f"its result cannot be rebuilt in the kit's process: {exc}") from None
        if status == "raise":
            if not isinstance(value, BaseException):
                value = wire.RemoteError("exception", text)
            raise value
        return kind, value

    def _await(self, rid: int, step: str) -> Any:
        deadline = time.monotonic() + self.deadlines.remaining()
        while True:
            with self._cond:
                if rid in self._replies:
                    return self._replies.pop(rid)
                if self.lost is not None:
                    raise self.lost
                if self._reading:
                    self._cond.wait(max(0.0, deadline - time.monotonic()))
                    if time.monotonic() < deadline or rid in self._replies:
                        continue
                    raise self._timeout(step)
                self._reading = True
            got: Any = None
            try:
                left = deadline - time.monotonic()
                if left <= 0 or not self._poller.poll(max(1, int(left * 1000))):
                    raise self._timeout(step)
                got = wire.loads(self._conn.recv_bytes(), None)
            except (EOFError, OSError):
                raise self._lose(step, f"the backend's process {self._death()} during {step}") from None
            except KeyboardInterrupt:
                # the run is being interrupted while the backend works: nothing more will be asked of this
                # process, and waiting for it (it may hang) would keep the interrupt from ending the run
                self._kill()
                self._lose(step, f"the run was interrupted during {step}; the kit ended the backend's process")
                raise
            finally:
                with self._cond:
                    self._reading = False
                    if got is not None:
                        self._replies[got[0]] = got
                    self._cond.notify_all()

    def _timeout(self, step: str) -> BackendLost:
        self._kill()
        return self._lose(step, f"{step} did not return in time; the kit killed the backend's process (SIGKILL)",
                          hung=True)

    def _outgoing(self, obj: Any) -> Any:
        hid = self.handle_id(obj)
        return None if hid is None else ("handle", hid)

    def _incoming(self, pid: Any) -> Any:
        if pid[0] == "module":
            # a module the backend handed over (node.api may be one): the same module, imported here
            return importlib.import_module(pid[1])
        return self.make_handle(self, int(pid[1]), str(pid[2]))

"""The backend's process as seen from the kit: start it, send requests, wait with a deadline, bury it.

A request waits for its reply no longer than :meth:`conformance_tests.running.deadlines.Deadlines.remaining` allows.  When the
deadline passes the process is killed (SIGKILL works whatever the backend is doing, even hanging in native
code holding its GIL); when the process dies on its own (a segfault, ``os._exit``) the kit sees it exit (a pidfd),
even while a process it started holds the pipe open.  Either way every request, the pending ones and the later
ones, raises :class:`BackendLost` naming the request, the signal or exit status and the tail of the process's
output, until the plugin starts a new process for the next test (:meth:`Executor.revive`); and everything the
backend started dies with it (:mod:`.processes`).

What the process sends is decoded as data only (:mod:`.wire`, :mod:`datawire.rpc`): a reply that is not data fails
its request with :class:`WireError`, an error row naming the call; a frame that is not even a reply, or a reply to a
request not made, ends the process, as a crash. The thread waiting for a reply reads the pipe itself (no reader
thread: a thread hand-off per reply would cost more than most calls), in turn with the others waiting.
"""

from __future__ import annotations

import atexit
import inspect
import multiprocessing
import select
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import datawire
from datawire import Codec, Names, frames, rpc

from ..running.deadlines import Deadlines
from ..testbed.errors import HarnessError
from . import wire
from .api import KitApis
from .processes import BackendProcess, become_subreaper, output_tail

#: how long a new backend process may take to import the backend and say it is ready
START_TIMEOUT_S = 120.0
#: how long the process may take to stop when asked at the end of a run (its backend's exit functions run: the
#: node host's closing of its SSH hosts waits up to nodehost.hosts.CLOSE_S), before it is killed
STOP_S = 15.0
#: lines of the process's output (stdout and stderr together) an error row quotes
TAIL_LINES = 15


class BackendLost(HarnessError):
    """The backend's process died or was killed; ``hung`` when the kit killed it for not answering."""

    def __init__(self, step: str, detail: str, hung: bool = False) -> None:
        super().__init__(step, detail)
        self.hung = hung


class WireError(HarnessError):
    """The backend's process answered a request with something that is not the wire's data."""


class StartError(Exception):
    """The backend's process could not start the backend (one line)."""


class Executor:
    """One backend process at a time; a new one after a loss, on :meth:`revive`. ``make_handle(executor, hid,
    type_name)`` turns a handle the backend's process sends into the kit's object for it, ``handle_id(obj)`` is
    the handle number of one of the kit's handle objects (None for anything else); ``deadlines`` bound every
    wait for a reply."""

    def __init__(self, target: str, deadlines: Deadlines, make_handle: Callable[[Executor, int, str], Any],
                 handle_id: Callable[[Any], int | None]) -> None:
        self.target = target
        self.deadlines = deadlines
        self.make_handle = make_handle
        self.handle_id = handle_id
        #: the kit's handle objects, one per object of the backend's process ((generation, handle) -> handle)
        self.handles: weakref.WeakValueDictionary[tuple[int, int], Any] = weakref.WeakValueDictionary()
        #: (class, method name) -> signature, for the methods seen so far (a class's methods are looked up once)
        self.methods: dict[tuple[str, str], inspect.Signature | None] = {}
        #: the kit's own API classes (node.api), built by name from what the backend's process describes
        self.apis = KitApis()
        self.names = Names()
        self.codec = Codec(self.names, export=self._export, import_handle=self._import, make_error=self._error)
        self.generation = 0
        self.lost: BackendLost | None = None
        self.info: dict[str, Any] = {}
        #: the requests to the current process (a reply to one not made breaks the wire: kept, such replies would
        #: pile up); the step each thread is waiting on, for what a loss says
        self._client: rpc.Client | None = None
        self._step = threading.local()
        self._released: list[int] = []
        self._proc: BackendProcess | None = None
        self._conn: Any = None
        self._poller: Any = None
        self._log: Any = None
        become_subreaper()  # what the backend orphans stays the kit's to end
        self.start()
        atexit.register(self.close)

    # ------------------------------------------------------------------------------------------ life

    def start(self) -> None:
        parent, child = multiprocessing.Pipe(duplex=True)
        self._log = tempfile.TemporaryFile(prefix="push-cache-backend-")
        fd = child.fileno()
        self._proc = BackendProcess([sys.executable, "-m", "conformance_tests.isolation.child", str(fd), self.target],
                                    [fd], self._log)
        child.close()
        self._conn = parent
        # one poll object for the connection's life: the pipe, and the process's exit (its pidfd)
        self._poller = select.poll()
        self._poller.register(parent.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        if self._proc.pidfd is not None:
            self._poller.register(self._proc.pidfd, select.POLLIN)
        self.generation += 1
        self.lost = None
        self._client = rpc.Client(parent, lambda _status, body: self.codec.decode(body), self._gone,
                                  read=self._read_frame)
        self._released.clear()
        if not parent.poll(START_TIMEOUT_S):
            self._kill()
            raise StartError(f"the backend's process did not start {self.target} within {START_TIMEOUT_S:.0f}s"
                             f"{self.tail()}")
        try:
            hello = rpc.read_hello(frames.recv(parent, 1 << 24))
            if hello.word == rpc.ERR:
                self._kill()
                why = Codec().decode(hello.body)
                raise StartError(why.message if isinstance(why, datawire.ErrorRecord) else
                                 "the backend's process could not start the backend, and said something else than why")
            info = self.codec.decode(hello.body)
            if not (isinstance(info, dict) and isinstance(info.get("caps"), dict)
                    and all(isinstance(info.get(k), str) for k in ("name", "version", "target"))):
                raise datawire.WireError("its ready message is not {name, version, target, caps}")
        except (EOFError, OSError):
            raise StartError(f"the backend's process {self._proc.status()} while starting {self.target}"
                             f"{self.tail()}") from None
        except datawire.WireError as exc:
            self._kill()
            raise StartError(f"the backend's process sent a ready message that is not data ({exc})") from None
        self.info = dict(info)

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
            assert self._client is not None
            self._client.notify("stop", wire.request_body(self.codec, 0, None, (), {}, [], False))
            self._proc.wait(STOP_S)
        except Exception:  # noqa: BLE001 - it is going away either way
            pass
        self._kill()

    def _kill(self) -> None:
        """End the process and everything it started (killed, reaped), close the pipe."""
        if self._proc is not None:
            self._proc.end()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _death(self) -> str:
        assert self._proc is not None
        return self._proc.status()

    def tail(self) -> str:
        """The last lines the process wrote (stdout and stderr), as a suffix for an error message."""
        return output_tail(self._log, TAIL_LINES)

    def _lose(self, step: str, why: str, hung: bool = False) -> BackendLost:
        if self.lost is None:
            self.lost = BackendLost(step, why + self.tail(), hung=hung)
            self._kill()  # what it started goes with it, now
            if self._client is not None:
                self._client.close()  # every request waiting fails with the loss, now
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
        threaded = threading.current_thread() is not threading.main_thread()
        try:
            body = wire.request_body(self.codec, remote._hid, name, args, kwargs or {}, self._released, threaded)
        except datawire.NotData as exc:
            raise HarnessError(step, f"an argument cannot be sent to the backend's process: {exc}") from None
        self._released = []
        client = self._client
        assert client is not None
        self._step.name = step
        try:
            value = client.answer(client.submit(op, body), self.deadlines.remaining())
        except rpc.NoAnswer:
            raise self._timeout(step) from None
        except datawire.WireError as exc:
            raise WireError(step, f"the backend's process answered with something that is not data: {exc}") from None
        except KeyboardInterrupt:
            # the run is being interrupted while the backend works: nothing more will be asked of this
            # process, and waiting for it (it may hang) would keep the interrupt from ending the run
            self._lose(step, f"the run was interrupted during {step}; the kit ended the backend's process")
            raise
        try:
            if op == "getattr":
                return wire.read_attribute(value)
            if op == "api":
                return "api", self.apis.build(value, self.names)
        except ValueError as exc:  # a WireError too
            raise WireError(step, f"the backend's process described {name or 'node.api'} with something else: "
                                  f"{exc}") from None
        return wire.VALUE, value

    def _read_frame(self, deadline: float | None) -> list[Any]:
        """The next frame on the pipe, for a thread waiting for its reply; the process's exit (seen on its pidfd) or
        a closed pipe: EOFError; TimeoutError past ``deadline``."""
        conn, proc = self._conn, self._proc
        if conn is None or proc is None:
            raise EOFError("the pipe is closed")
        while True:
            left = 1e9 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            events = self._poller.poll(max(1, min(int(left * 1000), 100 if proc.pidfd is None else 1 << 30)))
            if not events and proc.pidfd is None and proc.poll() is None:
                continue  # no pidfd here: the process's exit is polled every 100 ms
            pipe_ready = any(fd == conn.fileno() for fd, _ in events)
            if not pipe_ready and conn.poll(0):
                pipe_ready = True
            if pipe_ready:
                return frames.recv(conn)
            if events or proc.poll() is not None:  # the process exited, every reply it sent read
                raise EOFError("the process exited")

    def _gone(self) -> BaseException:
        """What every request raises once the process is gone: the loss, said for the step that saw it."""
        if self.lost is None:
            step = getattr(self._step, "name", "a request")
            broke = self._client.broke if self._client is not None else None
            why = f"broke the wire during {step}: it {broke}; the kit ended it" if broke else \
                f"{self._death()} during {step}"
            self._lose(step, f"the backend's process {why}")
        assert self.lost is not None
        return self.lost

    def _timeout(self, step: str) -> BackendLost:
        return self._lose(step, f"{step} did not return in time; the kit killed the backend's process (SIGKILL)",
                          hung=True)

    # ------------------------------------------------------------------------------------------ the codec's hooks

    def _export(self, obj: Any) -> list[Any] | None:
        hid = self.handle_id(obj)
        return None if hid is None else [hid]

    def _import(self, fields: list[Any]) -> Any:
        if not (len(fields) == 2 and type(fields[0]) is int and isinstance(fields[1], str)):
            raise datawire.WireError(f"a handle that is not [number, type name]: {fields!r}"[:200])
        return self.make_handle(self, fields[0], fields[1][:200])

    def _error(self, record: datawire.ErrorRecord) -> BaseException:
        return datawire.rebuild(record, self.apis.llm_exception, self.apis.status_enum, "the backend's process")

"""The kit's one timeout mechanism: every wait on the backend is bounded by a deadline.

The run context holds one :class:`Deadlines`; the plugin sets the running test's deadline (a little inside its
pytest-timeout bound) before each test. A backend call is bounded by the sooner of that deadline and the call's own bound (a push that must return
within its sync_kv_timeout):

* an isolated backend (``conformance_tests.isolation``) enforces the bound in the kit's process: when it
  passes, the backend's process is killed, which works even if the backend hangs in native code holding its
  GIL, and the call raises :class:`~conformance_tests.isolation.BackendLost`;
* an in-process backend (the trusted reference, or ``--isolation off``) is called on a daemon thread that is
  abandoned when the bound passes: the test goes on, the hung thread cannot be stopped.  The threads are kept
  and reused (starting one per push cost a tenth of a certification run); one that is abandoned is replaced.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: bound for waits outside a test (the smoke check, closing a cluster after the test)
DEFAULT_BOUND_S = 60.0


class Hung(Exception):
    """The call did not return within its bound."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"did not return within {seconds:.1f}s")
        self.seconds = seconds


class RaisedInterrupt(Exception):
    """The backend raised KeyboardInterrupt or SystemExit on the thread that called it: that call's failure, never
    the end of the run (a Ctrl-C reaches the kit's main thread, never this one)."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(f"the backend raised {type(exc).__name__}" + (f": {exc}" if str(exc) else ""))


class _CallBound(threading.local):
    seconds: float | None = None


class _Job:
    """One bounded call, run on a worker thread."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.done = threading.Event()
        self.result: Any = None
        self.exc: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn(*self.args, **self.kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            self.exc = exc
        finally:
            self.done.set()


class _Worker:
    """A daemon thread that runs the jobs it is given, one at a time."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        threading.Thread(target=self._loop, daemon=True, name="bounded call").start()

    def _loop(self) -> None:
        while True:
            self.jobs.get().run()


#: idle workers a Deadlines keeps for the next bounded calls
IDLE_WORKERS = 8


class Deadlines:
    """The deadlines of one run: the running test's (shared by every thread of the test, its own threads
    included) and, per thread, the bound of the wait in progress."""

    def __init__(self) -> None:
        self._test_until: float | None = None
        self._call = _CallBound()
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def start_test(self, seconds: float | None) -> None:
        """The running test must be over ``seconds`` from now (None: no bound of its own)."""
        self._test_until = None if not seconds else time.monotonic() + float(seconds)

    def end_test(self) -> None:
        self._test_until = None

    def remaining(self, bound: float | None = None) -> float:
        """Seconds left for a wait that may take at most ``bound``: the sooner of the bound and the test's end."""
        limits = [b for b in (bound, self._call.seconds) if b is not None]
        if self._test_until is not None:
            limits.append(self._test_until - time.monotonic())
        left = min(limits) if limits else DEFAULT_BOUND_S
        return max(0.0, left)

    @contextmanager
    def bounded(self, seconds: float | None) -> Iterator[None]:
        """Every request to an isolated backend inside the block waits at most ``seconds`` (and the test's
        deadline)."""
        previous = self._call.seconds
        self._call.seconds = self.remaining(seconds)
        try:
            yield
        finally:
            self._call.seconds = previous

    def call(self, fn: Callable[..., Any], *args: Any, bound: float | None = None, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` within ``bound`` seconds (and the test's deadline); raises :class:`Hung`."""
        limit = self.remaining(bound)
        if getattr(fn, "bounded_by_caller", False):
            # an isolated backend's method: the kit's process waits on its reply with this bound
            with self.bounded(limit):
                return fn(*args, **kwargs)
        with self._lock:
            worker = self._idle.pop() if self._idle else _Worker()
        job = _Job(fn, args, kwargs)
        worker.jobs.put(job)
        if not job.done.wait(limit):
            raise Hung(limit)  # the worker is abandoned with its hung call
        with self._lock:
            if len(self._idle) < IDLE_WORKERS:
                self._idle.append(worker)
        if job.exc is not None:
            if isinstance(job.exc, (KeyboardInterrupt, SystemExit)):
                raise RaisedInterrupt(job.exc) from job.exc
            raise job.exc
        return job.result

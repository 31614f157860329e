"""The kit's one timeout mechanism: every wait on the backend is bounded by a deadline.

The run context holds one :class:`Deadlines`; the plugin sets the running test's deadline (a little inside its
pytest-timeout bound) before each test. A backend call is bounded by the sooner of that deadline and the call's own bound (a push that must return
within its sync_kv_timeout):

* an isolated backend (``conformance_tests.isolation``) enforces the bound in the kit's process: when it
  passes, the backend's process is killed, which works even if the backend hangs in native code holding its
  GIL, and the call raises :class:`~conformance_tests.isolation.BackendLost`;
* an in-process backend (the trusted reference, or ``--isolation off``) is called on a daemon thread that is
  abandoned when the bound passes: the test goes on, the hung thread cannot be stopped.
"""

from __future__ import annotations

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


class Deadlines:
    """The deadlines of one run: the running test's (shared by every thread of the test, its own threads
    included) and, per thread, the bound of the wait in progress."""

    def __init__(self) -> None:
        self._test_until: float | None = None
        self._call = _CallBound()

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
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["result"] = fn(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box["exc"] = exc

        t = threading.Thread(target=run, daemon=True, name=f"bounded {getattr(fn, '__name__', 'call')}")
        t.start()
        t.join(limit)
        if t.is_alive():
            raise Hung(limit)
        if "exc" in box:
            if isinstance(box["exc"], (KeyboardInterrupt, SystemExit)):
                raise RaisedInterrupt(box["exc"]) from box["exc"]
            raise box["exc"]
        return box.get("result")

"""Crash and hang isolation: the backend runs in its own process, the kit talks to it over a pipe (data only).

A backend that segfaults, calls ``os._exit``, or hangs (even in native code holding its GIL) costs one test:
that test becomes an ``error`` row naming the signal or exit status and the tail of the process's output,
a new process serves the next test, and the report is written.  Nothing the backend's process sends can run code
in the kit: the pipe carries the project's one data-only wire (:mod:`datawire`), and whatever is not data is an
error row too.  Whatever the backend starts ends with it (:mod:`.processes`).  ``--isolation`` chooses it (default ``auto``:
every backend except the kit's own reference, :data:`~conformance_tests.resolution.IN_PROCESS_BY_DEFAULT`).
"""

from __future__ import annotations

from .executor import BackendLost, StartError, WireError
from .remote import IsolatedBackend

__all__ = ["BackendLost", "IsolatedBackend", "StartError", "WireError"]

"""Crash and hang isolation: the backend runs in its own process, the kit talks to it over a pipe.

A backend that segfaults, calls ``os._exit``, or hangs (even in native code holding its GIL) costs one test:
that test becomes an ``error`` row naming the signal or exit status and the tail of the process's output,
a new process serves the next test, and the report is written.  ``--isolation`` chooses it (default ``auto``:
every backend except the in-process reference).
"""

from __future__ import annotations

from .executor import BackendLost, StartError
from .remote import IsolatedBackend

__all__ = ["BackendLost", "IsolatedBackend", "StartError"]

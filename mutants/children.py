"""The certify processes of a mutants run, which end with it.

Each child runs in a process group of its own, so that ending it ends whatever it started too, and a signal meant
for the run (SIGTERM from CI or ``timeout``, SIGHUP from a closed terminal, Ctrl-C) reaches the children only
through ``stop``: SIGTERM to each group (certify then writes its partial report), SIGKILL to what is left after
``STOP_GRACE_S``, and every child reaped before the run exits. tox sends no signal on when it is itself terminated,
so the run also watches its parent: when it is gone, the run stops as on SIGHUP.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from types import FrameType

#: how long a child may take to end after SIGTERM (certify writes a partial report) before it is killed
STOP_GRACE_S = 2.0
#: how often the run checks that its parent is still there
PARENT_POLL_S = 0.2
#: the signals that end a run (Ctrl-C is SIGINT: KeyboardInterrupt)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(Exception):
    """The run was told to end (by ``signum``); its children are to end with it."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


class Children:
    """The live child processes of the run, and their end."""

    def __init__(self, grace: float = STOP_GRACE_S) -> None:
        self.grace = grace
        self._lock = threading.Lock()
        self._live: set[subprocess.Popen[str]] = set()
        self._stopping = False

    def run(self, argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
        """Run ``argv`` to its end (exit status, stdout, stderr); Stopped once the run is stopping."""
        with self._lock:  # no child starts after stop() has taken the list of the live ones
            if self._stopping:
                raise Stopped(signal.SIGTERM)
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                    process_group=0)
            self._live.add(proc)
        try:
            out, err = proc.communicate()
        finally:
            with self._lock:
                self._live.discard(proc)
        return proc.returncode, out, err

    def stop(self) -> None:
        """End every live child and what it started: SIGTERM, then SIGKILL after the grace; each reaped."""
        with self._lock:
            self._stopping = True
            live = list(self._live)
        for proc in live:
            _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for proc in live:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for proc in live:  # the group too: what a child started may outlive it
            _signal_group(proc.pid, signal.SIGKILL)
        for proc in live:
            proc.wait()


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):  # the group has ended already
        pass


def raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signum)


def watch_parent(poll: float = PARENT_POLL_S) -> None:
    """SIGHUP to this process when its parent goes (a killed tox signals nothing); a daemon thread polls."""
    parent = os.getppid()
    if parent == 1:  # started by init already: nothing to watch
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll)
        os.kill(os.getpid(), signal.SIGHUP)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()

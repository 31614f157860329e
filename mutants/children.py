"""The certify processes of a mutants run, which end with it.

Each child runs in a process group of its own, so that ending it ends whatever it started too, and a signal meant
for the run (SIGTERM from CI or ``timeout``, SIGHUP from a closed terminal, Ctrl-C) reaches the children only
through ``stop``: SIGTERM to each group (certify then writes its partial report), SIGKILL to what is left after
``STOP_GRACE_S``, and every child reaped before the run exits. tox sends no signal on when it is itself terminated,
so the run also watches its parent: when it is gone, the run stops as on SIGHUP.

Where it can fork, the run has its certify processes forked by a zygote (:mod:`mutants.zygote`, started once per
run, in a process group of its own), which has already imported what each needs: a child is then started in
milliseconds rather than seconds. The zygote's children are the run's children all the same: each in its own
process group, ended by ``stop`` as above, their exit statuses reported by the zygote, their stdout and stderr
written to files the run reads. Where the zygote cannot start or refuses a request, the run starts
``python -m conformance_tests`` itself, as it does with ``zygote_env=None``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import IO, Any

#: how long a child may take to end after SIGTERM (certify writes a partial report) before it is killed
STOP_GRACE_S = 2.0
#: how often the run checks that its parent is still there
PARENT_POLL_S = 0.2
#: the signals that end a run (Ctrl-C is SIGINT: KeyboardInterrupt)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
#: how often the run looks whether a child the zygote can no longer report (it died) has ended
ORPHAN_POLL_S = 0.1


class Stopped(Exception):
    """The run was told to end (by ``signum``); its children are to end with it."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


class Children:
    """The live child processes of the run, and their end.

    ``zygote_env``: the environment of a zygote to fork the ``python -m conformance_tests`` children from (it is
    started at once and warms while the run goes on); None, or no ``os.fork``: each child is a fresh process."""

    def __init__(self, grace: float = STOP_GRACE_S, zygote_env: dict[str, str] | None = None) -> None:
        self.grace = grace
        self._lock = threading.Lock()
        self._live: set[subprocess.Popen[str]] = set()
        self._forked: set[int] = set()  # the zygote's live children (pids, each its own group's)
        self._stopping = False
        self.zygote = Zygote(zygote_env) if zygote_env is not None and hasattr(os, "fork") else None

    def run(self, argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
        """Run ``argv`` to its end (exit status, stdout, stderr); Stopped once the run is stopping."""
        if self.zygote is not None and self.zygote.usable():
            with self._lock:  # no child starts after stop() has taken the list of the live ones
                if self._stopping:
                    raise Stopped(signal.SIGTERM)
                pid = self.zygote.start(argv, env)
                if pid is not None:
                    self._forked.add(pid)
            if pid is not None:
                try:
                    code = self.zygote.wait(pid)
                finally:
                    with self._lock:
                        self._forked.discard(pid)
                return (-1 if code is None else code, *self.zygote.output(pid))
        with self._lock:
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
        """End every live child and what it started: SIGTERM, then SIGKILL after the grace; each reaped, and the
        zygote ended."""
        with self._lock:
            self._stopping = True
            live = list(self._live)
            forked = list(self._forked)
        for pid in [proc.pid for proc in live] + forked:
            _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for proc in live:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for pid in forked:
            if self.zygote is not None:
                self.zygote.wait(pid, max(0.0, deadline - time.monotonic()))
        for pid in [proc.pid for proc in live] + forked:  # the group too: what a child started may outlive it
            _signal_group(pid, signal.SIGKILL)
        for proc in live:
            proc.wait()
        for pid in forked:
            if self.zygote is not None:
                self.zygote.wait(pid)
        self.close()

    def close(self) -> None:
        """End the zygote (its children have ended) and remove its output files."""
        if self.zygote is not None:
            self.zygote.close(self.grace)


class Zygote:
    """The run's end of a zygote (:mod:`mutants.zygote`): requests out, answers in (a reader thread)."""

    def __init__(self, env: dict[str, str]) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="mutants-zygote-"))
        self._cond = threading.Condition()
        self._ready: bool | None = None  # None: still warming
        self.why = ""  # why it is not usable (it failed to warm, or ended before the run closed it)
        self._closing = False
        self._answers: dict[int, dict[str, Any]] = {}
        self._exits: dict[int, int] = {}
        self._files: dict[int, tuple[Path, Path]] = {}
        self._ids = itertools.count()
        self.proc = subprocess.Popen([sys.executable, "-m", "mutants.zygote"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, process_group=0)
        threading.Thread(target=self._read, name="zygote-answers", daemon=True).start()

    def _read(self) -> None:
        out: IO[bytes] | None = self.proc.stdout
        assert out is not None
        with contextlib.suppress(ValueError, OSError):
            for raw in out:
                answer = json.loads(raw)
                with self._cond:
                    if "ready" in answer:
                        self._ready = bool(answer["ready"])
                        self.why = str(answer.get("error", ""))
                    elif "exit" in answer:
                        self._exits[answer["pid"]] = int(answer["exit"])
                    else:
                        self._answers[answer["id"]] = answer
                        if "pid" in answer:  # a pid the system used again: the exit noted is an earlier child's
                            self._exits.pop(answer["pid"], None)
                    self._cond.notify_all()
        with self._cond:
            if self._ready is not False and not self._closing:
                self.why = self.why or "it ended unexpectedly"
            self._ready = False
            self._cond.notify_all()

    def usable(self) -> bool:
        """Whether requests go to the zygote (waits for it to have warmed)."""
        with self._cond:
            self._cond.wait_for(lambda: self._ready is not None)
            return bool(self._ready)

    def start(self, argv: list[str], env: dict[str, str]) -> int | None:
        """The pid of a child forked for ``argv`` (None: the zygote refused it, or is gone)."""
        request_id = next(self._ids)
        files = (self._folder / f"{request_id}.out", self._folder / f"{request_id}.err")
        request = {"id": request_id, "argv": argv, "env": env, "cwd": os.getcwd(),
                   "stdout": str(files[0]), "stderr": str(files[1])}
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):
            return None
        with self._cond:
            self._cond.wait_for(lambda: request_id in self._answers or self._ready is False)
            answer = self._answers.pop(request_id, {})
        pid = answer.get("pid")
        if pid is None:
            return None
        self._files[pid] = files
        return int(pid)

    def wait(self, pid: int, timeout: float | None = None) -> int | None:
        """The exit status of the child ``pid`` once it has ended (None: ``timeout`` passed first). Were the
        zygote gone, the child, no longer anyone's to report, is waited for until it is gone too (-1)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while pid not in self._exits:
                if self._ready is False and not _alive(pid):
                    return -1
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(ORPHAN_POLL_S if self._ready is False else left)
            return self._exits[pid]

    def output(self, pid: int) -> tuple[str, str]:
        """The child's stdout and stderr (its files, removed)."""
        texts = []
        for path in self._files.pop(pid):
            try:
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
                path.unlink()
            except OSError:
                texts.append("")
        if self._ready is False and pid not in self._exits:
            texts[1] += f"\nmutants.run: the zygote ended ({self.why}); the exit status of {pid} is unknown\n"
        return texts[0], texts[1]

    def close(self, grace: float) -> None:
        """End the zygote: its stdin closed (it ends what children it has left), SIGKILL after ``grace``."""
        with self._cond:
            warming = self._ready is None
            self._closing = True
        if warming:  # no child yet: nothing to end but the zygote
            _signal_group(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(grace + 1.0)
        except subprocess.TimeoutExpired:
            _signal_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        shutil.rmtree(self._folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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

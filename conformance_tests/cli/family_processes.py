"""The family's certify processes, ``--jobs`` at a time, their output shown as a run of one after another shows it.

Each operation's run is a process of its own (one spec, one report). Several run at once, since a run keeps about
one core busy and waits on timeouts, injected delays and node processes; the console still reads in the family's order:
the operation in front is shown live, each one behind it is kept until its turn and then shown whole, after the
line that names it.

The first operation's run starts alone: the others start once its session has begun, every input checked (it says
so on a pipe of its own, :data:`READY_ENV`), so that arguments it refuses are one line and nothing else runs.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO

from . import exitcodes

#: the environment variable naming the file where an operation's certify process writes what it decided (exit
#: code, report folder, backend name): the family reads it instead of guessing where the process wrote
RESULT_ENV = "PUSH_CACHE_FAMILY_RESULT"
#: the environment variable naming the pipe (a file descriptor) on which an operation's certify process says that
#: its session has begun (every input checked; an interrupt from then on ends it with its report): one byte, then it
#: closes it (a process that ends first closes it unsaid)
READY_ENV = "PUSH_CACHE_FAMILY_READY"
#: operations certified at once unless --jobs says otherwise (CI's machines have two cores)
DEFAULT_JOBS = 2


class Stopping:
    """The signals that end a family's run, while it runs: SIGTERM and SIGHUP (what CI, ``timeout`` and a closed
    terminal send) are passed on to every operation's run in progress, which ends as on Ctrl-C (its partial report
    written; a second one it ignores); Ctrl-C is not passed on, since the terminal sends it to those runs too.
    Either way no further operation starts.

    A run gets the signal once it has said that its session has begun (from then on an interrupt ends it with its
    report): one that started just before the signal is not killed before it can write its report."""

    FORWARDED = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.signum: int | None = None
        self.ready: list[subprocess.Popen[bytes]] = []
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> Stopping:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, *self.FORWARDED):
                self._previous[sig] = signal.signal(sig, self._received)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _received(self, signum: int, _frame: FrameType | None) -> None:
        self.signum = self.signum or signum
        if signum in self.FORWARDED:
            for proc in self.ready:
                self._send(proc, signum)

    def can_take(self, proc: subprocess.Popen[bytes]) -> None:
        """``proc`` has its handlers in place: a signal passed on before it now reaches it too."""
        self.ready.append(proc)
        if self.signum in self.FORWARDED:
            self._send(proc, self.signum)

    @staticmethod
    def _send(proc: subprocess.Popen[bytes], signum: int) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    def why(self) -> str:
        return f"the run was stopped ({signal.Signals(self.signum or signal.SIGINT).name}) before it started"


@dataclass
class Ended:
    """What an operation's certify process decided: its exit code and what it wrote in the result file."""

    code: int
    said: dict[str, Any] = field(default_factory=dict)
    #: the signal that killed the process (its name), where one did: its exit code is then the family's reading
    signal: str | None = None


#: an event of a running operation, for the family's one loop: (its index, kind, stream, bytes or exit code)
Event = tuple[int, str, int, Any]


class OperationProcess:
    """One operation's certify process: its output read as it comes (each stream on a thread of its own), whether
    its session has begun, and what it decided."""

    def __init__(self, index: int, argv: list[str], events: queue.Queue[Event]) -> None:
        self.index, self.argv, self.events = index, argv, events
        self.proc: subprocess.Popen[bytes] | None = None
        self.ended: Ended | None = None

    def start(self) -> None:
        fd, self._result_path = tempfile.mkstemp(prefix="push-cache-family-", suffix=".json")
        os.close(fd)
        ready_r, ready_w = os.pipe()
        try:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         pass_fds=(ready_w,),
                                         env={**os.environ, RESULT_ENV: self._result_path, READY_ENV: str(ready_w)})
        finally:
            os.close(ready_w)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._ready, args=(ready_r,), daemon=True).start()
        err = threading.Thread(target=self._read, args=(self.proc.stderr, 2), daemon=True)
        err.start()
        threading.Thread(target=self._read_then_wait, args=(self.proc.stdout, err), daemon=True).start()

    def _ready(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as pipe:
            said = pipe.read(1)
        self.events.put((self.index, "ready", 0, bool(said)))

    def _read(self, stream: BinaryIO, which: int) -> None:
        while chunk := stream.read1(1 << 16):  # type: ignore[attr-defined]
            self.events.put((self.index, "output", which, chunk))

    def _read_then_wait(self, stream: BinaryIO, err: threading.Thread) -> None:
        self._read(stream, 1)
        err.join()
        assert self.proc is not None
        self.events.put((self.index, "ended", 0, self.proc.wait()))

    def finish(self, code: int, stopped: bool) -> Ended:
        try:
            said = json.loads(Path(self._result_path).read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            said = {}
        finally:
            Path(self._result_path).unlink(missing_ok=True)
        # killed by a signal: one the family's stop passed on ends a stopped run (partial, as its report says where it
        # wrote one); any other left no verdict
        killed = exitcodes.PARTIAL if stopped else exitcodes.INTERNAL_ERROR
        self.ended = Ended(code if code >= 0 else killed, said if isinstance(said, dict) else {},
                           None if code >= 0 else _signal_name(-code))
        return self.ended


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Shown:
    """The console in the family's order: the operation in front live, each one behind it kept until its turn."""

    def __init__(self, heading: Callable[[int], str | None]) -> None:
        self.heading = heading
        self.front = 0
        self.started: set[int] = set()
        self.kept: dict[int, list[tuple[int, bytes]]] = {}

    def start(self, index: int) -> None:
        self.started.add(index)
        if index == self.front:
            self._turn(index)

    def output(self, index: int, which: int, chunk: bytes) -> None:
        if index == self.front:
            _write(which, chunk)
        else:
            self.kept.setdefault(index, []).append((which, chunk))

    def end(self, done: set[int]) -> None:
        """Move the front past every operation that has ended (``done``), showing each one it reaches."""
        while self.front in done:
            self.front += 1
            if self.front in self.started:
                self._turn(self.front)

    def _turn(self, index: int) -> None:
        # once per operation: it becomes the front once, and is shown then if started, else when it starts
        line = self.heading(index)
        if line:
            _write(1, (line + "\n").encode())
        for which, chunk in self.kept.pop(index, []):
            _write(which, chunk)


def _write(which: int, chunk: bytes) -> None:
    out = sys.stdout if which == 1 else sys.stderr
    out.flush()  # what the family printed itself comes first
    out.buffer.write(chunk)
    out.buffer.flush()


def run_at_once(argvs: Sequence[list[str]], jobs: int, stopping: Stopping,
                heading: Callable[[int], str | None]) -> list[Ended | None]:
    """Run each of ``argvs`` (an operation's certify command, in the family's order), ``jobs`` at a time; what
    each decided, or None for one not started (the run was stopped, or the first refused its arguments)."""
    events: queue.Queue[Event] = queue.Queue()
    runs = [OperationProcess(i, argv, events) for i, argv in enumerate(argvs)]
    shown = Shown(heading)
    waiting = list(range(len(runs)))
    running: set[int] = set()
    done: set[int] = set()
    gate_open = False  # the first run's session has begun, or it ended refusing none of its arguments

    def start_more() -> None:
        # the first run alone until its session has begun (or it ended without refusing its arguments)
        while waiting and stopping.signum is None and len(running) < jobs and (gate_open or waiting[0] == 0):
            index = waiting.pop(0)
            runs[index].start()
            running.add(index)
            shown.start(index)

    start_more()
    while running:
        index, kind, which, value = events.get()
        if kind == "output":
            shown.output(index, which, value)
        elif kind == "ready":
            proc = runs[index].proc
            if value and proc is not None:
                stopping.can_take(proc)
                gate_open = gate_open or index == 0
        else:
            ended = runs[index].finish(int(value), stopped=stopping.signum is not None)
            running.discard(index)
            done.add(index)
            if index == 0 and not gate_open:
                if ended.code == exitcodes.USAGE_ERROR:
                    waiting.clear()  # its one line said why: nothing else runs
                gate_open = True
            shown.end(done)
        start_more()
    return [run.ended for run in runs]

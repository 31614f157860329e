"""The backend's process and everything it starts: started with a mark, watched for its exit, ended whole.

* The kit becomes a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): a process the backend starts and
  orphans (a daemon that forked twice and called ``setsid()``) is re-parented to the kit instead of to init, so it
  stays within the kit's reach and the kit reaps it.
* Every process of one backend generation carries a mark in its environment (:data:`MARK_ENV`, a fresh token);
  :meth:`BackendProcess.end` kills the backend's process, its descendants and every process that still carries
  the mark, whatever became of its parents and sessions (process groups are not enough: ``setsid()`` leaves them).
* The backend's exit is watched through a pidfd: the kit learns of a crash when the process exits, with its exit
  status, even while a descendant holds the pipe open.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

#: environment variable that marks every process of one backend generation
MARK_ENV = "PUSH_CACHE_KIT_BACKEND"
PR_SET_CHILD_SUBREAPER = 36
#: rounds of "find, kill" (a process may fork while its relatives are being killed)
KILL_ROUNDS = 4


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); False where that is not possible."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def describe_status(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"was killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _processes() -> dict[int, int]:
    """pid -> parent pid, for every process this one can see."""
    out: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        out[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def _marked(pid: int, mark: bytes) -> bool:
    try:
        return mark in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


class BackendProcess:
    """One backend process (``argv``), marked; ``fds`` are passed to it."""

    def __init__(self, argv: Sequence[str], fds: Sequence[int], log: IO[bytes]) -> None:
        self.token = secrets.token_hex(12)
        env = {**os.environ, MARK_ENV: self.token}
        self.popen = subprocess.Popen(  # noqa: S603 - the kit's own module, with the interpreter running the kit
            list(argv), pass_fds=tuple(fds), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=env, start_new_session=True,  # Ctrl-C reaches the kit, which ends the run and this process
        )
        self.pid = self.popen.pid
        self.pidfd: int | None = None
        with contextlib.suppress(OSError, AttributeError):
            self.pidfd = os.pidfd_open(self.pid)

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float) -> int | None:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def status(self) -> str:
        return describe_status(self.wait(5.0))

    def relatives(self) -> set[int]:
        """The backend's process, its descendants, and every process carrying this generation's mark."""
        procs = _processes()
        mark = f"{MARK_ENV}={self.token}".encode()
        found = {p for p in procs if p != os.getpid() and _marked(p, mark)}
        if self.popen.returncode is None:
            found.add(self.pid)
        children: dict[int, list[int]] = {}
        for pid, ppid in procs.items():
            children.setdefault(ppid, []).append(pid)
        todo = list(found)
        while todo:
            for child in children.get(todo.pop(), ()):
                if child not in found and child != os.getpid():
                    found.add(child)
                    todo.append(child)
        return found

    def end(self) -> list[int]:
        """SIGKILL the backend's process and all its relatives, reap what became the kit's children; the pids
        killed."""
        killed: list[int] = []
        for _ in range(KILL_ROUNDS):
            victims = self.relatives() - set(killed)
            if not victims:
                break
            for pid in victims:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        if self.popen.returncode is None:
            self.wait(5.0)
        self._reap([p for p in killed if p != self.pid])
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = None
        return killed

    @staticmethod
    def _reap(pids: list[int], within: float = 2.0) -> None:
        """Wait for the killed processes that the kit adopted (as subreaper), so none is left a zombie."""
        deadline = time.monotonic() + within
        left = set(pids)
        while left and time.monotonic() < deadline:
            for pid in list(left):
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:  # not the kit's child: its own parent reaps it
                    left.discard(pid)
                    continue
                if done:
                    left.discard(pid)
            if left:
                time.sleep(0.01)


def output_tail(log: IO[bytes] | None, lines: int) -> str:
    """The last ``lines`` lines a process wrote to ``log`` (its stdout and stderr), as a suffix for an error
    message."""
    if log is None:
        return ""
    try:
        log.flush()
        size = log.seek(0, os.SEEK_END)
        log.seek(max(0, size - 8000))
        text = log.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    kept = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return ("; its output ended with:\n" + "\n".join(kept)) if kept else "; it wrote nothing"


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


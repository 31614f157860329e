"""A mutants run ends with its certify processes: on SIGTERM or SIGHUP, and when its parent (tox) is killed, no
certify process, nor anything one started, nor the zygote they are forked from, is left once the run has exited,
and the run exits within a short bound (with and without the zygote).

Linux only, as the kit's CI: the processes are read from /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mutants.children import PARENT_POLL_S, STOP_GRACE_S
from tests.helpers import ROOT, child_pythonpath

#: two mutants, each certified on the whole suite (tens of seconds): a run left to itself outlasts the bound
MUTANTS = "ignores_src_batch_index,one_byte_past"
#: the run's bound after the signal: its children's grace, the parent poll, and its own exit on a busy machine (left
#: to itself, a run certifies its two mutants for tens of seconds)
BOUND_S = STOP_GRACE_S + PARENT_POLL_S + 8.0


def _processes() -> dict[int, tuple[str, int, int]]:
    """pid -> (state, parent pid, process group) of every process /proc shows."""
    seen = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # it ended while we looked
                continue
            state, ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
            seen[int(entry.name)] = (state, int(ppid), int(pgrp))
    return seen


def _live_in_groups(groups: set[int]) -> list[int]:
    """The live processes among ``groups``' leaders and in their process groups."""
    return [pid for pid, (state, _, pgrp) in _processes().items()
            if (pid in groups or pgrp in groups) and state not in "ZX"]


def _is_zygote(pid: int) -> bool:
    try:
        return b"mutants.zygote" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _certify_children(run_pid: int, want: int, timeout: float = 120.0) -> set[int]:
    """The pids of the run's ``want`` certify children, once they have started, and of its zygote if it has one
    (the certify processes are then the zygote's children)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = {pid: ppid for pid, (state, ppid, _) in _processes().items() if state not in "ZX"}
        kids = {pid for pid, ppid in live.items() if ppid == run_pid}
        zygotes = {pid for pid in kids if _is_zygote(pid)}
        certifying = (kids - zygotes) | {pid for pid, ppid in live.items() if ppid in zygotes}
        if len(certifying) >= want:
            time.sleep(1.0)  # inside pytest by now, its own SIGTERM handler installed
            return certifying | zygotes
        time.sleep(0.1)
    raise AssertionError(f"python -m mutants.run (pid {run_pid}) started fewer than {want} certify processes")


def _run_argv(out: Path, *more: str) -> list[str]:
    return [sys.executable, "-m", "mutants.run", "--only", MUTANTS, "--jobs", "2", "--out", str(out), *more]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": child_pythonpath()}


@pytest.mark.parametrize(("signum", "more"), [(signal.SIGTERM, ()), (signal.SIGHUP, ()),
                                              (signal.SIGTERM, ("--no-zygote",))])
def test_a_signal_ends_the_run_and_every_certify_process(tmp_path, signum, more):
    with open(tmp_path / "run.log", "w+") as log:
        run = subprocess.Popen(_run_argv(tmp_path / "out", *more), cwd=ROOT, env=_env(), stdout=log, stderr=log)
        try:
            kids = _certify_children(run.pid, 2)
            sent = time.monotonic()
            run.send_signal(signum)
            code = run.wait(BOUND_S)
            took = time.monotonic() - sent
        finally:
            run.kill()
            run.wait()
        log.seek(0)
        said = log.read()
    left = _live_in_groups(kids)
    assert not left, f"python -m mutants.run, {signum.name}: processes left in its children's groups {left}"
    assert code == 128 + signum and took <= BOUND_S, (code, took, said[-2000:])
    assert f"stopped by {signum.name}" in said and not (tmp_path / "out" / "kill-matrix.json").exists(), said[-2000:]


def test_a_killed_parent_ends_the_run_and_every_certify_process(tmp_path):
    """As when tox itself is terminated: it forwards nothing, its child sees only that its parent is gone."""
    parent_code = ("import subprocess, sys; p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, "
                   "stderr=subprocess.DEVNULL); print(p.pid, flush=True); p.wait()")
    parent = subprocess.Popen([sys.executable, "-c", parent_code, *_run_argv(tmp_path / "out")], cwd=ROOT,
                              env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        run_pid = int(parent.stdout.readline())
        kids = _certify_children(run_pid, 2)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline and (_live_in_groups(kids) or _live_in_groups({run_pid})
                                               or _processes().get(run_pid, ("Z",))[0] not in "ZX"):
            time.sleep(0.1)
        run_state = _processes().get(run_pid, ("gone",))[0]
        left = _live_in_groups(kids)
    finally:
        parent.kill()
    assert run_state in ("gone", "Z", "X") and not left, \
        f"python -m mutants.run (pid {run_pid}) after its parent was killed: state {run_state}, left {left}"

"""Node processes and node agents: whether a process is gone, and ``python -m nodehost serve`` started by a test."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tests.helpers import ROOT, child_pythonpath

#: two loopback addresses, one agent each: nodes of one cluster on two "hosts"
ADDRESSES = ("127.0.0.2", "127.0.0.3")


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody waited for)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


class AgentRun:
    """One ``python -m nodehost serve`` process started by a test, its output in ``log`` (ended by pid)."""

    def __init__(self, ip: str, key: str, log: Path, pythonpath: Sequence[Path] = ()) -> None:
        env = dict(os.environ, NODEHOST_KEY=key, UCX_NET_DEVICES="lo", NIXL_LOG_LEVEL="ERROR",
                   PYTHONPATH=child_pythonpath(pythonpath))
        self.log = log
        with open(log, "w") as out:  # a file, not a pipe: the agent logs a line per node process
            self.proc = subprocess.Popen([sys.executable, "-m", "nodehost", "serve", "--listen", f"{ip}:0"],
                                         cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while not (found := re.search(r"listening on ([0-9.]+):(\d+)", self.text())):
            assert self.proc.poll() is None and time.monotonic() < deadline, f"agent did not start: {self.text()!r}"
            time.sleep(0.05)
        self.address = (found.group(1), int(found.group(2)))

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def nodes_started(self) -> int:
        return len(re.findall(r"^node process \d+ started", self.text(), re.MULTILINE))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


def agents_env(runs: Sequence[AgentRun], key: str) -> dict[str, str]:
    """What a certify run needs to put its nodes on ``runs``."""
    return {"NODEHOST_KEY": key, "NODEHOST_AGENTS": ",".join(f"{h}:{p}" for h, p in (r.address for r in runs))}

"""Processes the tests watch: whether one is gone, and the backend process a certify run started."""

from __future__ import annotations

from pathlib import Path


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody waited for)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def child_running(parent: int, command: str) -> int | None:
    """The pid of a child of ``parent`` whose command line holds ``command`` (e.g. the isolated backend's process,
    ``conformance_tests.isolation.child``), or None."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmd = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent and command in cmd:
                return int(entry.name)
    return None

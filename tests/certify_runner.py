"""Run the certify command in a subprocess as a user would, with the test fakes importable by module name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAKES = ROOT / "tests" / "suite" / "fakes"


def certify(*args: str, cwd: Path = ROOT, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(FAKES), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("PUSH_CACHE_BACKEND", None)  # the backend is what the test names, never the caller's environment
    return subprocess.run(
        [sys.executable, "-m", "conformance_tests", "certify", "-p", "no:warnings", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    """A user's shell gives the run the default Ctrl-C; a pytest-xdist worker ignores SIGINT, and a child would
    inherit that (so a run could never be interrupted)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

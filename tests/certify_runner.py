"""Run the certify command in a subprocess as a user would, with the test fakes importable by module name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAKES = ROOT / "tests" / "kit" / "fakes"


#: the fakes stand for vendors' backends, which the kit isolates by default; the verdict-mechanics self-tests run
#: them in the kit's process, as fast as the reference (tests/kit/test_isolation.py runs them isolated)
IN_PROCESS = ("--isolation", "off")


def certify(*args: str, cwd: Path = ROOT, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    if not any(a.startswith("--isolation") for a in args):
        args = (*IN_PROCESS, *args)
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

"""``python -m conformance_tests certify`` in a subprocess, as a user runs it, with the test fakes importable by
module name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.helpers import ROOT, child_pythonpath

FAKES = ROOT / "tests" / "kit" / "fakes"

#: the fakes stand for vendors' backends, which the kit isolates by default; the verdict-mechanics self-tests run
#: them in the kit's process, as fast as the reference (tests/kit/test_isolation.py runs them isolated)
IN_PROCESS = ("--isolation", "off")


#: the operation the self-tests certify unless they name one (certify's own default is the whole family, which a
#: test of one operation's mechanics need not pay for four times over)
ONE_OPERATION = ("--operation", "push_cache")


def one_operation(args: Sequence[str], operation: Sequence[str] = ONE_OPERATION) -> list[str]:
    """``args`` with ``operation`` in front, unless they name an operation or a spec file (one operation's)."""
    if any(a.split("=", 1)[0] in ("--operation", "--spec") for a in args):
        return list(args)
    return [*operation, *args]


def certify(*args: str, pythonpath: Sequence[Path] = (FAKES,), env: Mapping[str, str] | None = None,
            isolation: Sequence[str] = IN_PROCESS, cwd: Path = ROOT, operation: Sequence[str] = ONE_OPERATION,
            timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``python -m conformance_tests certify ARGS``, preceded by ``isolation`` where ARGS do not choose one (``()``:
    the kit's default) and by ``operation`` where they name no operation and no spec file (``()``: certify's
    default, the whole family). ``pythonpath`` comes first on PYTHONPATH, then the checkout; ``env`` is added. The
    backend is what ARGS name and the other hosts what ``env`` names, never the caller's environment; NIXL runs
    over loopback unless the environment says otherwise."""
    if isolation and not any(a.startswith("--isolation") for a in args):
        args = (*isolation, *args)
    args = tuple(one_operation(args, operation))
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("NODEHOST_") and k != "PUSH_CACHE_BACKEND"}
    child = {"UCX_NET_DEVICES": "lo", "NIXL_LOG_LEVEL": "ERROR", **inherited, **(env or {}),
             "PYTHONPATH": child_pythonpath(pythonpath)}
    return subprocess.run(
        [sys.executable, "-m", "conformance_tests", "certify", "-p", "no:warnings", *args],
        cwd=cwd, env=child, capture_output=True, text=True, timeout=timeout, preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    """A user's shell gives the run the default Ctrl-C; a pytest-xdist worker ignores SIGINT, and a child would
    inherit that (so a run could never be interrupted)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

"""The ``llm_datadist`` adapter: the shim (the multi-process reference under the module name ``llm_datadist``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIM = """\
# made by tests/adapters: the multi-process reference under the vendor's module name
from reference_impl.multiprocess.datadist import *  # noqa: F401,F403
from reference_impl.multiprocess.datadist import __all__, __version__  # noqa: F401
"""


@pytest.fixture(scope="session")
def shim_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder with an ``llm_datadist`` package that re-exports the reference's vendor API."""
    root = tmp_path_factory.mktemp("shim")
    (root / "llm_datadist").mkdir()
    (root / "llm_datadist" / "__init__.py").write_text(SHIM)
    yield root


def run_certify(*args: str, pythonpath: list[Path], timeout: float,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m conformance_tests certify ...`` as a user runs it, with ``pythonpath`` first (and ``env``)."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("NODEHOST_")}  # the test names its own
    env = dict(inherited, **(env or {}))
    env["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), str(ROOT)])
    env.pop("PUSH_CACHE_BACKEND", None)
    env.setdefault("UCX_NET_DEVICES", "lo")
    env.setdefault("NIXL_LOG_LEVEL", "ERROR")
    return subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "-p", "no:warnings", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

"""The ``llm_datadist`` adapter: the shim (the multi-process reference under the module name ``llm_datadist``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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

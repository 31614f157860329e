"""Helpers shared by the self-tests, one module per concern. Tests import them as ``from tests.helpers.nodes
import specs``: pyproject puts the checkout on sys.path (``pythonpath = ["."]``), where ``tests`` is a namespace
package (it has no ``__init__.py``) and this folder a package of it.

- ``nodes``: node options and specs, the one cluster factory (every ``make_cluster`` fixture), relinking
- ``data``: bytes in a node's caches and raw memory (random, sentinel, guard bytes) and reading them back
- ``processes``: whether a node process is gone
- ``ssh``: other hosts on loopback addresses (an ``sshd`` each, started with generated keys) and strangers at them
- ``nixl``: the NIXL skip of the folders whose node processes move bytes with it
- ``certify``: ``python -m conformance_tests certify`` run as a user runs it
- ``seeds``: the push_cache documentation pages beside the checkout

Here: the checkout's root, the PYTHONPATH of the child processes the tests start, and the docs' generators
(``docs/*.py``, scripts rather than a package) loaded as modules.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

#: the checkout
ROOT = Path(__file__).resolve().parents[2]


def child_pythonpath(first: Iterable[Path | str] = ()) -> str:
    """A child's PYTHONPATH: ``first``, then the checkout, then the inherited PYTHONPATH."""
    paths = [*map(str, first), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in paths if p)


def docs_script(name: str) -> ModuleType:
    """``docs/<name>.py`` loaded as a module (its ``__main__`` block does not run)."""
    spec = importlib.util.spec_from_file_location(f"docs_{name}", ROOT / "docs" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

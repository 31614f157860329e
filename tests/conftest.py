"""Self-test session: keep a module marked ``pytestmark = pytest.mark.xdist_group(NAME)`` on one pytest-xdist worker,
and start the tests marked ``starts_first`` first.

A module whose module fixture makes full certification runs must run on one worker, or each worker makes the
runs again. ``--dist loadgroup`` should do that, but pytest-xdist 3.8 marks the group by rewriting
``item._nodeid``, which pytest 9.2 no longer reads (pytest-dev/pytest-xdist#1386, open): the group is then
silently ignored. This scheduler reads the modules' marks itself and groups their tests by file.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest


def grouped_modules(root: Path, rootdir: Path) -> dict[str, str]:
    """Test file (as node ids spell it) -> group name, for each module whose ``pytestmark`` is an xdist_group."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("test_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)):
                continue
            call = node.value
            if ast.unparse(call.func).endswith("xdist_group") and call.args and isinstance(call.args[0], ast.Constant):
                out[path.relative_to(rootdir).as_posix()] = str(call.args[0].value)
    return out


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    groups = grouped_modules(Path(__file__).resolve().parent, config.rootpath)

    class ModuleGroupScheduling(LoadGroupScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            group = groups.get(nodeid.split("::", 1)[0])
            return f"group:{group}" if group is not None else str(super()._split_scope(nodeid))

    return ModuleGroupScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``starts_first`` (minutes each) first, in their order: under ``--dist loadgroup`` the first
    work units go one to each worker, so two such tests run side by side from the start instead of one of them
    starting last and running alone at the end (tox -e nixl)."""
    items.sort(key=lambda item: item.get_closest_marker("starts_first") is None)

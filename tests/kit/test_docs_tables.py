"""The hand-written tables of the documents say what the checkout holds: docs/architecture.md's package table has
one row per top-level folder and per subpackage of a top-level package, each row's imports column names exactly
the project packages and the installed distributions its code imports, the tests row names every folder of
tests/, and the README's layout table names every top-level package."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from conformance_tests.spec import load_spec
from conformance_tests.spec.paths import operation_spec_path
from tests.helpers import ROOT

ARCHITECTURE = ROOT / "docs" / "architecture.md"
README = ROOT / "README.md"
#: the packages of this checkout (``spec/`` is installed as ``push_cache_spec``)
PROJECT = {"conformance_tests", "reference_impl", "nodehost", "datawire", "mutants", "examples", "push_cache_spec",
           "spec", "tests", "bench", "docs"}
#: the tests import modules by name that are not distributions (fakes they write, a vendor package that is not
#: installed): their row's third-party names are not checked
UNCHECKED_THIRD_PARTY = {"tests"}
CELL_NAME = re.compile(r"`([^`]+)`")


def _table(text: str, marker: str) -> list[list[str]]:
    """The cells of each body row of the table between ``<!-- {marker}:begin -->`` and ``<!-- {marker}:end -->``."""
    begin, end = f"<!-- {marker}:begin", f"<!-- {marker}:end -->"
    assert begin in text and end in text, f"the {marker} table is marked ({begin} ... {end})"
    body = text.split(begin, 1)[1].split("\n", 1)[1].split(end, 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in body.splitlines()
            if line.startswith("|")]
    return [r for r in rows[2:]]  # the header and its rule


def package_rows(text: str) -> dict[str, list[str]]:
    """path (as the first cell's first code span names it, without its trailing slash) -> the row's cells."""
    rows = {}
    for cells in _table(text, "packages"):
        names = CELL_NAME.findall(cells[0])
        assert names, f"a row names its path in backticks: {cells}"
        rows[names[0].rstrip("/")] = cells
    return rows


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, text=True, check=True).stdout
    return [p for p in out.splitlines() if (ROOT / p).exists()]


def expected_rows(files: list[str]) -> set[str]:
    """Every top-level folder (hidden ones aside) and every subpackage of a top-level package (not of tests/,
    whose folders its own row lists)."""
    folders = {p.split("/")[0] for p in files if "/" in p and not p.startswith(".")}
    subpackages = {str(Path(p).parent) for p in files if p.count("/") == 2 and p.endswith("/__init__.py")
                   and p.split("/")[0] != "tests"}
    return folders | subpackages


def _row_of(path: str, rows: set[str]) -> str | None:
    owners = [r for r in rows if path.startswith(r + "/")]
    return max(owners, key=len) if owners else None


def _absolute(module: str, node: ast.ImportFrom) -> str | None:
    if node.level == 0:
        return node.module
    parts = module.split(".")[: -node.level]
    return ".".join([*parts, *([node.module] if node.module else [])]) or None


def imports_by_row(files: list[str], rows: set[str]) -> dict[str, tuple[set[str], set[str]]]:
    """row -> (the project packages, the installed distributions) its Python files import, anywhere in them.

    A project package is named by its top-level name; a row's own code (its folder, subpackages with rows of
    their own included) is not an import of it, its parent package is."""
    found: dict[str, tuple[set[str], set[str]]] = {r: (set(), set()) for r in rows}
    for path in files:
        row = _row_of(path, rows)
        if row is None or not path.endswith(".py"):
            continue
        module = path[:-3].replace("/", ".").removesuffix(".__init__")
        if path.endswith("__init__.py"):
            module += ".__init__"
        names: list[str] = []
        for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and (name := _absolute(module, node)):
                names.append(name)
        project, third = found[row]
        for name in names:
            top = name.split(".")[0]
            if top in PROJECT:
                if not (name.replace(".", "/") + "/").startswith(row + "/"):
                    project.add(top)
            elif top not in sys.stdlib_module_names and top != "__future__":
                third.add(top)
    return found


def test_the_package_table_has_a_row_per_folder_and_subpackage():
    files = tracked_files()
    assert set(package_rows(ARCHITECTURE.read_text(encoding="utf-8"))) == expected_rows(files)


def test_each_rows_imports_are_what_its_code_imports():
    rows = package_rows(ARCHITECTURE.read_text(encoding="utf-8"))
    found = imports_by_row(tracked_files(), set(rows))
    wrong = []
    for path, cells in sorted(rows.items()):
        named = set(CELL_NAME.findall(cells[2].split(" — ")[0]))
        project, third = found[path]
        expected = project if path in UNCHECKED_THIRD_PARTY else project | third
        if path in UNCHECKED_THIRD_PARTY:
            named &= PROJECT
        if named != expected:
            wrong.append(f"{path}: the table names {sorted(named)}, its code imports {sorted(expected)}")
    assert wrong == []


def test_the_tests_row_names_every_folder_of_tests():
    cells = package_rows(ARCHITECTURE.read_text(encoding="utf-8"))["tests"]
    folders = {p.split("/")[1] for p in tracked_files() if p.startswith("tests/") and p.count("/") >= 2}
    named = {n.rstrip("/").removeprefix("tests/") for n in CELL_NAME.findall(cells[1])}
    assert folders <= named, sorted(folders - named)


def test_the_readmes_layout_table_names_every_top_level_package():
    packages = {p.split("/")[0] for p in tracked_files() if p.count("/") == 1 and p.endswith("/__init__.py")}
    layout = {CELL_NAME.findall(cells[0])[0].rstrip("/") for cells in _table(README.read_text(encoding="utf-8"),
                                                                             "layout")}
    assert packages, "the checkout's packages are found"
    assert packages <= layout, sorted(packages - layout)



def test_the_readmes_counts_of_push_blocks_clauses_and_deviations_are_its_specs():
    """The README's push_blocks row states its spec's clause counts and how many deviations vendor mode fails:
    both read from the spec here, so a clause added without the row following it fails."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `push-cache-kit certify --operation push_blocks`"))
    spec = load_spec(operation_spec_path("push_blocks"))
    levels = Counter(c.level.value for c in spec.clauses)
    stated = re.search(r"\((\d+) clauses: (\d+) must, (\d+) should, (\d+) may", row)
    assert stated is not None, row[:300]
    assert tuple(map(int, stated.groups())) == (len(spec.clauses), levels["must"], levels["should"], levels["may"])
    failing = re.search(r"fails exactly the (\d+) clauses whose `deviation:`", row)
    assert failing is not None and int(failing.group(1)) == sum(1 for c in spec.clauses if c.deviation), row[-600:]

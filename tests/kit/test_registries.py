"""Registries that must match another, each owned once: the schema's clause families are the suite's modules, the
wire's vocabulary is the node API the vendor's package offers, and the usage-error exit code is
``exitcodes.USAGE_ERROR`` wherever a command returns or exits with it."""

from __future__ import annotations

import ast
from pathlib import Path

import reference_impl
from conformance_tests.spec import families
from datawire import vocabulary
from nodehost import vendor_api
from tests.helpers import ROOT

SUITE = ROOT / "conformance_tests" / "suite"
#: the folders whose code returns exit codes (the kit, its commands, the mutant runner, benchmarks, the node host)
CODE = ("conformance_tests", "mutants", "bench", "nodehost", "reference_impl", "datawire", "docs", "examples")
#: sites still returning a literal 2, each owned by another change of issue 32 (the report commands belong to the
#: `report` helper's branch); an entry goes once its file has none, and the test fails while a stale one remains
PENDING = {"conformance_tests/report/cli.py": 2, "conformance_tests/report/site.py": 2}


def _family_of(module: Path) -> str | None:
    """The family a suite module's ``test_clause = family_test("<family>")`` names."""
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "family_test"
                and node.args and isinstance(node.args[0], ast.Constant)):
            return str(node.args[0].value)
    return None


def test_the_schemas_families_are_the_suite_modules():
    modules = {p.stem.removeprefix("test_"): _family_of(p) for p in SUITE.glob("test_*.py")}
    assert sorted(modules) == sorted(families())
    assert {name: fam for name, fam in modules.items() if fam != name} == {}, "each module runs its own family"


def test_the_node_api_is_the_vendor_modules_names():
    """Every name node.api offers is a module-level name of ``llm_datadist`` (all of them but the entry point the
    node host itself calls), and the reference mirrors each."""
    assert sorted(vocabulary.NODE_API_NAMES) == sorted(set(vendor_api.MODULE) - {"LLMDataDist"})
    assert [n for n in vocabulary.NODE_API_NAMES if not hasattr(reference_impl, n)] == []


def test_the_vocabulary_names_only_node_api_names():
    """What the wire builds by name (enums, value types, the exception and its status enum) and what the tests build
    their arguments from are node API names; the rest of the node API crosses as handles."""
    wire = {*vocabulary.ENUMS, *vocabulary.VALUE_TYPES, vocabulary.LLM_EXCEPTION, vocabulary.STATUS_ENUM}
    assert wire - set(vocabulary.NODE_API_NAMES) == set()
    assert set(vocabulary.API_NAMES) - set(vocabulary.NODE_API_NAMES) == set()
    assert len(set(vocabulary.NODE_API_NAMES)) == len(vocabulary.NODE_API_NAMES)


def _is_two(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value == 2 and type(node.value) is int


def _exits_with_two(node: ast.AST) -> bool:
    """``exit(2)``, ``sys.exit(2)``, ``SystemExit(2)``, ``parser.exit(2, ...)``."""
    if not isinstance(node, ast.Call) or not node.args or not _is_two(node.args[0]):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name in ("exit", "SystemExit", "_exit")


def literal_exit_twos(tree: ast.AST) -> list[int]:
    """The lines that return or exit with a literal 2: ``return 2``, an exit call with 2, and ``... else 2`` in a
    handler of SystemExit (argparse's code passed on)."""
    found = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Return) and _is_two(n.value)]
    found += [n.lineno for n in ast.walk(tree) if _exits_with_two(n)]
    for handler in ast.walk(tree):
        if isinstance(handler, ast.ExceptHandler) and "SystemExit" in ast.unparse(handler.type or ast.Pass()):
            found += [n.lineno for n in ast.walk(handler) if isinstance(n, ast.IfExp)
                      and (_is_two(n.body) or _is_two(n.orelse))]
    return sorted(set(found))


def test_no_literal_usage_exit_code_is_left():
    sites = {}
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            lines = literal_exit_twos(ast.parse(path.read_text(encoding="utf-8")))
            if lines:
                sites[str(path.relative_to(ROOT))] = lines
    pending = {p: len(lines) for p, lines in sites.items() if p in PENDING}
    assert {p: lines for p, lines in sites.items() if p not in PENDING} == {}, "use exitcodes.USAGE_ERROR"
    assert pending == PENDING, "a PENDING entry is stale: drop it"


def test_the_literal_scan_finds_each_form():
    source = ("def a():\n    return 2\n"
              "def b():\n    sys.exit(2)\n"
              "def c():\n    try:\n        pass\n    except SystemExit as exc:\n"
              "        return exc.code if isinstance(exc.code, int) else 2\n"
              "def d():\n    return USAGE_ERROR\n"
              "def e(x):\n    return x if x else 2\n")
    assert literal_exit_twos(ast.parse(source)) == [2, 4, 9]

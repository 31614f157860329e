"""Verdict kinds and labels have one owner (conformance_tests/report/model.py: VerdictKind, the label constants and
LABEL_KIND): no module that reads or writes a report spells one as a bare string, where a typo would pass every
type check and silently compare unequal. An AST scan, so comments and docstrings may still say them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conformance_tests.report import model
from conformance_tests.report.model import LABEL_KIND, VerdictKind
from conformance_tests.report.shades import Shade, VerdictClass

ROOT = Path(__file__).resolve().parents[2]
SCANNED = sorted([*(ROOT / "conformance_tests" / "report").glob("*.py"), ROOT / "mutants" / "run.py",
                  ROOT / "conformance_tests" / "running" / "finish.py"])
KINDS = {kind.value for kind in VerdictKind}
SHADES = {shade.value for shade in Shade}
LABELS = set(LABEL_KIND)
#: the enums that define a vocabulary, by their module: their own members spell it
OWNERS = {("model.py", VerdictKind.__name__), ("shades.py", Shade.__name__), ("shades.py", VerdictClass.__name__)}
#: methods whose first argument names a field of a report part ("certified", "partial" are verdict fields too)
FIELD_METHODS = {"get", "setdefault", "pop"}


def _field_positions(tree: ast.AST) -> set[int]:
    """ids of the string constants that name a field: a subscript's key, a .get's first argument, a dict display's
    key (a verdict has a ``certified`` and a ``partial`` field), unless every key of that display is a kind or a
    shade: that is a map by kind (as site.py's and htmlpage.py's colour maps were), and it keys on the enums."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            out.add(id(node.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FIELD_METHODS:
            if node.args:
                out.add(id(node.args[0]))
        elif isinstance(node, ast.Dict):
            keys = [key for key in node.keys if key is not None]
            by_kind = all(isinstance(key, ast.Constant) and key.value in KINDS | SHADES for key in keys)
            if not by_kind:
                out.update(id(key) for key in keys)
    return out


def _owner_constants(tree: ast.AST, path: Path) -> set[int]:
    """The definitions themselves: the members of the enums of OWNERS and the label constants of model.py."""
    if path.parent.name != "report":
        return set()
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and (path.name, node.name) in OWNERS:
            out.update(id(n) for n in ast.walk(node) if isinstance(n, ast.Constant))
        elif path.name == "model.py" and isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if all(isinstance(t, ast.Name) and getattr(model, t.id, None) in LABELS for t in node.targets):
                out.add(id(node.value))
    return out


def bare_vocabulary(path: Path) -> list[str]:
    """Each string constant of ``path`` that spells a verdict kind or label (or starts with a label) outside a
    field position, as ``line: 'text'``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed = _field_positions(tree) | _owner_constants(tree, path)
    return [f"{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in allowed
            and (node.value in KINDS or node.value in LABELS or node.value.startswith(tuple(LABELS)))]


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_bare_verdict_kind_or_label(path: Path) -> None:
    assert bare_vocabulary(path) == []


def test_the_scan_finds_a_bare_kind_and_a_label_prefix(tmp_path: Path) -> None:
    # the scan itself can fail: the two spellings this change removed (site.py's map, mutants/run.py's prefix)
    sample = tmp_path / "sample.py"
    sample.write_text('SHADE = {"certified": "ok"}\nCLASS = "partial" if x else "bad"\n'
                      'blocked = label.startswith("NOT CERTIFIED")\nok = verdict["certified"] and v.get("partial")\n',
                      encoding="utf-8")
    assert sorted(bare_vocabulary(sample)) == ["1: 'certified'", "2: 'partial'", "3: 'NOT CERTIFIED'"]


def test_the_exit_codes_know_every_verdict_kind():
    """exitcodes.py spells the kinds itself (it must import no dependency: the CLI's missing-dependency check
    reads it), so its map is held to VerdictKind here: a kind added, renamed or dropped fails."""
    from conformance_tests.cli.exitcodes import BY_VERDICT_KIND

    assert set(BY_VERDICT_KIND) == KINDS, (sorted(BY_VERDICT_KIND), sorted(KINDS))

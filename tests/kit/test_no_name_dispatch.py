"""Meaning lives in the spec's data: no suite behaviour may depend on a clause's title, a case's name or the text
of a clause ID.  Checked two ways: statically (the suite's code never reads those as data) and by running the
suite on a spec whose titles and case names are rewritten (the outcome of every clause stays the same)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT
from tests.helpers.certify import IN_PROCESS, ONE_OPERATION

SUITE = ROOT / "conformance_tests"
CLAUSE_ID = re.compile(r"push_cache\.[a-z_]+\.[a-z0-9_.]+")


def _code_files() -> list[Path]:
    return [p for p in SUITE.rglob("*.py") if "report" not in p.parts]


def _docstrings(tree: ast.AST) -> set[int]:
    """Docstrings and command-line help texts: prose that may quote clause IDs as examples."""
    out = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.keyword) and n.arg == "help"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_suite_code_names_no_clause_id():
    """A clause ID written into suite code would be dispatch by name (the spec's data must say it instead)."""
    found = []
    for path in _code_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if CLAUSE_ID.search(node.value):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not found, "suite code names clause IDs:\n" + "\n".join(found)


def test_suite_code_reads_no_title_case_name_or_id_text():
    """Titles are for people; case names and IDs label tests.  Reading them as data (comparing, searching,
    slicing) is forbidden everywhere in the suite except where a label is composed."""
    found = []
    for path in _code_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "title":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: reads .title")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "endswith", "startswith", "split", "partition", "rpartition", "search", "match", "fullmatch"):
                target = node.func.value
                if isinstance(target, ast.Attribute) and target.attr in ("id", "name", "title", "refines"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: inspects the text of .{target.attr}")
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    if isinstance(side, ast.Attribute) and side.attr in ("title", "name") and isinstance(
                            side.value, ast.Name) and side.value.id in ("clause", "case", "c", "k"):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: compares {side.value.id}.{side.attr}")
    # where titles are shown to people: the report's clause rows (running/finish.py), the spec CLI and loader, and the
    # family inventory, whose table shows a rule in its clause's words (spec/inventory.py)
    allowed = {"conformance_tests/running/finish.py", "conformance_tests/cli/clauses.py", "conformance_tests/spec/load.py",
               "conformance_tests/spec/inventory.py"}
    found = [f for f in found if f.split(":")[0] not in allowed]
    assert not found, "suite code depends on names:\n" + "\n".join(found)


# --------------------------------------------------------------------------------------------- dynamic


def _renamed_spec(tmp_path: Path) -> Path:
    """The packaged spec with every title replaced and every case renamed (same order, same content)."""
    raw = yaml.safe_load((ROOT / "spec" / "push_cache.yaml").read_text(encoding="utf-8"))
    for n, clause in enumerate(raw["clauses"]):
        clause["title"] = f"renamed clause number {n}"
        for k, case in enumerate(clause.get("cases") or ()):
            case["name"] = f"case_{n}_{k}"
    path = tmp_path / "renamed.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def _clause_outcomes(report: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in report["tests"]:
        for c in t["clauses"]:
            out.setdefault(c, []).append(t["outcome"])
    return {c: sorted(v) for c, v in out.items()}


def _certify(backend: str, spec: Path | None, report_dir: Path, clauses: str) -> dict:
    argv = [sys.executable, "-m", "conformance_tests", "certify", *IN_PROCESS, "--backend", backend, "--report-dir",
            str(report_dir), "-q", "-p", "no:warnings", "--clauses", clauses]
    argv += ["--spec", str(spec)] if spec is not None else list(ONE_OPERATION)
    subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    found = sorted(report_dir.rglob("report.json"))
    assert found, f"no report written for {backend} in {report_dir}"
    return json.loads(found[0].read_text(encoding="utf-8"))


@pytest.mark.parametrize(("backend", "clauses"), [
    ("reference", "push_cache.param.*,push_cache.remote.*"),
    ("mutants.catalog:no_dst_batch_check", "push_cache.remote.*,push_cache.data.dst_batch_slice"),
])
def test_renaming_titles_and_cases_changes_no_outcome(tmp_path, backend, clauses):
    renamed = _renamed_spec(tmp_path)
    before = _clause_outcomes(_certify(backend, None, tmp_path / "packaged", clauses))
    after = _clause_outcomes(_certify(backend, renamed, tmp_path / "renamed", clauses))
    assert before, "the selection ran no test"
    if backend != "reference":  # the mutant is caught, so the comparison covers failing outcomes too
        assert any("failed" in v for v in before.values()), before
    assert before == after

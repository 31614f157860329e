"""Traceability: every clause has a test, every test names existing clauses, every must clause has a mutant."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conformance_tests.plugin import traceability_problem
from conformance_tests.spec import load_spec
from mutants.catalog import MUTANTS

ROOT = Path(__file__).resolve().parents[2]

# must clauses that no mutant breaks, with the reason; empty today: every must clause has one
UNMUTATED: dict[str, str] = {}


def _collect(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "--collect-only", "-q",
                           "--no-reports", *args], capture_output=True, text=True, cwd=ROOT)
    return proc.stdout + proc.stderr


def test_every_clause_of_every_release_has_a_test():
    spec = load_spec()
    for release in ("8.3.RC1.alpha003", "9.0.0"):
        out = _collect("--spec-version", release)
        assert "uncovered clauses: none" in out, out[-2000:]
    assert len(spec.clauses) > 90


def test_a_clause_without_a_test_is_reported(tmp_path):
    data = yaml.safe_load((ROOT / "spec" / "push_cache.yaml").read_text(encoding="utf-8"))
    orphan = dict(data["clauses"][-1], family="types", id="push_cache.types.orphan_for_the_self_test",
                  title="a clause no generator knows")
    orphan.pop("deviation", None)
    orphan.pop("cases", None)
    orphan["expect"] = {"outcome": "success", "data": "nothing_knows_this"}
    data["clauses"].append(orphan)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    out = _collect("--spec", str(path))
    assert "uncovered clauses: push_cache.types.orphan_for_the_self_test" in out, out[-2000:]


def test_every_collected_test_names_existing_clauses():
    out = _collect()
    spec_ids = {c.id for c in load_spec().clauses}
    items = [line for line in out.splitlines() if "::" in line]
    assert len(items) >= 300
    named = {cid for line in items for cid in spec_ids if cid in line}
    assert named, "test ids carry their clause ids"


def test_traceability_problem_names_the_defect():
    known = {"push_cache.a.b", "push_cache.c.d"}
    assert traceability_problem(["push_cache.a.b"], known) is None
    assert "names no spec clause" in traceability_problem([], known)
    assert "push_cache.x.y" in traceability_problem(["push_cache.a.b", "push_cache.x.y"], known)


def test_a_test_without_a_clause_marker_fails_the_run(tmp_path):
    module = tmp_path / "test_unmarked.py"
    module.write_text("import pytest\n\n"
                      "def test_forgot_its_clause():\n    assert True\n\n"
                      "@pytest.mark.clause('push_cache.no.such_clause')\n"
                      "def test_names_a_missing_clause():\n    assert True\n\n"
                      "@pytest.mark.clause('push_cache.data.postcondition')\n"
                      "def test_well_marked():\n    assert True\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "conformance_tests.plugin", "--no-reports",
                           "-p", "no:cacheprovider", "-q", str(module)], capture_output=True, text=True, cwd=ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "test_forgot_its_clause names no spec clause" in out, out
    assert "names clause(s) the spec does not have: push_cache.no.such_clause" in out, out
    assert "1 passed" in out and "2 error" in out, out


@pytest.mark.parametrize("clause", [c for c in load_spec().clauses if c.level == "must"], ids=lambda c: c.id)
def test_every_must_clause_has_a_mutant(clause):
    targeted = any(fnmatch.fnmatchcase(clause.id, t) for m in MUTANTS for t in m.targets)
    assert targeted or clause.id in UNMUTATED, f"no mutant targets must clause {clause.id}"


def test_mutant_names_are_unique_and_importable():
    import mutants.catalog as catalog

    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names)) and len(names) >= 20
    for name in names:
        backend = getattr(catalog, name)
        assert backend.name == f"mutant-{name}" and callable(backend.open_cluster)

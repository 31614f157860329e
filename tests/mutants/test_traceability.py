"""Traceability: every clause has a test, every test names existing clauses, every must clause has a mutant."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from conformance_tests.running.phases import traceability_problem
from conformance_tests.spec import load_spec, operation_spec_path, specified_operations
from mutants.catalog import MUTANTS, Mutant
from mutants.run import catalog_problems
from tests.helpers import ROOT
from tests.helpers.certify import one_operation

# must clauses that no must mutant targets, with the reason (a family glob used to hide these); empty: every must
# clause of every operation has a mutant, and a new must clause needs one (or an entry here saying why not yet)
UNMUTATED: dict[str, str] = {}


def _family_clauses() -> list:
    return [c for api in specified_operations() for c in load_spec(operation_spec_path(api)).clauses]


def _collect(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "--collect-only", "-q",
                           "--no-reports", *one_operation(args)], capture_output=True, text=True, cwd=ROOT)
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
    orphan.pop("history", None)
    orphan.pop("cases", None)
    orphan.pop("procedure", None)
    orphan.pop("generate", None)
    orphan["expect"] = {"outcome": "success", "post": "conforms"}  # a check no procedure or generator makes
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


def _levels() -> dict[str, str]:
    return {c.id: c.level for c in _family_clauses()}


@pytest.mark.parametrize("clause", [c for c in _family_clauses() if c.level == "must"], ids=lambda c: c.id)
def test_every_must_clause_has_a_mutant(clause):
    """Counted by exact ID over must mutants only: a should mutant or a glob proves nothing about a must clause."""
    levels = _levels()
    by = [m.name for m in MUTANTS if m.breaks == "must" and clause.id in m.targets]
    bad = {m.name: [t for t in m.targets if levels.get(t) != "must"] for m in MUTANTS if m.breaks == "must"}
    assert not {k: v for k, v in bad.items() if v}, f"must mutants with targets that are not must clauses: {bad}"
    if clause.id in UNMUTATED:
        assert not by, f"{clause.id} is listed in UNMUTATED ({UNMUTATED[clause.id]!r}) but {by} target it"
    else:
        assert by, f"no must mutant targets must clause {clause.id}"


def test_unmutated_lists_only_must_clauses():
    levels = _levels()
    wrong = {cid: levels.get(cid) for cid in UNMUTATED if levels.get(cid) != "must"}
    assert not wrong, f"UNMUTATED entries that are not must clauses of the spec (id: level): {wrong}"


def test_mutant_targets_are_exact_known_clause_ids():
    globbed = {m.name: [t for t in (*m.targets, *m.focus) if set(t) & set("*?[")] for m in MUTANTS}
    assert not {k: v for k, v in globbed.items() if v}, f"glob targets: {globbed}"
    problems = catalog_problems(MUTANTS, _levels())
    assert not problems, "\n".join(problems)


def test_catalog_problems_names_each_defect():
    levels = {"push_cache.a.b": "must", "push_cache.a.b.status": "should"}
    ok = Mutant("ok", "d", ("push_cache.a.b",))
    assert catalog_problems([ok], levels) == []
    assert catalog_problems([Mutant("s", "d", ("push_cache.a.b.status",), breaks="should")], levels) == []
    (glob,) = catalog_problems([Mutant("g", "d", ("push_cache.a.*",))], levels)
    assert "'push_cache.a.*' is not a clause ID" in glob, glob
    (unknown,) = catalog_problems([Mutant("u", "d", ("push_cache.no.such",))], levels)
    assert "'push_cache.no.such' is not a clause ID" in unknown, unknown
    (level,) = catalog_problems([Mutant("l", "d", ("push_cache.a.b.status",))], levels)
    assert "is a should clause, the mutant breaks must" in level, level
    assert any("breaks='may'" in p for p in catalog_problems([Mutant("m", "d", ("push_cache.a.b",), breaks="may")],
                                                              levels))


def test_mutant_names_are_unique_and_importable():
    import mutants.catalog as catalog

    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names)) and len(names) >= 20
    for name in names:
        backend = getattr(catalog, name)
        assert backend.name == f"mutant-{name}" and callable(backend.open_cluster)

"""certify --until-failed IDS (what the mutants' runs pass, their targets): the clause tests run before the
histories', and the run ends once every named clause has failed; it is partial and says why. A clause ID the spec
lacks is one line, exit 2."""

from __future__ import annotations

import json

from conformance_tests.cli.exitcodes import NOT_CERTIFIED, PARTIAL, USAGE_ERROR
from tests.helpers.certify import certify

HISTORY = "push_cache.history.valid_pushes"


def _run(tmp_path, *args):
    proc = certify("--hypothesis-profile", "quick", "--report-dir", str(tmp_path), "-q", *args)
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    return proc, report


def test_the_histories_run_after_every_clause_test(tmp_path):
    # test_remote.py sorts after test_history.py: without --until-failed its tests come last
    proc, report = _run(tmp_path, "--clauses", f"{HISTORY},push_cache.remote.not_linked",
                        "--until-failed", "push_cache.remote.not_linked")
    assert proc.returncode == PARTIAL, proc.stdout[-2000:]
    ran = [t["id"] for t in report["tests"] if t["outcome"] != "not_run"]
    kinds = ["history" if "test_history.py" in t else "clause" for t in ran]
    assert kinds == sorted(kinds, key=lambda k: k == "history") and "history" in kinds and "clause" in kinds, ran
    assert not report["completeness"]["interrupted"], report["completeness"]  # nothing failed: ran to its end


def test_the_run_ends_once_every_named_clause_has_failed(tmp_path):
    """A mutant whose target is a data clause: once it failed, the histories (after it) do not run."""
    proc, report = _run(tmp_path, "--backend", "mutants.catalog:drops_last_layer",
                        "--clauses", f"push_cache.data.postcondition,{HISTORY}",
                        "--until-failed", "push_cache.data.postcondition")
    assert proc.returncode == NOT_CERTIFIED, proc.stdout[-2000:]
    outcomes = {t["id"]: t["outcome"] for t in report["tests"]}
    assert any(o == "failed" for i, o in outcomes.items() if "data.postcondition" in i), outcomes
    assert all(o == "not_run" for i, o in outcomes.items() if "test_history.py" in i), outcomes
    assert "--until-failed: push_cache.data.postcondition failed" in report["completeness"]["interrupted"]


def test_a_clause_the_spec_lacks_is_one_line(tmp_path):
    proc = certify("--until-failed", "push_cache.no_such_clause", "--report-dir", str(tmp_path), "-q")
    assert proc.returncode == USAGE_ERROR
    assert "--until-failed: no clause push_cache.no_such_clause in push_cache's spec" in proc.stderr + proc.stdout

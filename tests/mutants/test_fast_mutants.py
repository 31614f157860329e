"""A fast subset of the mutants, each certified on its focus clauses only (`tox -e mutants` runs them all)."""

from __future__ import annotations

import json
import subprocess
import sys

from conformance_tests.cli.exitcodes import PARTIAL
from tests.helpers import ROOT

FAST = ["ignores_src_batch_index", "one_byte_past", "modifies_source", "accepts_step_two",
        "swapped_check_order", "never_times_out", "writes_into_deallocated", "links_on_demand",
        # issue 31: a link left in its error state after a timeout, judged by a clause (no timeout envelope)
        "poisoned_after_timeout"]


def test_fast_mutants_are_killed_by_their_own_clauses(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mutants.run", "--focus", "--only", ",".join(FAST),
                           "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    matrix = json.loads((tmp_path / "kill-matrix.json").read_text())
    assert matrix["total"] == len(FAST) and matrix["killed"] == len(FAST)
    for row in matrix["mutants"]:
        assert row["status"] == "killed" and row["caught_by_target"], row


def test_the_reference_itself_survives_the_focus_run(tmp_path):
    """The runner's kill criterion is not vacuous: the unbroken reference is not 'killed'."""
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "--backend", "reference",
                           "--report-dir", str(tmp_path), "-q", "--clauses", "push_cache.data.*"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == PARTIAL, proc.stdout[-2000:]  # a --clauses run certifies nothing, and fails nothing
    report = json.loads((tmp_path / "report.json").read_text())
    assert not [c["id"] for c in report["clauses"] if c["outcome"] in ("failed", "incompatible")]


def test_unknown_mutant_name_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "mutants.run", "--only", "no_such_mutant"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "unknown mutant" in proc.stderr

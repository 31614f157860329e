"""A fast subset of the mutants, each certified on its focus clauses only (`tox -e mutants` runs them all)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conformance_tests.cli.exitcodes import PARTIAL
from mutants.catalog import MUTANTS
from tests.helpers import ROOT
from tests.helpers.certify import ONE_OPERATION
from tests.helpers.ssh import CI_ENV

FAST = ["ignores_src_batch_index", "one_byte_past", "modifies_source", "accepts_step_two",
        "swapped_check_order", "never_times_out", "writes_into_deallocated", "links_on_demand",
        # issue 31: a link left in its error state after a timeout, judged by a clause (no timeout envelope)
        "poisoned_after_timeout"]


#: where tox -e mutants (`python -m mutants.run --focus`) leaves each mutant's report and the kill matrix; CI runs
#: it before tox (.ci/run)
LIVE = ROOT / "reports" / "mutants"


def focus_runs(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The folder of the FAST mutants' focus runs and its kill matrix. In CI, what tox -e mutants made a few
    minutes before with the same --focus command over every mutant (a second run of FAST would only repeat those
    rows); elsewhere, where reports/mutants/ may be older than the checkout or absent, a run of its own."""
    if os.environ.get(CI_ENV):
        matrix = LIVE / "kill-matrix.json"
        assert matrix.is_file(), f"${CI_ENV} is set and tox -e mutants left no {matrix.relative_to(ROOT)}"
        return LIVE, json.loads(matrix.read_text(encoding="utf-8"))
    proc = subprocess.run([sys.executable, "-m", "mutants.run", "--focus", "--only", ",".join(FAST),
                           "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    matrix = json.loads((tmp_path / "kill-matrix.json").read_text())
    assert matrix["total"] == len(FAST) and matrix["killed"] == len(FAST)
    return tmp_path, matrix


def test_fast_mutants_are_killed_by_their_own_clauses(tmp_path):
    out, matrix = focus_runs(tmp_path)
    rows = {row["name"]: row for row in matrix["mutants"]}
    assert set(FAST) <= set(rows), f"the matrix has no row for {sorted(set(FAST) - set(rows))}"
    focus = {m.name: ",".join(m.focus) for m in MUTANTS}
    for name in FAST:
        assert rows[name]["status"] == "killed" and rows[name]["caught_by_target"], rows[name]
        # certified on its focus clauses only: the run's own record of its arguments says which
        args = json.loads((out / name / "report.json").read_text(encoding="utf-8"))["run"]["certify_args"]
        assert "--clauses" in args and args[args.index("--clauses") + 1] == focus[name], (name, args)


def test_the_reference_itself_survives_the_focus_run(tmp_path):
    """The runner's kill criterion is not vacuous: the unbroken reference is not 'killed'."""
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify",
                           *ONE_OPERATION, "--backend", "reference",
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

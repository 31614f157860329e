"""A broken backend's report: NOT CERTIFIED, its repro snippets reproduce the failure by themselves, and
`report diff` against the reference's report names exactly the clauses that differ."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.certify import IN_PROCESS, ONE_OPERATION

# one pytest-xdist worker runs this module: its module fixture (two runs) then runs once, not once per worker
pytestmark = pytest.mark.xdist_group("test_repro_and_diff")

CLAUSES = "push_cache.data.src_batch_slice,push_cache.restriction.layer_range.step*,push_cache.restriction.size.*"


def _certify(backend: str, out: Path) -> dict:
    subprocess.run([sys.executable, "-m", "conformance_tests", "certify",
                    *ONE_OPERATION, *IN_PROCESS, "--backend", backend, "-q",
                    "--report-dir", str(out), "--clauses", CLAUSES], capture_output=True, text=True, cwd=ROOT)
    return json.loads((out / "report.json").read_text())


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    base = tmp_path_factory.mktemp("reports")
    good = _certify("reference", base / "good")
    bad = _certify("mutants.catalog:ignores_src_batch_index", base / "bad")
    return base, good, bad


def test_broken_backend_is_not_certified_and_names_the_clause(reports):
    _, good, bad = reports
    assert not [c for c in good["clauses"] if c["outcome"] == "failed"]
    failing = sorted(c["id"] for c in bad["clauses"] if c["outcome"] == "failed")
    assert failing == ["push_cache.data.src_batch_slice"]
    assert bad["verdict"]["certified"] is False


def test_repro_snippet_reproduces_the_failure_and_passes_on_the_reference(reports):
    _, _, bad = reports
    rows = [t for t in bad["tests"] if t["outcome"] == "failed"]
    assert rows and all(t["repro"] for t in rows)
    for row in rows:
        run = subprocess.run([sys.executable, "-c", row["repro"]], capture_output=True, text=True, cwd=ROOT)
        assert run.returncode == 1 and "push_cache.data.src_batch_slice: dst tensor" in run.stderr, run.stderr
        fixed = row["repro"].replace("'mutants.catalog'), 'ignores_src_batch_index'",
                                     "'reference_impl.backend'), 'backend'")
        assert fixed != row["repro"]
        run = subprocess.run([sys.executable, "-c", fixed], capture_output=True, text=True, cwd=ROOT)
        assert run.returncode == 0, run.stderr


def test_diff_names_exactly_the_differing_clauses(reports):
    base, _, _ = reports
    run = subprocess.run([sys.executable, "-m", "conformance_tests", "report", "diff", str(base / "good" / "report.json"),
                          str(base / "bad" / "report.json"), "--json"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 1, run.stdout + run.stderr   # a regression
    diff = json.loads(run.stdout)
    text = json.dumps(diff)
    assert "push_cache.data.src_batch_slice" in text
    assert "push_cache.restriction.layer_range.step" not in text and "push_cache.restriction.size" not in text

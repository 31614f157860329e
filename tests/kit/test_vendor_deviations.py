"""The vendor's departures from the documentation, as executable facts: certifying the vendor-mode reference
fails exactly the clauses whose ``deviation:`` records a departure — nothing more, nothing less — and the
report shows the recorded deviation beside each such failure.  The plain reference certifies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance_tests.spec import load_spec
from tests.helpers import ROOT
from tests.helpers.certify import ONE_OPERATION

# one pytest-xdist worker runs this module: its module fixture (a full run) then runs once, not once per worker
pytestmark = pytest.mark.xdist_group("test_vendor_deviations")


def _certify(backend: str, out: Path, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify",
                           *ONE_OPERATION, "--backend", backend,
                           "--report-dir", str(out), "-q", "-p", "no:warnings", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    path = out / "report.json"
    assert path.is_file(), f"no report for {backend} (exit {proc.returncode}): {proc.stdout[-1500:]}{proc.stderr[-800:]}"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def vendor_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("vendor")
    _certify("reference-vendor", out, "--shrink-time", "0")  # which clauses fail, not how short their histories get
    return out


@pytest.fixture(scope="module")
def vendor(vendor_dir) -> dict:
    return json.loads((vendor_dir / "report.json").read_text(encoding="utf-8"))


def test_vendor_mode_fails_exactly_the_recorded_deviations(vendor):
    spec = load_spec().for_release(vendor["spec"]["version"])
    recorded = {c.id for c in spec.clauses if c.deviation}
    judged = {c["id"] for c in vendor["clauses"] if c["outcome"] in ("failed", "incompatible")}
    errors = [t["id"] for t in vendor["tests"] if t["outcome"] == "error"]
    assert not errors, f"setup errors are no verdict: {errors}"
    assert judged == recorded, (f"failing but no deviation recorded: {sorted(judged - recorded)}; "
                                f"deviation recorded but not failing: {sorted(recorded - judged)}")
    assert vendor["verdict"]["certified"] is False


def test_the_report_shows_the_recorded_deviation_beside_each_failure(vendor, vendor_dir):
    deviations = {c.id: c.deviation for c in load_spec().clauses if c.deviation}
    rows = {c["id"]: c for c in vendor["clauses"]}
    summary = (vendor_dir / "summary.md").read_text(encoding="utf-8")
    page = (vendor_dir / "index.html").read_text(encoding="utf-8")
    for clause_id, text in deviations.items():
        assert rows[clause_id].get("deviation") == text, clause_id
        assert text in summary, f"summary.md does not show the deviation of {clause_id}"
        assert clause_id in page and "known departure" in page


def test_the_plain_reference_passes_every_clause_the_vendor_departs_from(tmp_path):
    # the whole plain reference is certified by the README's main job (`tox -e certify`, the first step of CI);
    # here, the clauses with a recorded departure: the documentation's behaviour is what the reference does
    recorded = sorted(c.id for c in load_spec().clauses if c.deviation)
    report = _certify("reference", tmp_path, "--clauses", ",".join(recorded))
    outcomes = {c["id"]: c["outcome"] for c in report["clauses"] if c["id"] in recorded}
    assert outcomes == dict.fromkeys(recorded, "passed"), outcomes
    assert report["verdict"]["kind"] == "partial" and not report["verdict"]["blocking"]

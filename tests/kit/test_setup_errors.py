"""Setup failures are errors, never verdicts: when linking (or allocating, filling, reading) fails before or after
the call under test, the test is an ``error`` row naming the failing step — not failed, not incompatible — and a
must clause left unjudged keeps the run from certifying."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers import ROOT
from tests.helpers.certify import FAKES, IN_PROCESS, ONE_OPERATION


def test_a_link_that_refuses_gives_error_rows_naming_the_step(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(FAKES), str(ROOT)]))
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify",
                           *ONE_OPERATION, *IN_PROCESS, "--backend", "link_refuses_backend",
                           "--report-dir", str(tmp_path), "-q", "-p", "no:warnings", "--clauses",
                           "push_cache.remote.*,push_cache.param.src_batch_index.*,push_cache.data.src_batch_slice"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    reports = sorted(tmp_path.rglob("report.json"))
    assert reports, proc.stdout[-2000:] + proc.stderr[-1000:]
    report = json.loads(reports[0].read_text(encoding="utf-8"))
    outcomes = {t["id"]: t["outcome"] for t in report["tests"]}
    judged = [t for t, o in outcomes.items() if o in ("failed", "incompatible")]
    assert not judged, f"a scenario that could not be built was judged: {judged}"
    errors = [t for t in report["tests"] if t["outcome"] == "error"]
    assert len(errors) >= 5, outcomes
    assert all("cluster.link failed" in (t["message"] or "") for t in errors), [t["message"] for t in errors][:3]
    assert report["summary"]["error"] == len(errors)
    assert report["verdict"]["certified"] is False
    assert proc.returncode != 0

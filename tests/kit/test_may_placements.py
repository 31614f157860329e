"""A placement the spec only permits (``may``) must not be required: a backend refusing it is still CERTIFIED."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers import ROOT
from tests.helpers.certify import IN_PROCESS, ONE_OPERATION


def test_a_backend_refusing_host_to_host_is_certified(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("PUSH_CACHE_BACKEND", None)
    proc = subprocess.run(
        [sys.executable, "-m", "conformance_tests", "certify", *ONE_OPERATION, *IN_PROCESS, "--backend",
         "tests.kit.fakes.refuses_h2h_backend:backend", "--report-dir", str(tmp_path), "-q", "-p", "no:warnings"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    report_path = tmp_path / "report.json"
    assert report_path.exists(), f"no report (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}"
    report = json.loads(report_path.read_text())
    failing = {c["id"]: (c["level"], c["outcome"]) for c in report["clauses"] if c["outcome"] in ("failed", "error")}
    assert report["verdict"]["label"] == "CERTIFIED", (
        f"verdict {report['verdict']['label']!r}, blocking {report['verdict'].get('blocking')}, failing {failing}")
    h2h = next(c for c in report["clauses"] if c["id"] == "push_cache.data.host_to_host")
    assert h2h["outcome"] == "passed", f"push_cache.data.host_to_host: {h2h}"

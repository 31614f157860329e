"""``certify --operation NAME``: the family's operations certified from their own specs by the same
suite. The reference is CERTIFIED and its report lands beside push_cache's, not over it; vendor mode fails exactly
the clauses whose ``deviation:`` records a departure; an operation without a spec, or one given with ``--spec``,
is one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance_tests.cli.exitcodes import USAGE_ERROR
from conformance_tests.spec import load_spec, operation_spec_path, specified_operations
from tests.helpers import ROOT


def _certify(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "-q", "-p", "no:warnings", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k != "PUSH_CACHE_BACKEND"})


@pytest.fixture(scope="module")
def blocks_spec():
    return load_spec(operation_spec_path("push_blocks"))


def test_the_reference_certifies_push_blocks_beside_push_cache(tmp_path, blocks_spec):
    proc = _certify(tmp_path, "--operation", "push_blocks")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-1000:]
    assert "verdict: CERTIFIED" in proc.stdout
    folders = [p.name for p in (tmp_path / "reports").iterdir() if not p.name.startswith(".")]
    assert folders == ["reference@push_blocks"], folders  # not reports/reference/, push_cache's
    report = json.loads((tmp_path / "reports" / "reference@push_blocks" / "report.json").read_text("utf-8"))
    assert report["verdict"]["certified"] and not report["verdict"]["partial"], report["verdict"]
    rows = {c["id"]: c["outcome"] for c in report["clauses"]}
    assert set(rows) == {c.id for c in blocks_spec.clauses}
    assert all(c["outcome"] == "passed" for c in report["clauses"] if c["level"] == "must"), rows
    assert report["spec"]["sha256"] == blocks_spec.sha256 and report["spec"]["path"].endswith("push_blocks.yaml")
    assert report["spec"]["operation"] == "push_blocks"
    summary = (tmp_path / "reports" / "reference@push_blocks" / "summary.md").read_text("utf-8")
    assert summary.startswith("# push_blocks conformance: ") and "push_blocks conformance" in proc.stdout


#: the operations certified from a spec file of their own (push_cache's vendor mode: test_vendor_deviations.py)
SIBLINGS = [op for op in specified_operations() if op != "push_cache"]


@pytest.mark.parametrize("operation", SIBLINGS)
def test_vendor_mode_fails_exactly_each_siblings_recorded_deviations(tmp_path, operation):
    spec = load_spec(operation_spec_path(operation))
    # which clauses fail, not how short their histories get
    proc = _certify(tmp_path, "--operation", operation, "--backend", "reference-vendor", "--report-dir", "out",
                    "--shrink-time", "0")
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    judged = {c["id"] for c in report["clauses"] if c["outcome"] in ("failed", "incompatible")}
    recorded = {c.id for c in spec.clauses if c.deviation}
    assert recorded and judged == recorded, (f"{operation}: failing but no deviation recorded: "
                                             f"{sorted(judged - recorded)}; deviation recorded but not failing: "
                                             f"{sorted(recorded - judged)}")
    assert proc.returncode == 1 and not report["verdict"]["certified"]


@pytest.mark.parametrize(("args", "said"), [
    (("--operation", "pull_kv"), "--operation 'pull_kv': no packaged spec; the operations with one: "
                                 + ", ".join(specified_operations())),
    (("--operation", "push_blocks", "--spec", "spec/push_cache.yaml"),
     "--operation push_blocks certifies against its packaged spec; give it or --spec spec/push_cache.yaml"),
])
def test_a_bad_operation_is_one_line_and_exit_2(tmp_path, args, said):
    proc = _certify(ROOT, "--no-reports", *args)
    assert proc.returncode == USAGE_ERROR and said in proc.stdout + proc.stderr, proc.stdout + proc.stderr

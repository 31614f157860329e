"""The reference in vendor mode behind the node host fails the same deviation clauses as in process.

Both runs certify the same clauses (every recorded deviation, plus the data clauses as a control) with the
quick profile; each must fail exactly the clauses whose ``deviation:`` the spec records, with no error rows,
and the two sets must be equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance_tests.spec import load_spec
from tests.helpers import ROOT
from tests.helpers.certify import ONE_OPERATION

pytestmark = pytest.mark.nixl

CLAUSES = ("push_cache.safety.*,push_cache.restriction.*,push_cache.param.types_with_option_off,"
           "push_cache.param.src_cache.not_local,push_cache.timeout.*,push_cache.data.*")


def _certify(backend: str, out: Path) -> dict[str, Any]:
    env = dict(os.environ, UCX_NET_DEVICES="lo", NIXL_LOG_LEVEL="ERROR")
    env.pop("PUSH_CACHE_BACKEND", None)
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify",
                           *ONE_OPERATION, "--backend", backend,
                           "--clauses", CLAUSES, "--hypothesis-profile", "quick", "--report-dir", str(out),
                           "-q", "-p", "no:warnings"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    path = out / "report.json"
    assert path.is_file(), f"no report for {backend} (exit {proc.returncode}): {proc.stdout[-1500:]}{proc.stderr[-800:]}"
    return json.loads(path.read_text(encoding="utf-8"))


def _judged(report: dict[str, Any]) -> set[str]:
    errors = [t["id"] for t in report["tests"] if t["outcome"] == "error"]
    assert not errors, f"setup errors are no verdict: {errors}"
    return {c["id"] for c in report["clauses"] if c["outcome"] in ("failed", "incompatible")}


def test_vendor_mode_through_the_node_host_fails_the_recorded_deviations(tmp_path: Path) -> None:
    host = _certify("reference-vendor-nodehost", tmp_path / "host")
    inproc = _certify("reference-vendor", tmp_path / "inproc")
    spec = load_spec().for_release(host["spec"]["version"])
    selected = {c["id"] for c in host["clauses"] if c["outcome"] not in ("untested", "not_run")}
    recorded = {c.id for c in spec.clauses if c.deviation}
    assert recorded <= selected, f"the selection misses recorded deviations: {sorted(recorded - selected)}"
    judged_host, judged_inproc = _judged(host), _judged(inproc)
    assert judged_host == recorded, (f"failing but no deviation recorded: {sorted(judged_host - recorded)}; "
                                     f"deviation recorded but not failing: {sorted(recorded - judged_host)}")
    assert judged_host == judged_inproc

"""push_blocks behind the node host (one process per node, blocks moved over NIXL): the reference is CERTIFIED on
push_blocks' whole spec, and in vendor mode fails exactly the clauses whose ``deviation:`` records a departure,
as in process (tests/kit/test_operation_certify.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance_tests.spec import load_spec, operation_spec_path
from tests.helpers import ROOT

pytestmark = pytest.mark.nixl


def _certify(backend: str, out: Path, *more: str) -> tuple[int, dict[str, Any]]:
    env = dict(os.environ, UCX_NET_DEVICES="lo", NIXL_LOG_LEVEL="ERROR")
    env.pop("PUSH_CACHE_BACKEND", None)
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "--operation", "push_blocks",
                           "--backend", backend, "--report-dir", str(out), "-q", "-p", "no:warnings", *more], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=900)
    path = out / "report.json"
    assert path.is_file(), f"no report for {backend} (exit {proc.returncode}): {proc.stdout[-1500:]}{proc.stderr[-800:]}"
    return proc.returncode, json.loads(path.read_text(encoding="utf-8"))


def test_the_node_host_certifies_push_blocks(tmp_path):
    code, report = _certify("reference-nodehost", tmp_path / "host")
    assert code == 0 and report["verdict"]["certified"], report["verdict"]
    assert not [t["id"] for t in report["tests"] if t["outcome"] == "error"]


def test_vendor_mode_behind_the_node_host_fails_exactly_push_blocks_deviations(tmp_path):
    # which clauses fail, not how short their histories get
    code, report = _certify("reference-vendor-nodehost", tmp_path / "vendor", "--shrink-time", "0")
    recorded = {c.id for c in load_spec(operation_spec_path("push_blocks")).clauses if c.deviation}
    judged = {c["id"] for c in report["clauses"] if c["outcome"] in ("failed", "incompatible")}
    assert code == 1 and judged == recorded, (sorted(judged - recorded), sorted(recorded - judged))

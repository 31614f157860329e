"""--spec-version checks what that release states: an 8.2.RC1.alpha002 backend (five parameters) is certified
against that release, and the same backend is not certified against 9.0.0's signature."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance_tests.cli.exitcodes import USAGE_ERROR
from tests.helpers import ROOT
from tests.helpers.certify import IN_PROCESS, ONE_OPERATION

LEGACY = "tests.kit.fakes.legacy_backend:backend"


def _certify(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify",
                           *ONE_OPERATION, *IN_PROCESS, "-q", "--report-dir",
                           str(tmp_path), *args], capture_output=True, text=True, cwd=ROOT)
    path = tmp_path / "report.json"
    return proc, (json.loads(path.read_text()) if path.exists() else None)


def test_a_backend_is_certified_against_the_release_it_declares(tmp_path):
    proc, report = _certify(tmp_path, "--backend", LEGACY)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert report["spec"]["version"] == "8.2.RC1.alpha002" and report["verdict"]["certified"]
    ran = {c for t in report["tests"] for c in t["clauses"]}
    assert "push_cache.signature.parameters_v82a002" in ran
    assert "push_cache.signature.parameters" not in ran            # the 9.0 signature is not this release's
    assert not any(c.startswith("push_cache.param.size") for c in ran)  # size arrives in 8.2.RC1.alpha003
    skipped = [t for t in report["tests"] if t["outcome"] == "skipped"]
    assert skipped and all("not in release 8.2.RC1.alpha002" in (t["message"] or "") for t in skipped)


def test_a_release_the_backend_does_not_declare_is_refused(tmp_path):
    proc, _ = _certify(tmp_path, "--backend", LEGACY, "--spec-version", "9.0.0")
    assert proc.returncode == USAGE_ERROR
    assert "9.0.0" in proc.stdout + proc.stderr


@pytest.mark.heavy  # a full certification of the reference: tox -e heavy (CI) runs it
def test_the_reference_against_8_3_alpha003(tmp_path):
    proc, report = _certify(tmp_path, "--spec-version", "8.3.RC1.alpha003")
    assert proc.returncode == 0 and report["spec"]["version"] == "8.3.RC1.alpha003"

"""Self-tests of the certification engine, run as the user runs it (subprocess ``python -m conformance_tests``).

The fake backends live in ``tests/kit/fakes`` (put on PYTHONPATH); each run selects a few tests with -k so
the whole module stays fast.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conformance_tests.cli.exitcodes import ADAPTER_ERROR, NOT_CERTIFIED, PARTIAL, USAGE_ERROR
from tests.helpers import ROOT
from tests.helpers.certify import FAKES, certify


def output(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout + proc.stderr


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in output(proc).splitlines() if ln.startswith("ERROR:")]


# ---------------------------------------------------------------------------------------- bad usage


def test_unknown_backend_is_one_clear_line():
    proc = certify("--backend", "no_such_backend_anywhere", "--no-reports")
    assert proc.returncode == USAGE_ERROR, output(proc)
    lines = error_lines(proc)
    assert len(lines) == 1, output(proc)
    assert "backend 'no_such_backend_anywhere': not an entry point" in lines[0]
    assert "reference" in lines[0] and "path/to/adapter.py" in lines[0]  # the entry points, and the other forms
    assert "Traceback" not in output(proc)


def test_backend_import_failure_names_the_module_and_the_error():
    proc = certify("--backend", "import_error_backend:backend", "--no-reports")
    assert proc.returncode == USAGE_ERROR, output(proc)
    (line,) = error_lines(proc)
    assert "import_error_backend" in line and "vendor_runtime_that_is_not_installed" in line
    assert "Traceback" not in output(proc)


def test_object_without_protocol_members_is_refused():
    proc = certify("--backend", "not_a_backend", "--no-reports")
    assert proc.returncode == USAGE_ERROR, output(proc)
    (line,) = error_lines(proc)
    assert "does not satisfy the protocol" in line and "open_cluster" in line


def test_spec_version_the_backend_does_not_declare_is_refused():
    proc = certify("--spec-version", "8.2.RC1.alpha002", "--no-reports")
    assert proc.returncode == USAGE_ERROR, output(proc)
    (line,) = error_lines(proc)
    assert "8.2.RC1.alpha002" in line and "does not declare" in line


def test_bad_expectations_file_names_the_json_path(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nentries:\n  - {match: 'push_cache.*', outcome: fail, reason: x}\n")
    proc = certify("--expectations", str(bad), "--no-reports")
    assert proc.returncode == USAGE_ERROR, output(proc)
    (line,) = error_lines(proc)
    assert "$.entries[0].outcome" in line


def test_strict_expectations_refuses_an_expectations_file(tmp_path):
    ok = tmp_path / "ok.yaml"
    ok.write_text("version: 1\nentries: []\n")
    proc = certify("--strict-expectations", "--expectations", str(ok), "--no-reports")
    assert proc.returncode == USAGE_ERROR, output(proc)
    (line,) = error_lines(proc)
    assert "--strict-expectations" in line


# ---------------------------------------------------------------------------------------- broken backends


def test_smoke_check_turns_a_broken_adapter_into_adapter_error():
    proc = certify("--backend", "broken_adapter", "--no-reports")
    assert proc.returncode == ADAPTER_ERROR, output(proc)
    assert "adapter error: read_tensor does not return what write_tensor wrote" in output(proc)
    assert " passed" not in proc.stdout.splitlines()[-1]


def test_hanging_backend_fails_by_timeout_and_the_run_finishes():
    proc = certify("--backend", "hang_backend", "--timeout", "3", "-k", "src_batch_slice", "--no-reports",
                   timeout=90)
    out = output(proc)
    assert proc.returncode == NOT_CERTIFIED, out
    assert "2 failed, 1 passed" in out
    assert "(hang)" in out or "Timeout" in out


def test_backend_ignoring_src_batch_index_is_rejected_with_clause_call_and_bytes(tmp_path):
    proc = certify("--backend", "ignore_batch_backend", "-k", "src_batch_slice or size_default",
                   "--report-dir", str(tmp_path))
    out = output(proc)
    assert proc.returncode == NOT_CERTIFIED, out
    assert "push_cache.data.src_batch_slice" in out
    assert "local.cache_manager.push_cache(" in out and "src_batch_index=1" in out
    assert "bytes differ, first at offset" in out and "expected" in out and " got " in out
    report = json.loads((tmp_path / "report.json").read_text())
    failed = [t for t in report["tests"] if t["outcome"] == "failed"]
    assert failed and all(t["repro"] and "push_cache(" in t["repro"] for t in failed)
    assert report["verdict"]["certified"] is False
    # the reproduction is a program that fails by itself, naming the clause and the differing bytes
    script = tmp_path / "repro.py"
    script.write_text(failed[0]["repro"])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(FAKES), str(ROOT)]))
    run = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 1 and "bytes differ, first at offset" in run.stderr, run.stderr
    assert failed[0]["clauses"][0] in run.stderr


# ---------------------------------------------------------------------------------------- expectations


def test_expectations_xfail_unmatched_and_unexpected_pass(tmp_path):
    exp = tmp_path / "known.yaml"
    exp.write_text(
        "version: 1\n"
        "entries:\n"
        "  - {match: push_cache.data.src_batch_slice, outcome: xfail, reason: ignores the batch index,"
        " link: 'https://example.com/1'}\n"
        "  - {match: 'push_cache.nothing.*', outcome: skip, reason: stale entry}\n"
        "  - {match: 'push_cache.data.*', outcome: xfail, reason: expired, expires: 2001-01-01}\n"
    )
    proc = certify("--backend", "ignore_batch_backend", "--expectations", str(exp), "-k", "src_batch_slice",
                   "--report-dir", str(tmp_path / "r"))
    out = output(proc)
    assert proc.returncode == PARTIAL, out  # a -k run is partial
    assert "2 xfailed" in out and "1 xpassed" in out
    assert "expectations entries that matched nothing: push_cache.nothing.*" in out
    assert "expired expectations entry ignored" in out
    assert re.search(r"^unexpected passes: conformance_tests/suite/test_data\.py::\w+\[push_cache\.data\.src_batch_slice-batch_0\]$",
                     out, re.M), out
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["run"]["expectations"]["path"] == str(exp)
    assert report["expectations"]["unmatched"] == ["push_cache.nothing.*"]
    assert any("batch_0" in t for t in report["expectations"]["unexpected_passes"])
    assert report["verdict"]["label"] == "PARTIAL"
    assert [e["match"] for e in report["expectations"]["expired"]] == ["push_cache.data.*"]
    waived = report["expectations"]["waived"]
    assert waived and all(w["reason"] == "ignores the batch index" and w["expires"] is None for w in waived)


# ---------------------------------------------------------------------------------------- the suite itself


@pytest.fixture(scope="module")
def collected() -> list[str]:
    proc = certify("--collect-only", "-q")
    assert proc.returncode == 0, output(proc)
    return [ln for ln in proc.stdout.splitlines() if "::" in ln]


def test_every_clause_of_the_release_has_a_test_and_every_test_names_a_clause(collected):
    from conformance_tests.spec import load_spec

    spec = load_spec(release=load_spec().releases[-1])
    ids = {c.id for c in spec.clauses}
    named = {cid for cid in ids if any(f"[{cid}-" in t or f"[{cid}]" in t for t in collected)}
    # a clause no single call reaches is tested by the histories alone (it declares a situation, has no cases)
    by_histories = {c.id for c in spec.clauses if c.history is not None and c.procedure.name == "call" and not c.cases}
    assert by_histories and ids - named == by_histories, f"clauses without a test: {sorted(ids - named)}"
    assert all("[push_cache." in t for t in collected), [t for t in collected if "[push_cache." not in t][:5]
    assert len(collected) >= 300
    assert all(t.startswith("conformance_tests/suite/test_") for t in collected)


def test_undeclared_capabilities_are_not_supported_not_failed(tmp_path):
    proc = certify("--backend", "minimal_backend", "-k", "timeout or guard_bytes or placements or blocks",
                   "--report-dir", str(tmp_path))
    out = output(proc)
    assert proc.returncode == PARTIAL, out  # a -k run is partial
    report = json.loads((tmp_path / "report.json").read_text())
    outcomes = {t["id"]: t for t in report["tests"]}
    unsupported = [t for t in outcomes.values() if t["outcome"] == "not_supported"]
    assert unsupported and report["summary"]["failed"] == 0
    assert all(t["message"].startswith("not supported: ") for t in unsupported)
    assert any("faults.delay" in t["message"] for t in unsupported)
    assert any("placements.HOST" in t["message"] for t in unsupported)

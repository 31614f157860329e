"""`report verify`: a report re-run from what it records gives the same rows and verdict (VERIFIED); a report
edited by hand, made with another hypothesis, or against other inputs gets each difference listed and exit 1; a
report that cannot be re-run is one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance_tests.cli.exitcodes import NOT_CERTIFIED, PARTIAL, USAGE_ERROR
from conformance_tests.spec import load_spec
from tests.helpers import ROOT, child_pythonpath
from tests.helpers.certify import certify
from tests.helpers.ssh import CI_ENV

# one pytest-xdist worker runs this module: its module fixture's full certification runs once
pytestmark = pytest.mark.xdist_group("test_verify")

SMALL = "push_cache.signature.*"
#: what two runs must repeat in a row: everything but the time it took
VOLATILE = ("duration_s",)


def drawn_clause() -> str:
    """A clause whose tests draw their examples from streams, so the explore profile's seed decides what runs: the
    one generating invalid inputs by the fewest rules (the explore profile draws ten times certify's examples, and
    a refused push costs a fraction of a valid one's layout)."""
    drawn = [(len(c.generate.rules), bool(c.generate.pairs), c.id) for c in load_spec().clauses
             if c.generate is not None and c.generate.rules]
    return min(drawn)[2]


def verify(report: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance_tests", "report", "verify", str(report), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**_env(), "PYTHONPATH": child_pythonpath(())})


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PUSH_CACHE_BACKEND"}


def edited(src: Path, dst: Path, edit) -> Path:
    report = json.loads(src.read_text())
    edit(report)
    dst.write_text(json.dumps(report))
    return dst


#: the README's main job's report; CI makes it first (.ci/run: tox -e certify) in its clean clone
MAIN_JOB_REPORT = ROOT / "reports" / "reference" / "report.json"


@pytest.fixture(scope="module")
def full(tmp_path_factory) -> Path:
    """A certification of the reference with the certify profile, the README's main job. In CI, the report that
    job wrote a few minutes before (a second full run of the same command would only repeat it); elsewhere, where
    reports/reference/ may be older than the checkout, a run of its own."""
    if os.environ.get(CI_ENV):
        assert MAIN_JOB_REPORT.is_file(), f"${CI_ENV} is set and tox -e certify left no {MAIN_JOB_REPORT}"
        made = json.loads(MAIN_JOB_REPORT.read_text(encoding="utf-8"))
        assert made["completeness"]["full"] and made["verdict"]["certified"], made["verdict"]
        return MAIN_JOB_REPORT
    out = tmp_path_factory.mktemp("verify-full")
    proc = certify("--report-dir", str(out), "-q", timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out / "report.json"


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("verify-small")
    proc = certify("--clauses", SMALL, "--report-dir", str(out), "-q")
    assert proc.returncode == PARTIAL, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out / "report.json"


@pytest.mark.heavy  # a full re-run of a full certification (in CI, the main job's): tox -e heavy (CI) runs it
def test_the_reference_certification_is_verified_row_for_row(full, tmp_path):
    """Two runs of the certify profile: the same verdict, the same rows (messages, repro, hypothesis statistics
    included) and the same drawn layouts."""
    proc = verify(full, "--out", str(tmp_path / "again"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"VERIFIED: {full}: certify ") and "CERTIFIED" in proc.stdout, proc.stdout
    first, second = (json.loads(p.read_text()) for p in (full, tmp_path / "again" / "report.json"))
    strip = [[{k: v for k, v in row.items() if k not in VOLATILE} for row in r["tests"]] for r in (first, second)]
    assert strip[0] == strip[1]
    for key in ("push_calls", "distinct_layouts", "layouts_sha256"):
        assert first["run"][key] == second["run"][key], key
    assert first["verdict"] == second["verdict"]
    assert first["environment"]["hypothesis"] and first["environment"]["pytest"] and first["environment"]["numpy"]


def test_a_row_flipped_by_hand_is_named(small, tmp_path):
    flipped = edited(small, tmp_path / "flipped.json", lambda r: r["tests"][1].update(outcome="failed"))
    proc = verify(flipped)
    name = json.loads(small.read_text())["tests"][1]["id"]
    assert proc.returncode == NOT_CERTIFIED, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("NOT VERIFIED:") and "1 place(s)" in lines[0], lines
    assert lines[1:] == [f"  test {name} outcome: failed in the report, passed now"], lines


def test_another_hypothesis_version_is_named(small, tmp_path):
    other = edited(small, tmp_path / "other.json", lambda r: r["environment"].update(hypothesis="6.100.0"))
    proc = verify(other, "--json")
    assert proc.returncode == NOT_CERTIFIED, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["verified"] is False
    assert [d["where"] for d in result["differences"]] == ["environment hypothesis"], result["differences"]
    assert result["differences"][0]["recorded"] == "6.100.0"


def test_an_explore_run_is_repeated_from_its_recorded_seed(tmp_path):
    out = tmp_path / "explore"
    proc = certify("--hypothesis-profile", "explore", "--clauses", drawn_clause(), "--report-dir", str(out), "-q")
    assert proc.returncode == PARTIAL, proc.stdout[-2000:]
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["hypothesis_seed"] is not None
    assert any(a.startswith("--hypothesis-seed=") for a in report["run"]["certify_args"])
    proc = verify(out / "report.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_changed_expectations_file_is_named(tmp_path):
    exp = tmp_path / "known.yaml"
    exp.write_text("version: 1\nentries: []\n")
    out = tmp_path / "with-exp"
    proc = certify("--expectations", str(exp), "--clauses", SMALL, "--report-dir", str(out), "-q")
    assert proc.returncode == PARTIAL, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert verify(out / "report.json").returncode == 0
    exp.write_text("# edited since the run\nversion: 1\nentries: []\n")
    proc = verify(out / "report.json")
    assert proc.returncode == NOT_CERTIFIED, proc.stdout + proc.stderr
    assert f"expectations file {exp} sha256" in proc.stdout and "expectations.sha256" in proc.stdout, proc.stdout


@pytest.mark.parametrize("case", ["missing", "not_certify", "no_expectations_file"])
def test_a_report_that_cannot_be_rerun_is_one_line_and_exit_2(small, tmp_path, case):
    if case == "missing":
        path = tmp_path / "absent.json"
    elif case == "not_certify":
        path = edited(small, tmp_path / "old.json", lambda r: r["run"].update(certify_args=None))
    else:
        path = edited(small, tmp_path / "exp.json", lambda r: r["run"].update(
            certify_args=[*r["run"]["certify_args"], "--expectations", str(tmp_path / "gone.yaml")]))
    proc = verify(path)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert proc.returncode == USAGE_ERROR and len(lines) == 1 and lines[0].startswith("error: "), lines


def test_the_comparison_sees_other_draws_and_missing_rows(small):
    """What a re-run with other examples or another selection would show (no run needed to build them)."""
    from conformance_tests.report.verify import compare

    report = json.loads(small.read_text())
    other = json.loads(small.read_text())
    other["run"].update(layouts_sha256="0" * 64, push_calls=(report["run"]["push_calls"] or 0) + 1)
    gone = other["tests"].pop()
    where = [d.where for d in compare(report, other)]
    assert where == ["run.push_calls", "run.layouts_sha256", f"test {gone['id']}"], where
    assert [d.where for d in compare(other, report)][-1] == f"test {gone['id']}"

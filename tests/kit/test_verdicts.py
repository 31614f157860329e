"""What a verdict promises, tried as a hostile vendor would (issue 12), through ``python -m conformance_tests``.

Each test asserts the exit code and what the written reports say.  The fake backends live in
``tests/kit/fakes``.  Two runs certify the whole suite, side by side (a memory-unsafe backend with everything
waived; a backend with one must-level defect, with that test waived); then that test is deselected from its
clause's tests; the others select a few clauses with --clauses, stop early, or fail before running anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance_tests.cli import exitcodes
from conformance_tests.cli.exitcodes import (
    CERTIFIED_WITH_WAIVERS,
    NOT_CERTIFIED,
    PARTIAL,
    USAGE_ERROR,
)
from conformance_tests.report.folders import REPORT_FILES, safe_name
from tests.helpers import ROOT
from tests.helpers.certify import FAKES, IN_PROCESS, ONE_OPERATION, certify, one_operation

# one pytest-xdist worker runs this module: its module fixture (two full runs) then runs once, not once per worker
pytestmark = pytest.mark.xdist_group("test_verdicts")

SMALL = "push_cache.signature.*"  # a handful of fast tests, for runs that need only a few


def output(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout[-6000:] + proc.stderr[-3000:]


def load(folder: Path) -> dict:
    return json.loads((folder / "report.json").read_text(encoding="utf-8"))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in REPORT_FILES}


def junit_props(folder: Path) -> list[tuple[str, str]]:
    suite = ET.parse(folder / "junit.xml").getroot().find("testsuite")
    return [(p.get("name"), p.get("value")) for p in suite.find("properties")]


def expectations_file(path: Path, *entries: str) -> Path:
    path.write_text("version: 1\nentries:\n" + "".join(f"  - {e}\n" for e in entries), encoding="utf-8")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_formats_name_the_expectations(folder: Path, exp: Path, reason: str, expires: str) -> None:
    """report.json, junit.xml, summary.md, index.html and badge.json all name the expectations file."""
    digest = sha256(exp)
    report = load(folder)
    assert report["expectations"]["path"] == str(exp) and report["expectations"]["sha256"] == digest
    assert report["expectations"]["waived"], "the waived tests are listed"
    assert all(w["reason"] == reason and w["expires"] == expires for w in report["expectations"]["waived"])
    props = junit_props(folder)
    assert ("expectations.path", str(exp)) in props and ("expectations.sha256", digest) in props
    junit = (folder / "junit.xml").read_text(encoding="utf-8")
    assert f'name="waiver.reason" value="{reason}"' in junit and f'value="{expires}"' in junit
    md = (folder / "summary.md").read_text(encoding="utf-8")
    assert str(exp) in md and digest in md and reason in md and expires in md
    html = (folder / "index.html").read_text(encoding="utf-8")
    assert f'data-sha256="{digest}"' in html and str(exp) in html
    assert html.count('class="waiver-row"') == len(report["expectations"]["waived"])
    badge = json.loads((folder / "badge.json").read_text(encoding="utf-8"))
    assert digest[:12] in badge["message"]


# ---------------------------------------------------------------------------------------- the full runs

FAKE = "fake-accepts-list"  # accepts_list_backend: one must-level defect (src_batch_index=[0] accepted)
WAIVE_ALL = ("{match: '*', outcome: xfail, reason: waive everything, expires: 2999-12-31}",
             "{match: 'push_cache.data.*', outcome: skip, reason: stale, expires: 2001-01-01}")
WAIVE_ONE = ("{match: push_cache.param.src_batch_index.type, outcome: xfail, reason: lists are read as batch 0, "
             "expires: 2999-01-31}",)


def start(*args: str, cwd: Path = ROOT) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(FAKES), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("PUSH_CACHE_BACKEND", None)
    return subprocess.Popen([sys.executable, "-m", "conformance_tests", "certify", "-p", "no:warnings",
                             *IN_PROCESS, *one_operation(args)],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


class Runs:
    """The results of the module's full runs (two at a time: each takes tens of seconds)."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    r = Runs()
    base = tmp_path_factory.mktemp("verdict-runs")
    r.unsafe_exp = expectations_file(base / "waive-all.yaml", *WAIVE_ALL)
    r.unsafe_dir = base / "unsafe"
    r.waived_exp = expectations_file(base / "known.yaml", *WAIVE_ONE)
    r.project = base / "project"  # the default folder: <cwd>/reports/<backend>/
    r.project.mkdir()
    # 1. the hostile waiver on a memory-unsafe backend, and one must test waived on a one-defect backend
    # its histories fail: they are reported as they failed (shrinking them is not what this module checks)
    unsafe = start("--backend", "unsafe_backend", "--expectations", str(r.unsafe_exp), "--report-dir",
                   str(r.unsafe_dir), "--shrink-time", "0")
    waived = start("--backend", "accepts_list_backend", "--expectations", str(r.waived_exp), cwd=r.project)
    r.unsafe, r.waived = finish(unsafe), finish(waived)
    r.full_dir = r.project / "reports" / FAKE
    report = load(r.full_dir) if (r.full_dir / "report.json").exists() else {"tests": []}
    r.failing = [t["id"] for t in report["tests"] if t["outcome"] == "xfailed" and t["level"] == "must"]
    r.full_before = snapshot(r.full_dir) if r.failing else {}
    # 2. the failing test deselected from its clause's tests (default folder), and a -k run beside a copy of the
    #    full report in an explicit --report-dir. The deselected run keeps to that clause: a whole suite less one
    #    test would spend another full run's minutes on what the clause's few tests show as well
    r.k_dir = base / "explicit"
    r.deselect_clauses = sorted({c for t in report["tests"] if t["id"] in r.failing for c in t["clauses"]})
    if r.failing:
        shutil.copytree(r.full_dir, r.k_dir)
        args = ["--clauses", ",".join(r.deselect_clauses),
                *[a for test_id in r.failing for a in ("--deselect", test_id)]]
        deselect = start("--backend", "accepts_list_backend", *args, cwd=r.project)
        k_run = start("--backend", "accepts_list_backend", "-k", "src_batch_index and type", "--report-dir",
                      str(r.k_dir))
        r.deselect, r.k_run = finish(deselect), finish(k_run)
    return r


# ---------------------------------------------------------------------------------------- waivers


def test_waiving_everything_with_xfail_does_not_certify_a_memory_unsafe_backend(runs):
    proc, out, exp = runs.unsafe, runs.unsafe_dir, runs.unsafe_exp
    assert proc.returncode == NOT_CERTIFIED, output(proc)
    report = load(out)
    verdict = report["verdict"]
    assert verdict["label"] == "NOT CERTIFIED" and not verdict["certified"]
    assert "push_cache.safety.guard_bytes" in verdict["no_passing"]  # its tests all failed, all waived
    assert set(verdict["no_passing"]) <= set(verdict["blocking"]) and verdict["waived_must_tests"]
    assert report["completeness"]["full"] is True
    assert_formats_name_the_expectations(out, exp, "waive everything", "2999-12-31")
    # the expired entry is listed in every format, not only in the terminal
    assert [e["match"] for e in report["expectations"]["expired"]] == ["push_cache.data.*"]
    assert any(n == "expectations.expired" and "push_cache.data.*" in v for n, v in junit_props(out))
    assert "Expired entries, ignored (1)" in (out / "summary.md").read_text(encoding="utf-8")
    assert 'class="expired-entry"' in (out / "index.html").read_text(encoding="utf-8")
    assert json.loads((out / "badge.json").read_text())["color"] == "red"


def test_a_waived_must_test_gives_certified_with_waivers(runs):
    proc, out = runs.waived, runs.full_dir
    assert proc.returncode == CERTIFIED_WITH_WAIVERS, output(proc)
    report = load(out)
    verdict = report["verdict"]
    assert verdict["label"] == "CERTIFIED WITH WAIVERS" and verdict["kind"] == "certified_with_waivers"
    assert verdict["certified"] is False and verdict["waived_must_tests"] == runs.failing
    assert len(runs.failing) == 1, "the fake has one must-level defect"
    # the clause's other cases passed (xpassed): the waiver took effect on the one failing test only
    assert any(t["outcome"] == "xpassed" for t in report["tests"] if t["expected"] == "xfail")
    badge = json.loads((out / "badge.json").read_text())
    assert badge["color"] == "yellow" and "1 must test waived" in badge["message"]
    assert_formats_name_the_expectations(out, runs.waived_exp, "lists are read as batch 0", "2999-01-31")


def test_a_full_run_reports_counters_and_incompatible_through_pytest(runs):
    proc, folder = runs.waived, runs.full_dir
    assert re.search(r"^push_cache calls: \d+, distinct layouts: \d+$", proc.stdout, re.M), output(proc)
    report = load(folder)
    assert isinstance(report["run"]["push_calls"], int) and isinstance(report["run"]["distinct_layouts"], int)
    assert "push_cache calls:" in (folder / "summary.md").read_text(encoding="utf-8")
    assert 'id="push-calls"' in (folder / "index.html").read_text(encoding="utf-8")
    # the should-level refinement of the broken clause is "incompatible" in pytest's own summary line
    incompatible = [t for t in report["tests"] if t["outcome"] == "incompatible"]
    assert incompatible and f"{len(incompatible)} incompatible" in proc.stdout.splitlines()[-1]


def test_skipping_everything_certifies_nothing(tmp_path):
    exp = expectations_file(tmp_path / "skip-all.yaml", "{match: '*', outcome: skip, reason: skip all}")
    out = tmp_path / "r"
    proc = certify("--expectations", str(exp), "--report-dir", str(out))
    assert proc.returncode == NOT_CERTIFIED, output(proc)
    report = load(out)
    assert report["summary"]["skipped"] == report["summary"]["tests"] > 0
    verdict = report["verdict"]
    assert verdict["label"] == "NOT CERTIFIED" and not verdict["certified"]
    must = [c["id"] for c in report["clauses"] if c["level"] == "must" and c["covered"]]
    assert must and set(must) <= set(verdict["no_passing"])
    assert report["expectations"]["sha256"] == sha256(exp)
    assert all(w["reason"] == "skip all" and w["outcome"] == "skipped" for w in report["expectations"]["waived"])
    assert "## Must clauses with no passing test" in (out / "summary.md").read_text(encoding="utf-8")
    assert json.loads((out / "badge.json").read_text())["color"] == "red"


# ---------------------------------------------------------------------------------------- full and partial


def test_deselecting_the_failing_test_is_partial_and_keeps_the_full_report(runs):
    assert runs.failing, output(runs.waived)
    proc = runs.deselect
    assert proc.returncode == PARTIAL, output(proc)
    assert snapshot(runs.full_dir) == runs.full_before, "a partial run never overwrites the full report"
    partial = runs.project / "reports" / (FAKE + ".partial")
    rep = load(partial)
    assert rep["verdict"]["label"] == "PARTIAL" and rep["verdict"]["kind"] == "partial"
    assert rep["completeness"]["full"] is False
    assert any("--deselect" in r for r in rep["completeness"]["reasons"])
    # exactly the failing test is deselected; whatever else is left out is outside the clause --clauses chose
    left_out = rep["completeness"]["left_out"]
    assert {x["id"] for x in left_out if x["why"] == "deselected"} == set(runs.failing)
    assert rep["completeness"]["left_out_counts"]["deselected"] == len(runs.failing)
    assert {x["why"] for x in left_out} == {"deselected", "--clauses"}, rep["completeness"]["left_out_counts"]
    ran = {c for t in rep["tests"] for c in t["clauses"]}
    assert ran == set(runs.deselect_clauses) and len(rep["tests"]) > 0, ran
    md = (partial / "summary.md").read_text(encoding="utf-8")
    assert "## Partial run" in md and all(t in md for t in runs.failing)
    assert ("run.full", "false") in junit_props(partial)
    assert json.loads((partial / "badge.json").read_text())["message"] == "partial"
    assert "kept (a partial run never overwrites it)" in proc.stdout


def test_a_k_run_is_partial_and_keeps_the_full_report_in_an_explicit_folder(runs):
    assert runs.failing, output(runs.waived)
    proc = runs.k_run
    # the selection still holds the defect: a partial run that finds one is not certified
    assert proc.returncode == NOT_CERTIFIED, output(proc)
    assert snapshot(runs.k_dir) == runs.full_before, "the full report copied into --report-dir is kept"
    rep = load(runs.k_dir.with_name(runs.k_dir.name + ".partial"))
    assert rep["verdict"]["label"] == "NOT CERTIFIED (PARTIAL RUN)"
    assert "-k 'src_batch_index and type'" in rep["completeness"]["reasons"]
    assert rep["completeness"]["left_out_counts"].get("deselected", 0) > 0


def test_an_interrupted_run_is_partial_and_names_the_tests_not_run(tmp_path):
    out = tmp_path / "r"
    proc = certify("--backend", "interrupt_backend", "--report-dir", str(out))
    assert proc.returncode == PARTIAL, output(proc)
    report = load(out)
    assert report["verdict"]["label"] == "PARTIAL"
    assert "KeyboardInterrupt" in (report["completeness"]["interrupted"] or "")
    not_run = [x for x in report["completeness"]["left_out"] if x["why"] == "not run"]
    assert not_run and report["completeness"]["left_out_count"] >= len(not_run)


def test_a_custom_spec_makes_the_run_partial(tmp_path):
    from conformance_tests.spec import default_spec_path

    packaged = default_spec_path().read_bytes()
    custom = tmp_path / "push_cache.yaml"
    custom.write_bytes(packaged + b"\n# one case removed here, say\n")
    out = tmp_path / "r"
    proc = certify("--spec", str(custom), "--clauses", SMALL, "--report-dir", str(out))
    assert proc.returncode == PARTIAL, output(proc)
    comp = load(out)["completeness"]
    assert comp["spec"]["packaged"] is False and comp["spec"]["sha256"] == hashlib.sha256(custom.read_bytes()).hexdigest()
    assert comp["spec"]["packaged_sha256"] == hashlib.sha256(packaged).hexdigest()
    assert any(r.startswith(f"custom spec {custom.resolve()}") for r in comp["reasons"]), comp["reasons"]


# ---------------------------------------------------------------------------------------- report folders


@pytest.mark.parametrize(("attr", "folder"), [("dotdot", f"unnamed-backend-{safe_name('..')[-10:]}"),
                                             ("empty", "unnamed-backend")])
def test_bad_backend_names_stay_inside_reports(tmp_path, attr, folder):
    cwd = tmp_path / "project"
    cwd.mkdir()
    proc = certify("--backend", f"bad_names_backend:{attr}", "--clauses", SMALL, cwd=cwd)
    assert proc.returncode == PARTIAL, output(proc)
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.name in REPORT_FILES)
    assert written == sorted(Path("project", "reports", folder + ".partial", n) for n in REPORT_FILES)
    report = load(cwd / "reports" / (folder + ".partial"))
    assert report["backend"]["name"] == {"dotdot": "..", "empty": "(unnamed backend)"}[attr]
    # a name with slashes ("../../escaped/x") is covered by tests/report/test_folders.py


def test_an_unwritable_report_folder_is_a_usage_error_before_anything_runs(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    proc = certify("--report-dir", str(blocker), "--clauses", SMALL)
    assert proc.returncode == USAGE_ERROR, output(proc)
    assert "reports cannot be written" in output(proc) and "passed" not in proc.stdout


def test_two_concurrent_runs_leave_one_whole_set(tmp_path):
    out = tmp_path / "shared"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(FAKES), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    runs = [("push_cache.signature.*",), ("push_cache.signature.*,push_cache.types.*",)]
    procs = [subprocess.Popen([sys.executable, "-m", "conformance_tests", "certify", "-q", "-p", "no:warnings",
                               *ONE_OPERATION, "--clauses", clauses, "--report-dir", str(out)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for (clauses,) in runs]
    outs = [p.communicate(timeout=180)[0] for p in procs]
    assert [p.returncode for p in procs] == [PARTIAL, PARTIAL], outs
    report = load(out)
    n = report["summary"]["tests"]
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert int(suite.get("tests")) == n and len(suite.findall("testcase")) == n
    assert f'data-count="{n}"' in (out / "index.html").read_text(encoding="utf-8")
    assert f"| {n} |" in (out / "summary.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in out.iterdir()) == sorted(REPORT_FILES)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".shared.")], "no temporary folder left"


# ---------------------------------------------------------------------------------------- usage and process


def test_an_impossible_expiry_date_is_one_usage_line(tmp_path):
    exp = expectations_file(tmp_path / "bad-date.yaml",
                            "{match: 'push_cache.*', outcome: xfail, reason: r, expires: 2020-02-30}")
    proc = certify("--expectations", str(exp), "--no-reports")
    out = output(proc)
    assert proc.returncode == USAGE_ERROR, out
    lines = [ln for ln in out.splitlines() if ln.startswith("ERROR:")]
    assert len(lines) == 1 and "$.entries[0].expires" in lines[0] and "2020-02-30" in lines[0], out
    assert "INTERNALERROR" not in out and "Traceback" not in out


def test_the_process_exits_after_the_reports_when_the_backend_leaks_threads(tmp_path):
    out = tmp_path / "r"
    mark = tmp_path / "exit-functions-ran"
    proc = certify("--backend", "leaky_thread_backend", "--clauses", SMALL, "--report-dir", str(out), timeout=90,
                   env={"LEAKY_EXIT_MARK": str(mark)})
    assert proc.returncode == PARTIAL, output(proc)
    assert load(out)["verdict"]["label"] == "PARTIAL"
    assert "non-daemon thread(s) running" in proc.stderr
    # the exit functions still run (the node host closes its SSH gateways there): nothing it started outlives it
    assert mark.is_file(), output(proc)


def test_certify_help_shows_the_kits_options_and_exit_codes_first():
    proc = certify("--help")
    assert proc.returncode == 0, output(proc)
    text = proc.stdout
    kit = text.index("--strict-expectations")
    assert kit < text.index("-k EXPRESSION") and text.index("--backend") < text.index("general:")
    assert "exit codes:" in text[:kit + 4000]
    for e in exitcodes.EXIT_CODES:
        assert e.name in text


# ---------------------------------------------------------------------------------------- exit codes


def test_exit_codes_have_one_meaning_each():
    codes = [e.code for e in exitcodes.EXIT_CODES]
    assert len(set(codes)) == len(codes) and sorted(codes) == list(range(len(codes)))
    assert {e.name: e.code for e in exitcodes.EXIT_CODES} == {
        name: getattr(exitcodes, name) for name in (e.name for e in exitcodes.EXIT_CODES)}
    assert (exitcodes.CERTIFIED, exitcodes.NOT_CERTIFIED, exitcodes.USAGE_ERROR, exitcodes.ADAPTER_ERROR,
            exitcodes.INTERNAL_ERROR, exitcodes.PARTIAL) == (0, 1, 2, 3, 4, 5)


def test_pytest_codes_map_to_kit_codes():
    from conformance_tests.__main__ import kit_exit_code

    assert kit_exit_code(pytest.ExitCode.USAGE_ERROR, None) == exitcodes.USAGE_ERROR
    assert kit_exit_code(pytest.ExitCode.INTERNAL_ERROR, None) == exitcodes.INTERNAL_ERROR
    assert kit_exit_code(pytest.ExitCode.INTERRUPTED, None) == exitcodes.PARTIAL
    assert kit_exit_code(3, exitcodes.ADAPTER_ERROR) == exitcodes.ADAPTER_ERROR  # pytest.exit(returncode=3)
    assert kit_exit_code(0, exitcodes.CERTIFIED, internal_error=True) == exitcodes.INTERNAL_ERROR
    assert kit_exit_code(1, exitcodes.CERTIFIED_WITH_WAIVERS) == exitcodes.CERTIFIED_WITH_WAIVERS


def test_a_report_that_cannot_be_written_never_exits_0():
    from conformance_tests.running.finish import exit_code_for

    certified = {"certified": True, "kind": "certified", "label": "CERTIFIED"}
    assert exit_code_for(certified, None) == exitcodes.CERTIFIED
    assert exit_code_for(certified, "reports not written to /x: PermissionError") == exitcodes.INTERNAL_ERROR


def _readme_table(text: str) -> list[list[str]] | None:
    """The first markdown table under the README's '## Exit codes' heading (cells stripped), or None."""
    lines = text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip().lower() == "## exit codes")
    except StopIteration:
        return None
    rows: list[list[str]] = []
    for ln in lines[start + 1:]:
        if ln.startswith("## "):
            break
        if ln.strip().startswith("|"):
            rows.append([c.strip() for c in ln.strip().strip("|").split("|")])
        elif rows:
            break
    return rows


def test_readme_exit_code_table_matches_the_constants():
    rows = _readme_table((ROOT / "README.md").read_text(encoding="utf-8"))
    assert rows is not None, "README.md has no '## Exit codes' section (paste exitcodes.markdown_table() under it)"
    assert len(rows) >= 3, f"no table under '## Exit codes': {rows}"
    header = [c.lower() for c in rows[0]]
    assert header[:2] == ["code", "name"], header
    body = [r for r in rows[2:] if any(r)]
    documented = {int(r[0].strip("`")): r[1].strip("`") for r in body}
    assert documented == {e.code: e.name for e in exitcodes.EXIT_CODES}
    assert all(len(r) >= 3 and r[2] for r in body), "every code has a meaning"

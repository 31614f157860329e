"""``certify --reruns N`` (pytest-rerunfailures) and the ``flaky`` outcome, run as the user runs them.

The fakes (``tests/kit/fakes/flaky_backend.py``) fail by the count of push_cache calls in their process, so the
runs select clauses whose every test makes exactly one push, chosen from the spec's data: must clauses run by the
``call`` procedure (one call under test per case), with no generated inputs, no step that pushes first, no fault
and no capability needed, every case expecting success (any exception fails it). A fake that fails every other
call then fails each test once and passes it on its rerun.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance_tests.cli.exitcodes import NOT_CERTIFIED, PARTIAL, USAGE_ERROR
from conformance_tests.report.cli import main as report_main
from conformance_tests.report.diff import diff_reports
from conformance_tests.report.site import build_site
from conformance_tests.running.startup import reruns
from conformance_tests.spec import Succeeds, load_spec
from tests.helpers import ROOT
from tests.helpers.certify import certify

pytestmark = pytest.mark.xdist_group("test_reruns")

#: how many clauses the runs select (each has one to four tests)
SELECTED = 4


def single_push_clauses(count: int = SELECTED) -> list[str]:
    """The first ``count`` clauses of the spec whose every test makes one push and expects it to succeed (see the
    module's text)."""
    spec = load_spec()
    found = []
    for c in spec.clauses:
        if c.level.value != "must" or c.procedure.name != "call" or c.generate is not None or c.requires:
            continue
        steps = {*c.procedure.steps, *(s for case in c.cases for s in case.steps)}
        if "push" in steps or any(case.scenario.faults for case in c.cases):
            continue
        if c.cases and all(isinstance(case.expect, Succeeds) for case in c.cases):
            found.append(c.id)
    assert len(found) >= count, f"the spec has only {len(found)} such clauses: {found}"
    return found[:count]


def stream_clause() -> str:
    """A must clause whose test is one hypothesis stream of pushes that must succeed (random_layouts, no capability
    needed, one stream)."""
    for c in load_spec().clauses:
        if (c.level.value == "must" and c.procedure.name == "random_layouts" and not c.requires
                and c.procedure.each is None and isinstance(c.expect, Succeeds)):
            return c.id
    raise AssertionError("the spec has no single-stream random_layouts must clause expecting success")


def output(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout[-6000:] + proc.stderr[-3000:]


def load(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "report.json").read_text(encoding="utf-8"))


class Runs:
    """The module's runs of the fakes on the single-push selection."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    base = tmp_path_factory.mktemp("reruns")
    r = Runs()
    r.clauses = single_push_clauses()
    selection = ",".join(r.clauses)
    plan = {"flaky": ("flaky_backend:backend", "--reruns", "2"), "no_reruns": ("flaky_backend:backend",),
            "broken": ("flaky_backend:broken", "--reruns", "2")}

    def run(name: str) -> tuple[subprocess.CompletedProcess[str], Path]:
        backend, *extra = plan[name]
        folder = base / name
        return certify("--backend", backend, *extra, "--clauses", selection, "--report-dir", str(folder)), folder

    with ThreadPoolExecutor(len(plan)) as pool:  # each is a process of its own; they start in parallel
        for name, result in zip(plan, pool.map(run, plan), strict=True):
            setattr(r, name, result)
    return r


# ------------------------------------------------------------------------------------------------ the option


@pytest.mark.parametrize(("args", "said"), [
    (("--reruns", "x"), "argument --reruns: invalid int value: 'x'"),  # pytest-rerunfailures' own check
    (("--reruns", "-1"), "--reruns -1: how many times a failed test runs again (0 or more)"),  # the kit's
])
def test_a_bad_rerun_count_is_one_line_and_exit_2(args, said):
    proc = certify(*args, "--no-reports")
    lines = [ln for ln in output(proc).splitlines() if ln.strip()]
    assert proc.returncode == USAGE_ERROR and len(lines) == 1 and said in lines[0], (proc.returncode, lines)


@pytest.mark.parametrize(("given", "expected"), [
    ({}, None), ({"reruns": 0}, 0), ({"reruns": 2}, 2), ({"reruns": 2, "force_reruns": 1}, 1),  # as the plugin reads
])
def test_the_run_records_the_rerun_count(given, expected):
    config = SimpleNamespace(getoption=lambda dest, default=None: given.get(dest, default))
    assert reruns(config) == expected


def test_a_negative_forced_rerun_count_is_refused():
    config = SimpleNamespace(getoption=lambda dest, default=None: {"force_reruns": -2}.get(dest, default))
    with pytest.raises(pytest.UsageError, match=r"^--force-reruns -2: how many times a failed test runs again"):
        reruns(config)


# ------------------------------------------------------------------------------------------------ flaky


def test_a_test_that_fails_then_passes_is_flaky_with_both_attempts(runs):
    proc, folder = runs.flaky
    assert proc.returncode == NOT_CERTIFIED, output(proc)
    report = load(folder)
    assert report["run"]["reruns"] == 2
    tests = report["tests"]
    assert tests and {t["outcome"] for t in tests} == {"flaky"}, [(t["id"], t["outcome"]) for t in tests]
    for t in tests:
        first, second = t["attempts"]
        assert (first["outcome"], second) == ("failed", {"outcome": "passed"}), t["attempts"]
        assert "RuntimeError('fake-flaky: push_cache call" in first["message"], first["message"]
        assert t["message"] == first["message"]  # the failing attempt's message stays the row's
        assert t["repro"], f"{t['id']}: a flaky row keeps its failing attempt's reproduction"
    covered = {c["id"]: c["outcome"] for c in report["clauses"] if c["covered"]}
    assert covered == dict.fromkeys(runs.clauses, "flaky")
    verdict = report["verdict"]
    assert verdict["kind"] == "not_certified" and verdict["blocking"] == runs.clauses, verdict
    assert verdict["flaky_tests"] == [t["id"] for t in tests] == verdict["blocking_tests"]
    assert f"{len(tests)} must/may test(s) flaky: failed, then passed when run again" in verdict["reasons"][0]
    assert report["summary"]["flaky"] == len(tests) and report["summary"]["failed"] == 0


def test_every_format_says_flaky(runs, capsys):
    proc, folder = runs.flaky
    report = load(folder)
    n = len(report["tests"])
    # the terminal: pytest's line and the kit's summary
    assert f"{n} flaky" in proc.stdout and f"{n} rerun" in proc.stdout, output(proc)
    assert f"flaky (failed, then passed when run again; blocking at must and may level): {n} test(s)" in proc.stdout
    assert "(must; failed -> passed)" in proc.stdout
    md = (folder / "summary.md").read_text(encoding="utf-8")
    assert f"## Flaky tests ({n})" in md and md.count("Attempts: 1 failed, 2 passed") == n, md[:3000]
    html = (folder / "index.html").read_text(encoding="utf-8")
    assert f'id="count-flaky" data-outcome="flaky" data-count="{n}"' in html
    assert html.count('data-attempts="failed,passed"') == n
    assert html.count('class="failure filterable"') == n and html.count('data-outcome="flaky">') >= n
    suite = ET.parse(folder / "junit.xml").getroot().find("testsuite")
    failures = suite.findall("testcase/failure")
    assert len(failures) == n == int(suite.get("failures"))
    assert all(f.get("type") == "flaky" and f.get("message").startswith("flaky (1 failed, 2 passed): ")
               for f in failures), [f.attrib for f in failures]
    assert all("attempts: 1 failed, 2 passed" in (f.text or "") for f in failures)
    badge = json.loads((folder / "badge.json").read_text(encoding="utf-8"))
    assert badge["message"] == f"not certified (partial run): {n} flaky tests" and badge["color"] == "red"
    assert report_main(["summary", str(folder / "report.json")]) == 0
    summary = capsys.readouterr().out
    assert f"flaky tests (failed, then passed when run again): {n}" in summary
    assert summary.count("failed -> passed") == n


def test_the_site_shows_flaky_clauses(runs, tmp_path):
    _, folder = runs.flaky
    build_site([folder / "report.json"], tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert index.count('data-outcome="flaky"') == len(runs.clauses), "one flaky cell per selected clause"
    assert '<span class="sw o-flaky">≈</span> flaky' in index  # the legend
    assert "--flaky:" in index  # its colour


def test_report_diff_counts_flaky_as_failing(runs, tmp_path, capsys):
    _, no_reruns = runs.no_reruns
    _, flaky = runs.flaky
    before, after = load(no_reruns), load(flaky)
    diff = diff_reports(before, after)
    outcome_before = {t["id"]: t["outcome"] for t in before["tests"]}
    newly = {c["id"] for c in diff["tests"]["newly_failing"]}
    # passed -> flaky is newly failing; failed -> flaky another change (as bad as before); each listed once
    assert newly == {i for i, o in outcome_before.items() if o == "passed"} and newly, outcome_before
    assert {c["id"] for c in diff["tests"]["changed"]} == set(outcome_before) - newly
    assert diff["regression"] is True
    assert report_main(["diff", str(no_reruns / "report.json"), str(flaky / "report.json")]) == 1
    assert "passed -> flaky" in capsys.readouterr().out
    fixed = diff_reports(after, before)  # flaky -> passed is fixed
    assert {c["id"] for c in fixed["tests"]["fixed"]} == newly


# ------------------------------------------------------------------------------------------------ not flaky


def test_without_reruns_the_same_backend_fails(runs):
    proc, folder = runs.no_reruns
    assert proc.returncode == NOT_CERTIFIED, output(proc)
    report = load(folder)
    outcomes = [t["outcome"] for t in report["tests"]]
    # every other test fails (the other calls pass); nothing is flaky and no row has attempts
    assert "flaky" not in outcomes and {"failed", "passed"} == set(outcomes), outcomes
    assert not any("attempts" in t for t in report["tests"])
    assert report["run"]["reruns"] is None and report["summary"]["flaky"] == 0
    assert report["verdict"]["flaky_tests"] == [] and not any("flaky" in r for r in report["verdict"]["reasons"])


def test_a_test_failing_on_every_attempt_stays_failed_with_its_attempts(runs):
    proc, folder = runs.broken
    assert proc.returncode == NOT_CERTIFIED, output(proc)
    report = load(folder)
    for t in report["tests"]:
        assert t["outcome"] == "failed" and [a["outcome"] for a in t["attempts"]] == ["failed"] * 3, t
        assert all("fake-broken" in a["message"] for a in t["attempts"])
        assert t["message"] == t["attempts"][-1]["message"]  # the row is its last attempt's
    assert report["verdict"]["flaky_tests"] == [] and "must/may test(s) failed" in report["verdict"]["reasons"][0]
    assert f"{len(report['tests'])} failed" in proc.stdout and f"{2 * len(report['tests'])} rerun" in proc.stdout


def test_a_failing_example_that_passes_when_hypothesis_replays_it_is_flaky(tmp_path):
    """Hypothesis runs a failing example again before it reports it; when it then passes, hypothesis raises
    FlakyFailure. That is what --reruns finds, found inside one attempt: the row is flaky (it blocks as a failure
    does) and its message leads with the failure hypothesis saw."""
    clause = stream_clause()
    folder = tmp_path / "once"
    proc = certify("--backend", "flaky_backend:once", "--clauses", clause, "--hypothesis-profile", "quick",
                   "--report-dir", str(folder))
    assert proc.returncode == NOT_CERTIFIED, output(proc)
    # the clause's stream, and any item that covers a partition by construction (which passes)
    tests = load(folder)["tests"]
    flaky = [t for t in tests if t["outcome"] == "flaky"]
    assert len(flaky) == 1 and all(t["outcome"] == "passed" for t in tests if t not in flaky), tests
    (test,) = flaky
    assert "attempts" not in test, test
    lines = test["message"].splitlines()
    assert lines[0] == "flaky: the example failed, then passed when hypothesis ran it again", lines[:3]
    assert "RuntimeError('fake-fails-once: push_cache call 2 of this process dropped')" in test["message"]
    assert "FlakyFailure" in test["message"]
    verdict = load(folder)["verdict"]
    assert verdict["flaky_tests"] == [test["id"]] and verdict["blocking"] == [clause]


# ------------------------------------------------------------------------------------------------ the reference


def readme_rerun_args() -> list[str]:
    """The arguments of the README's `tox -e certify -- ... --reruns ...` row ("Other commands")."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `tox -e certify -- ([^`]*--reruns[^`]*)` \|", text, re.M)
    assert len(rows) == 1, f"the README's table has {len(rows)} --reruns rows"
    return shlex.split(rows[0])


def test_reruns_change_nothing_for_the_reference(tmp_path):
    """The README's --reruns row, on a modest selection (a run that passes reruns nothing): the same rows, the
    same verdict (PARTIAL: a selection certifies nothing, and nothing blocks)."""
    selection = ",".join(single_push_clauses(SELECTED) + [stream_clause()])
    args = ("--clauses", selection, "--hypothesis-profile", "quick")
    with ThreadPoolExecutor(2) as pool:
        plain_run = pool.submit(certify, *args, "--report-dir", str(tmp_path / "plain"))
        rerun_run = pool.submit(certify, *readme_rerun_args(), *args, "--report-dir", str(tmp_path / "rerun"))
        plain, rerun = plain_run.result(), rerun_run.result()
    assert plain.returncode == rerun.returncode == PARTIAL, output(plain) + output(rerun)
    a, b = load(tmp_path / "plain"), load(tmp_path / "rerun")
    assert b["run"]["reruns"] == 2 and a["run"]["reruns"] is None

    def rows(report: dict[str, Any]) -> list[dict[str, Any]]:
        return [{k: v for k, v in t.items() if k != "duration_s"} for t in report["tests"]]

    assert rows(a) == rows(b) and rows(a)
    assert a["verdict"] == b["verdict"] and a["verdict"]["kind"] == "partial" and not a["verdict"]["blocking"]
    assert a["clauses"] == b["clauses"] and a["summary"] == b["summary"]


def test_rows_travel_from_pytest_xdist_workers(tmp_path):
    """Under -n 2 each worker re-runs its own failed tests; every attempt's report reaches the controller, which
    writes the same rows a serial run would (each worker's count of calls starts anew, so its first test passes
    at once)."""
    selection = ",".join(single_push_clauses(3))
    folder = tmp_path / "xdist"
    proc = certify("--backend", "flaky_backend:backend", "--reruns", "2", "-n", "2", "--clauses", selection,
                   "--report-dir", str(folder))
    assert proc.returncode == NOT_CERTIFIED, output(proc)
    tests = load(folder)["tests"]
    flaky = [t for t in tests if t["outcome"] == "flaky"]
    assert flaky and all(t["outcome"] in ("flaky", "passed") for t in tests), [(t["id"], t["outcome"]) for t in tests]
    assert all([a["outcome"] for a in t["attempts"]] == ["failed", "passed"] for t in flaky)
    assert not any("attempts" in t for t in tests if t["outcome"] == "passed")

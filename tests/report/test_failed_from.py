"""``certify --failed-from REPORT_JSON``: the command every format of a failing report prints runs again exactly
the tests that report lists as failing (failed, errored, flaky or incompatible), as a partial run; a file that is
not a report, or a report of another backend or spec, is one line and exit 2, before any test runs."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from conformance_tests.cli.exitcodes import NOT_CERTIFIED, PARTIAL, USAGE_ERROR
from conformance_tests.report.rerun import failing_tests, rerun_command
from conformance_tests.selecting.selection import WHY_FAILED_FROM
from tests.helpers.certify import certify


def _printed_command(stdout: str) -> list[str]:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("re-run the failing tests: "))
    return shlex.split(line.split(": ", 1)[1])


def test_the_printed_command_runs_again_exactly_the_failed_tests(wrong_entry_run: dict[str, Any]) -> None:
    words = _printed_command(wrong_entry_run["stdout"])
    assert words[:4] == ["python", "-m", "conformance_tests", "certify"], words
    assert words[-2:] == ["--failed-from", "reports/fake-wrong-entry/report.json"], words
    failed = failing_tests(wrong_entry_run["report"])
    assert len(failed) == 6, failed
    proc = certify(*words[4:], "--report-dir", "again", "-q", cwd=wrong_entry_run["cwd"])
    assert proc.returncode == NOT_CERTIFIED, proc.stdout[-2000:] + proc.stderr[-1000:]
    again = json.loads((wrong_entry_run["cwd"] / "again" / "report.json").read_text(encoding="utf-8"))
    assert [t["id"] for t in again["tests"]] == failed, (words, [t["id"] for t in again["tests"]])
    assert again["verdict"]["partial"] and any(r.startswith("--failed-from") for r in
                                               again["completeness"]["reasons"]), again["completeness"]
    assert all(x["why"] in (WHY_FAILED_FROM, "--clauses") for x in again["completeness"]["left_out"])


def test_a_report_without_failures_selects_none_and_the_run_is_partial(tmp_path: Path) -> None:
    """No failing test: no command is offered, and --failed-from itself runs nothing (exit 5, PARTIAL)."""
    proc = certify("--clauses", "push_cache.signature.positional", "--report-dir", "first", "-q", cwd=tmp_path)
    assert proc.returncode == PARTIAL, proc.stdout[-2000:]
    passing = json.loads((tmp_path / "first" / "report.json").read_text(encoding="utf-8"))
    assert rerun_command(passing, "first/report.json") is None
    proc = certify("--failed-from", "first/report.json", "--report-dir", "second", "-q", cwd=tmp_path)
    assert proc.returncode == PARTIAL, proc.stdout[-2000:]
    second = json.loads((tmp_path / "second" / "report.json").read_text(encoding="utf-8"))
    assert second["tests"] == [] and second["verdict"]["partial"], second["summary"]


@pytest.mark.parametrize("case", ["missing", "not json", "not a report", "another backend", "another spec"])
def test_a_bad_or_foreign_report_is_one_line_and_exit_2(case: str, wrong_entry_run: dict[str, Any],
                                                       tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    args = ["--backend", "wrong_entry_adapter"]
    report = json.loads(json.dumps(wrong_entry_run["report"]))
    if case == "not json":
        path.write_text("{", encoding="utf-8")
    elif case == "not a report":
        path.write_text('{"tests": []}', encoding="utf-8")
    elif case == "another backend":
        path.write_text(json.dumps(report), encoding="utf-8")
        args = ["--backend", "reference"]
    elif case == "another spec":
        report["spec"]["sha256"] = "f" * 64
        path.write_text(json.dumps(report), encoding="utf-8")
    proc = certify(*args, "--failed-from", str(path), "--no-reports", "-q", cwd=tmp_path)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert proc.returncode == USAGE_ERROR and len(lines) == 1 and "--failed-from" in lines[0], (case, lines)

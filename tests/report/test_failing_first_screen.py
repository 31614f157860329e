"""What a vendor reads first of a failing run (issue 33), for the broken adapter of tests/kit/fakes/
wrong_entry_adapter.py: the first 40 lines of summary.md, certify's terminal summary and ``report summary`` each
give the verdict, the likely cause in one sentence naming only the clauses that failed, the failing call and the
command that re-runs only the failing tests. The browser's first screen is checked in test_first_screen.py; the
command itself in test_failed_from.py."""

from __future__ import annotations

import copy
import html
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conformance_tests.report import build_report
from conformance_tests.report.markdown import to_markdown
from conformance_tests.report.rerun import rerun_command
from tests.helpers import child_pythonpath
from tests.helpers.certify import certify

FIRST_SCREEN = 40
#: the outcomes of a clause whose tests failed
FAILED = ("failed", "flaky", "incompatible")
RERUN = "--failed-from reports/fake-wrong-entry/report.json"


def _cause(run: dict[str, Any]) -> dict[str, Any]:
    cause = run["report"]["likely_causes"][0]
    assert cause["predicate"] == "src_batch_index == 1", cause
    return cause


def test_each_cause_names_only_clauses_whose_tests_failed(wrong_entry_run: dict[str, Any]) -> None:
    report = wrong_entry_run["report"]
    outcome = {c["id"]: c["outcome"] for c in report["clauses"]}
    for cause in report["likely_causes"]:
        passed = [c for c in cause["clauses"] if outcome.get(c) not in FAILED]
        assert not passed, (cause["statement"], passed)
    assert "push_cache.remote.not_linked" not in _cause(wrong_entry_run)["clauses"]


def test_the_first_40_lines_of_summary_md_give_verdict_cause_call_and_rerun(wrong_entry_run: dict[str, Any]) -> None:
    lines = (wrong_entry_run["folder"] / "summary.md").read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN]
    head = "\n".join(lines)
    cause = _cause(wrong_entry_run)
    assert lines[0].startswith("# push_cache conformance: ") and "NOT CERTIFIED" in lines[0], lines[0]
    said = next((ln for ln in lines if ln.startswith("**Likely cause:**")), None)
    assert said is not None and cause["statement"] in said, (said, cause["statement"])
    named = next(ln for ln in lines if ln.startswith("Failed with it: "))
    assert all(f"`{c}`" in named for c in cause["clauses"]), (named, cause["clauses"])
    assert any("call: " in ln and "push_cache(" in ln and "src_batch_index=1" in ln for ln in lines), head
    assert any(ln.startswith("python -m conformance_tests certify ") and ln.endswith(RERUN) for ln in lines), head


def test_the_terminal_summary_gives_verdict_cause_and_rerun(wrong_entry_run: dict[str, Any]) -> None:
    out = wrong_entry_run["stdout"].splitlines()
    verdict = next(i for i, ln in enumerate(out) if ln.startswith("verdict: NOT CERTIFIED"))
    after = out[verdict:verdict + 4]
    assert after[1].startswith(f"likely cause: {_cause(wrong_entry_run)['statement']}"), after
    assert "push_cache.remote.not_linked" not in after[1], after[1]
    assert after[2].startswith("re-run the failing tests: python -m conformance_tests certify ") \
        and after[2].endswith(RERUN), after


def test_report_summary_prints_the_cause_the_rerun_and_failing_tests_per_clause(
        wrong_entry_run: dict[str, Any]) -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "report", "summary",
                           "reports/fake-wrong-entry/report.json"], cwd=wrong_entry_run["cwd"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": child_pythonpath()})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert f"  likely cause: {_cause(wrong_entry_run)['statement']}" in proc.stdout, proc.stdout[:1500]
    assert any(ln.startswith("  re-run the failing tests: ") and ln.endswith(RERUN) for ln in out), out
    header = next(ln for ln in out if ln.strip().startswith("clause "))
    assert header.split()[-2:] == ["failing", "tests"], header
    report = wrong_entry_run["report"]
    for clause in (c for c in report["clauses"] if c["outcome"] in FAILED):
        failed = sum(1 for t in report["tests"] if t["id"] in clause["tests"] and t["outcome"] in FAILED)
        row = next(ln for ln in out if ln.strip().startswith(clause["id"] + " "))
        assert row.endswith(f"{failed} of {len(clause['tests'])}"), (row, failed)


HOSTILE = "<script>alert(1)</script> & <img src=x onerror=alert(2)>"


def test_summary_md_carries_no_backend_string_as_raw_html(kit: Any) -> None:
    header = copy.deepcopy(kit.HEADER)
    header["backend"]["name"] = header["backend"]["version"] = HOSTILE
    rows = [kit.row("push_cache.data.bytes_equal", "x", "failed", "must", message=f"bad {HOSTILE}\n  call: x",
                    repro=f"print('{HOSTILE}')\n", hypothesis={"example": HOSTILE})]
    report = build_report(header, rows, copy.deepcopy(kit.CLAUSES), {}, None)
    text = to_markdown(report, f"reports/{HOSTILE}/report.json")
    assert rerun_command(report, "x") is not None
    for raw in ("<script", "<img"):
        assert raw not in text.lower(), (raw, [ln for ln in text.splitlines() if raw in ln.lower()])
    assert text.count(html.escape(HOSTILE, quote=False)) >= 4, text[:1500]


def test_a_plain_message_stays_a_fenced_block(kit: Any) -> None:
    rows = [kit.row("push_cache.data.bytes_equal", "x", "failed", "must", message="DEVICE->HOST bytes differ")]
    text = to_markdown(kit.make_report(rows))
    assert "```\nDEVICE->HOST bytes differ\n```" in text, text


def test_a_history_that_broke_one_of_its_clauses_gives_the_cause_that_clause_alone(tmp_path: Path) -> None:
    """The issue's cause #1 named every clause a failing history checks (remote.not_linked, timeout.*, ...), most
    of which passed: a history names many clauses and breaks one, and the cause names only the one it broke."""
    proc = certify("--backend", "wrong_entry_adapter", "--hypothesis-profile", "quick", "--shrink-time", "0",
                   "--clauses", "push_cache.history.valid_pushes,push_cache.data.src_batch_slice",
                   "-k", "endurance or src_batch_slice", "--report-dir", "out", "-q", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:]
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    history = next(t for t in report["tests"] if t["outcome"] == "failed" and len(t["clauses"]) > 1)
    (cause,) = report["likely_causes"]
    assert history["id"] in cause["tests"], cause
    assert cause["clauses"] == list(dict.fromkeys(c for t in report["tests"] if t["id"] in cause["tests"]
                                                  for c in t["failed_clauses"])), (cause, history["clauses"])
    assert len(cause["clauses"]) < len(history["clauses"]), (cause["clauses"], history["clauses"])

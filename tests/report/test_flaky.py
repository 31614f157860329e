"""The ``flaky`` outcome (failed, then passed when run again) in the verdict, the clause outcomes, the diff and every
format, from hand-made rows."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET

import pytest

from conformance_tests.report import clause_outcome, diff_reports, load_report, render_derived, write_reports
from conformance_tests.report.cli import format_summary
from conformance_tests.report.markdown import to_markdown

P = "push_cache."
ATTEMPTS = [{"outcome": "failed", "message": "bytes differ at 7"}, {"outcome": "passed"}]


def passing_rows(kit):
    return [kit.row(c["id"], "ok", "passed", c["level"]) for c in kit.CLAUSES]


def with_flaky(kit, cid: str):
    """Every clause passes, except that ``cid``'s test is flaky."""
    rows = passing_rows(kit)
    for r in rows:
        if r["clauses"] == [cid]:
            r.update(outcome="flaky", message="bytes differ at 7", attempts=copy.deepcopy(ATTEMPTS))
    return rows


@pytest.mark.parametrize(("level", "outcomes", "expected"), [
    ("must", ["passed", "flaky"], "flaky"),
    ("may", ["flaky"], "flaky"),
    ("should", ["flaky", "passed"], "incompatible"),  # as a should-level failure reads
    ("must", ["flaky", "failed"], "failed"),  # a failure on every attempt says more than a flaky test
    ("must", ["flaky", "error"], "failed"),
    ("must", ["flaky", "xfailed"], "flaky"),
])
def test_clause_outcome_of_a_flaky_test(level, outcomes, expected):
    assert clause_outcome(level, outcomes) == expected


@pytest.mark.parametrize("cid", [P + "param.src_batch_index.type", P + "order.tensor_order"], ids=["must", "may"])
def test_a_flaky_must_or_may_test_blocks_as_a_failure_does(kit, cid):
    report = kit.make_report(with_flaky(kit, cid))
    verdict = report["verdict"]
    flaky = [t["id"] for t in report["tests"] if t["outcome"] == "flaky"]
    assert verdict["label"] == "NOT CERTIFIED" and verdict["kind"] == "not_certified" and not verdict["certified"]
    assert verdict["blocking"] == [cid] and verdict["blocking_tests"] == flaky == verdict["flaky_tests"]
    assert verdict["reasons"] == ["1 must/may test(s) flaky: failed, then passed when run again (a flaky test "
                                  "blocks as a failure does)"]
    assert report["blocking_details"][0]["first_message"] == "bytes differ at 7"
    assert report["summary"]["flaky"] == 1 and report["clause_summary"]["flaky"] == 1


def test_a_flaky_should_test_is_an_incompatibility(kit):
    cid = P + "data.layer_range"
    report = kit.make_report(with_flaky(kit, cid))
    verdict = report["verdict"]
    assert verdict["certified"] is True and verdict["flaky_tests"] == [] and verdict["blocking"] == []
    assert {c["id"]: c["outcome"] for c in report["clauses"]}[cid] == "incompatible"
    assert verdict["compatibility"] == pytest.approx(2 / 3)  # one of the three tested should clauses
    assert report["summary"]["flaky"] == 1


def test_flaky_with_errors_is_not_certified_errors(kit):
    rows = with_flaky(kit, P + "param.src_batch_index.type")
    rows[1]["outcome"] = "error"
    assert kit.make_report(rows)["verdict"]["label"] == "NOT CERTIFIED"  # not "(ERRORS)": a test was flaky


@pytest.mark.parametrize(("before", "after", "newly_failing", "fixed"), [
    ("passed", "flaky", True, False),
    ("flaky", "passed", False, True),
    ("failed", "flaky", False, False),  # as bad as before: changed, not newly failing
    ("flaky", "failed", False, False),
    ("incompatible", "flaky", True, False),
])
def test_diff_weighs_flaky_as_failed(kit, before, after, newly_failing, fixed):
    cid = P + "param.src_batch_index.type"
    a, b = passing_rows(kit), passing_rows(kit)
    a[0]["outcome"], b[0]["outcome"] = before, after
    diff = diff_reports(kit.make_report(a), kit.make_report(b))
    assert bool(diff["tests"]["newly_failing"]) is newly_failing and bool(diff["tests"]["fixed"]) is fixed, diff
    # each change is listed once: newly failing, fixed, or else another change
    other = [] if newly_failing or fixed else [a[0]["id"]]
    assert [c["id"] for c in diff["tests"]["changed"]] == other
    assert diff["regression"] is newly_failing
    assert [c["id"] for c in diff["clauses"]["changed"]] == ([] if newly_failing or fixed else [cid])


def test_junit_a_blocking_flaky_test_is_a_failure_and_a_should_one_is_skipped(kit, tmp_path):
    rows = with_flaky(kit, P + "param.src_batch_index.type")
    should = with_flaky(kit, P + "data.layer_range")
    rows[3] = should[3]
    suite = ET.parse(write_reports(kit.make_report(rows), tmp_path)["junit.xml"]).getroot().find("testsuite")
    cases = {c.get("name").split("[", 1)[1].split("-", 1)[0]: c for c in suite.findall("testcase")}
    failure = cases[P + "param.src_batch_index.type"].find("failure")
    assert failure.get("type") == "flaky" and failure.get("message") == "flaky (1 failed, 2 passed): bytes differ at 7"
    assert failure.text.startswith("flaky: failed, then passed when run again; attempts: 1 failed, 2 passed")
    skipped = cases[P + "data.layer_range"].find("skipped")
    assert skipped.get("type") == "flaky" and cases[P + "data.layer_range"].find("failure") is None
    assert (suite.get("failures"), suite.get("skipped")) == ("1", "1")
    props = {p.get("name"): p.get("value") for p in cases[P + "data.layer_range"].find("properties")}
    assert props["outcome"] == "flaky" and props["attempts"] == "1 failed, 2 passed"


def test_markdown_html_badge_and_summary_show_flaky(kit, tmp_path):
    report = kit.make_report(with_flaky(kit, P + "param.src_batch_index.type"))
    paths = write_reports(report, tmp_path)
    md = paths["summary.md"].read_text(encoding="utf-8")
    assert "## Flaky tests (1)" in md and "Attempts: 1 failed, 2 passed" in md and "bytes differ at 7" in md
    html = paths["index.html"].read_text(encoding="utf-8")
    assert 'id="count-flaky" data-outcome="flaky" data-count="1"' in html
    assert 'id="clause-count-flaky" data-outcome="flaky" data-count="1"' in html
    assert 'data-attempts="failed,passed"' in html and "--flaky:" in html
    badge = json.loads(paths["badge.json"].read_text(encoding="utf-8"))
    assert badge == {"schemaVersion": 1, "label": "push_cache", "message": "not certified: 1 flaky test",
                     "color": "red"}
    text = format_summary(report)
    assert "flaky tests (failed, then passed when run again): 1" in text and "failed -> passed" in text


def test_a_report_written_before_flaky_existed_still_renders(kit, tmp_path):
    """Reports of earlier kits have no ``flaky`` count; every format reads them (0 flaky)."""
    report = kit.make_report(passing_rows(kit))
    old = copy.deepcopy(report)
    del old["summary"]["flaky"], old["clause_summary"]["flaky"], old["verdict"]["flaky_tests"]
    old["run"].pop("reruns", None)
    path = tmp_path / "old" / "report.json"
    path.parent.mkdir()
    path.write_text(json.dumps(old), encoding="utf-8")
    loaded = load_report(path)  # the schema still accepts it
    render_derived(loaded, tmp_path / "old")
    assert 'id="count-flaky" data-outcome="flaky" data-count="0"' in (tmp_path / "old" / "index.html").read_text()
    assert "flaky" in to_markdown(loaded) and "passed" in format_summary(loaded)

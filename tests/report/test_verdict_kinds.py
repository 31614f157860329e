"""The verdict's kinds, from hand-made rows: waivers with limits, full versus partial, errors, and how every
format shows them (report.json, junit.xml, summary.md, index.html, badge.json)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from conformance_tests.report import validate_report, write_reports
from conformance_tests.report.badge import to_badge

P = "push_cache."
WAIVER = {"entry": 0, "match": "push_cache.param.*", "outcome": "xfail", "reason": "known: float accepted",
          "link": "https://example.com/1", "expires": "2999-01-31"}
EXPECTATIONS = {
    "path": "/vendor/known.yaml",
    "sha256": "ab" * 32,
    "entries": [{"index": 0, "match": "push_cache.param.*", "outcome": "xfail", "reason": "known: float accepted",
                 "link": "https://example.com/1", "expires": "2999-01-31", "expired": False, "hits": 1},
                {"index": 1, "match": "push_cache.data.*", "outcome": "skip", "reason": "old", "link": None,
                 "expires": "2001-01-01", "expired": True, "hits": 0}],
    "expired": [{"index": 1, "match": "push_cache.data.*", "outcome": "skip", "reason": "old", "link": None,
                 "expires": "2001-01-01", "expired": True, "hits": 0}],
}


def passing_rows(kit):
    return [kit.row(c["id"], "ok", "passed", c["level"]) for c in kit.CLAUSES]


def waived_row(kit, cid, level, outcome="xfailed", expected="xfail"):
    return kit.row(cid, "waived", outcome, level, expected=expected, waiver=dict(WAIVER),
                   message="expectations: known: float accepted")


def test_a_waived_must_test_with_a_passing_sibling_certifies_with_waivers(kit):
    rows = passing_rows(kit) + [waived_row(kit, P + "param.src_batch_index.type", "must")]
    report = kit.make_report(rows, **EXPECTATIONS)
    v = report["verdict"]
    assert (v["label"], v["kind"], v["certified"], v["partial"]) == ("CERTIFIED WITH WAIVERS",
                                                                     "certified_with_waivers", False, False)
    assert v["waived_must_tests"] == [rows[-1]["id"]] and v["blocking"] == []
    assert any("1 must test(s) waived" in r for r in v["reasons"])
    waived = report["expectations"]["waived"]
    assert waived == [{"test": rows[-1]["id"], "level": "must", "clauses": [P + "param.src_batch_index.type"],
                       "expected": "xfail", "outcome": "xfailed", "entry": 0, "match": "push_cache.param.*",
                       "reason": "known: float accepted", "expires": "2999-01-31", "link": "https://example.com/1"}]
    badge = to_badge(report)
    assert badge["color"] == "yellow"
    assert badge["message"] == f"certified with waivers: 1 must test waived (expectations {'ab' * 6})"
    assert set(badge) == {"schemaVersion", "label", "message", "color"}  # shields rejects unknown keys


@pytest.mark.parametrize("outcome, expected", [("xfailed", "xfail"), ("skipped", "skip")])
def test_a_must_clause_left_without_a_passing_test_is_not_certified(kit, outcome, expected):
    rows = [r for r in passing_rows(kit) if r["clauses"] != [P + "data.bytes_equal"]]
    rows.append(waived_row(kit, P + "data.bytes_equal", "must", outcome, expected))
    v = kit.make_report(rows, **EXPECTATIONS)["verdict"]
    assert v["label"] == "NOT CERTIFIED" and v["no_passing"] == [P + "data.bytes_equal"]
    assert v["blocking"] == [P + "data.bytes_equal"]


def test_a_suite_skip_that_leaves_a_must_clause_without_a_pass_blocks_too(kit):
    rows = [r for r in passing_rows(kit) if r["clauses"] != [P + "data.bytes_equal"]]
    rows.append(kit.row(P + "data.bytes_equal", "x", "skipped", "must", message="skipped by the suite"))
    assert kit.make_report(rows)["verdict"]["no_passing"] == [P + "data.bytes_equal"]


def test_should_and_may_waivers_and_unneeded_must_waivers_do_not_lower_the_verdict(kit):
    rows = passing_rows(kit) + [
        waived_row(kit, P + "data.layer_range", "should"),
        waived_row(kit, P + "order.tensor_order", "may", "skipped", "skip"),
        waived_row(kit, P + "param.size.negative", "must", "xpassed"),  # the waiver was not needed
    ]
    report = kit.make_report(rows, **EXPECTATIONS)
    assert report["verdict"]["label"] == "CERTIFIED" and report["verdict"]["waived_must_tests"] == []
    assert len(report["expectations"]["waived"]) == 3


def test_partial_runs_never_certify(kit):
    partial = {"full": False, "reasons": ["-k 'param'"], "selected": 3,
               "left_out": [{"id": "t::a", "why": "deselected"}, {"id": "t::b", "why": "not run"}]}
    rows = [kit.row(P + "param.size.negative", "ok", "passed", "must")]
    report = kit.make_report(rows, completeness=partial)
    v, c = report["verdict"], report["completeness"]
    assert (v["label"], v["kind"], v["certified"], v["partial"]) == ("PARTIAL", "partial", False, True)
    assert v["blocking"] == [], "untested clauses do not block a partial run; its label says it is partial"
    assert c["left_out_count"] == 2 and c["left_out_counts"] == {"deselected": 1, "not run": 1}
    rows.append(kit.row(P + "param.src_batch_index.type", "float", "failed", "must"))
    v = kit.make_report(rows, completeness=partial)["verdict"]
    assert v["label"] == "NOT CERTIFIED (PARTIAL RUN)" and v["kind"] == "not_certified"
    assert v["blocking"] == [P + "param.src_batch_index.type"]


def test_reasons_alone_make_a_run_partial(kit):
    report = kit.make_report(passing_rows(kit), completeness={"full": True, "reasons": ["custom spec x.yaml"]})
    assert report["completeness"]["full"] is False and report["verdict"]["label"] == "PARTIAL"


def test_only_errors_read_not_certified_errors(kit):
    rows = passing_rows(kit) + [kit.row(P + "config.mem_pool", "setup", "error", "must", message="fixture")]
    assert kit.make_report(rows)["verdict"]["label"] == "NOT CERTIFIED (ERRORS)"
    rows.append(kit.row(P + "config.mem_pool", "bad", "failed", "must"))
    assert kit.make_report(rows)["verdict"]["label"] == "NOT CERTIFIED"


def test_every_format_names_the_expectations_waivers_and_expired_entries(kit, tmp_path):
    rows = passing_rows(kit) + [waived_row(kit, P + "param.src_batch_index.type", "must")]
    report = kit.make_report(rows, **EXPECTATIONS)
    paths = write_reports(report, tmp_path)
    md = paths["summary.md"].read_text(encoding="utf-8")
    assert "/vendor/known.yaml" in md and "ab" * 32 in md and "known: float accepted" in md and "2999-01-31" in md
    assert "Expired entries, ignored (1)" in md and "`push_cache.data.*`" in md
    html = paths["index.html"].read_text(encoding="utf-8")
    assert 'data-path="/vendor/known.yaml"' in html and f'data-sha256="{"ab" * 32}"' in html
    assert html.count('class="waiver-row"') == 1 and 'class="expired-entry"' in html
    assert 'class="verdict waivers"' in html
    suite = ET.parse(paths["junit.xml"]).getroot().find("testsuite")
    props = [(p.get("name"), p.get("value")) for p in suite.find("properties")]
    assert ("expectations.path", "/vendor/known.yaml") in props and ("expectations.sha256", "ab" * 32) in props
    assert ("expectations.waived_must", "1") in props and ("verdict", "CERTIFIED WITH WAIVERS") in props
    assert any(n == "expectations.expired" and "2001-01-01" in v for n, v in props)
    case = suite.findall("testcase")[-1]
    tprops = {p.get("name"): p.get("value") for p in case.find("properties")}
    assert tprops["waiver.reason"] == "known: float accepted" and tprops["waiver.expires"] == "2999-01-31"
    badge = json.loads(paths["badge.json"].read_text())
    assert "ab" * 6 in badge["message"]


def test_every_format_names_a_partial_run_and_what_it_left_out(kit, tmp_path):
    partial = {"full": False, "reasons": ["--deselect: 1 test(s) deselected"],
               "left_out": [{"id": "conformance_tests/suite/test_param.py::test_case[x-list]", "why": "deselected"}]}
    report = kit.make_report(passing_rows(kit), completeness=partial)
    paths = write_reports(report, tmp_path)
    md = paths["summary.md"].read_text(encoding="utf-8")
    assert "# push_cache conformance: ◐ PARTIAL" in md and "## Partial run" in md
    assert "test_case[x-list]" in md and "--deselect: 1 test(s) deselected" in md
    html = paths["index.html"].read_text(encoding="utf-8")
    assert 'id="completeness" data-full="false"' in html and 'data-count="1"' in html
    assert 'data-why="deselected"' in html and 'data-partial="true"' in html
    props = [(p.get("name"), p.get("value")) for p in
             ET.parse(paths["junit.xml"]).getroot().find("testsuite").find("properties")]
    assert ("run.full", "false") in props and ("partial.reason", "--deselect: 1 test(s) deselected") in props
    assert ("left_out", "conformance_tests/suite/test_param.py::test_case[x-list] (deselected)") in props
    assert json.loads(paths["badge.json"].read_text()) == {"schemaVersion": 1, "label": "push_cache",
                                                          "message": "partial", "color": "lightgrey"}


def test_counters_in_every_format(kit, tmp_path):
    header = {**kit.HEADER, "run": {**kit.HEADER["run"], "push_calls": 3210, "distinct_layouts": 87}}
    from conformance_tests.report import build_report

    report = build_report(header, passing_rows(kit), kit.CLAUSES, {})
    validate_report(report)
    paths = write_reports(report, tmp_path)
    assert "push_cache calls: 3210, distinct layouts: 87" in paths["summary.md"].read_text(encoding="utf-8")
    html = paths["index.html"].read_text(encoding="utf-8")
    assert 'id="push-calls" data-count="3210"' in html and 'id="distinct-layouts" data-count="87"' in html
    props = [(p.get("name"), p.get("value")) for p in
             ET.parse(paths["junit.xml"]).getroot().find("testsuite").find("properties")]
    assert ("push_calls", "3210") in props and ("distinct_layouts", "87") in props


def test_a_report_without_the_newer_fields_still_reads_and_renders(passing_report, tmp_path):
    old = json.loads(json.dumps(passing_report))
    for key in ("completeness",):
        old.pop(key)
    for key in ("kind", "partial", "no_passing", "waived_must_tests", "reasons"):
        old["verdict"].pop(key)
    for key in ("path", "sha256", "strict", "entries", "expired", "waived"):
        old["expectations"].pop(key)
    old["verdict"]["label"] = "CERTIFIED (DECLARED CAPABILITIES)"
    validate_report(old)
    paths = write_reports(old, tmp_path)
    assert json.loads(paths["badge.json"].read_text())["color"] == "yellowgreen"
    assert "CERTIFIED (DECLARED CAPABILITIES)" in paths["index.html"].read_text(encoding="utf-8")

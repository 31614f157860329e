"""JUnit, Markdown, HTML and badge, derived from the JSON alone."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from conformance_tests.report import load_report, render_derived, write_reports
from conformance_tests.report.model import TEST_OUTCOMES


@pytest.fixture(params=["every_report", "empty_report", "passing_report"])
def report(request):
    return request.getfixturevalue(request.param)


def _junit(report, tmp_path):
    paths = write_reports(report, tmp_path)
    return ET.parse(paths["junit.xml"]).getroot()


def test_junit_counts_match(report, tmp_path):
    root = _junit(report, tmp_path)
    s = report["summary"]
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == s["tests"] == int(suite.get("tests")) == int(root.get("tests"))
    # a flaky must or may test is a failure (it blocks); a should-level one is skipped, as an incompatibility is
    flaky_blocking = sum(1 for t in report["tests"] if t["outcome"] == "flaky" and t["level"] != "should")
    flaky_should = s["flaky"] - flaky_blocking
    assert len(suite.findall("testcase/failure")) == s["failed"] + flaky_blocking == int(suite.get("failures"))
    assert len(suite.findall("testcase/error")) == s["error"] == int(suite.get("errors"))
    skipped = s["skipped"] + s["not_supported"] + s["xfailed"] + s["incompatible"] + flaky_should
    assert len(suite.findall("testcase/skipped")) == skipped == int(suite.get("skipped"))
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["verdict"] == report["verdict"]["label"]
    assert props["spec.version"] == "9.0.0"


def test_junit_testcases_carry_outcome_and_repro(every_report, tmp_path):
    suite = _junit(every_report, tmp_path).find("testsuite")
    outcomes = [
        {p.get("name"): p.get("value") for p in case.find("properties")}["outcome"]
        for case in suite.iter("testcase")
    ]
    assert outcomes == [t["outcome"] for t in every_report["tests"]]
    failure = suite.find("testcase/failure")
    assert "cm.push_cache(dst_key, src_cache, src_batch_index=1.0)" in failure.text
    assert failure.get("message").startswith("push_cache(src_batch_index=1.0)")
    assert suite.find("testcase/skipped[@type='incompatible']") is not None
    first = suite.find("testcase")
    assert first.get("classname") == "conformance_tests.suite.test_param"
    assert first.get("name") == "test_case[push_cache.param.src_batch_index.type-int]"


def test_markdown_counts_and_failures(every_report, tmp_path):
    text = write_reports(every_report, tmp_path)["summary.md"].read_text(encoding="utf-8")
    assert "NOT CERTIFIED" in text
    s = every_report["summary"]
    header = "| tests | " + " | ".join(TEST_OUTCOMES) + " |"
    assert header in text
    assert "| " + " | ".join(str(s[k]) for k in ("tests", *TEST_OUTCOMES)) + " |" in text
    for cid in every_report["verdict"]["blocking"]:
        assert f"`{cid}`" in text
    assert "```python\nfrom llm_datadist import CacheKeyByIdAndIndex\ncm.push_cache(" in text
    assert "## Failures (3)" in text and "## Incompatibilities (1)" in text
    assert "TypeError | ValueError" in text  # a message is a fenced block: its pipes stay as they are
    assert "guard bytes &lt;stay&gt; intact" in text  # a title's HTML is escaped
    assert "50.0%" in text


def test_markdown_of_passing_run(passing_report, tmp_path):
    text = write_reports(passing_report, tmp_path)["summary.md"].read_text(encoding="utf-8")
    assert "CERTIFIED" in text and "NOT CERTIFIED" not in text
    assert "## Failures" not in text and "None." in text


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.by_id: dict[str, dict[str, str | None]] = {}
        self.text_of: dict[str, str] = {}
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._open: list[str | None] = []
        self.pre: list[tuple[str | None, str]] = []
        self._pre: list[str] | None = None
        self._pre_class: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.by_id[a["id"]] = a
            self.text_of[a["id"]] = ""
        self._open.append(a.get("id"))
        if tag == "pre":
            self._pre, self._pre_class = [], a.get("class")

    def handle_endtag(self, tag):
        if self._open:
            self._open.pop()
        if tag == "pre" and self._pre is not None:
            self.pre.append((self._pre_class, "".join(self._pre)))
            self._pre = None

    def handle_data(self, data):
        for ident in self._open:
            if ident:
                self.text_of[ident] += data
        if self._pre is not None:
            self._pre.append(data)


def _html(report, tmp_path):
    text = write_reports(report, tmp_path)["index.html"].read_text(encoding="utf-8")
    parser = _Collect()
    parser.feed(text)
    return text, parser


def test_html_counts(report, tmp_path):
    _, page = _html(report, tmp_path)
    s = report["summary"]
    for key in ("tests", *TEST_OUTCOMES):
        assert page.by_id[f"count-{key}"]["data-count"] == str(s[key])
        assert page.text_of[f"count-{key}"].strip() == str(s[key])
    assert page.by_id["count-blocking"]["data-count"] == str(len(report["verdict"]["blocking"]))
    assert page.text_of["verdict"].strip() == report["verdict"]["label"]
    for key, value in report["clause_summary"].items():
        if key not in ("clauses", "covered"):
            assert page.by_id[f"clause-count-{key}"]["data-count"] == str(value)


def test_html_matrix_failures_and_filter(every_report, tmp_path):
    text, page = _html(every_report, tmp_path)
    rows = [a for tag, a in page.tags if "clause-row" in (a.get("class") or "")]
    family_order = list(dict.fromkeys(c["family"] for c in every_report["clauses"]))
    grouped = sorted(every_report["clauses"], key=lambda c: family_order.index(c["family"]))
    assert [r["data-clause"] for r in rows] == [c["id"] for c in grouped]
    assert {r["data-clause"]: r["data-outcome"] for r in rows} == {
        c["id"]: c["outcome"] for c in every_report["clauses"]
    }
    families = [a["data-family"] for tag, a in page.tags if tag == "tbody" and "data-family" in a]
    assert families == list(dict.fromkeys(c["family"] for c in every_report["clauses"]))
    repros = [body for cls, body in page.pre if cls == "repro"]
    assert any(body.startswith("from llm_datadist import CacheKeyByIdAndIndex") for body in repros)
    assert len([a for tag, a in page.tags if tag == "article"]) == 5  # 2 failed, 1 error, 1 incompatible, 1 flaky
    boxes = [a["value"] for tag, a in page.tags if tag == "input" and "filter-box" in (a.get("class") or "")]
    assert set(boxes) >= set(TEST_OUTCOMES)
    assert "location.hash" in text
    assert "&lt;ValueError&gt;" in text  # titles are escaped


def test_html_is_self_contained(report, tmp_path):
    text, page = _html(report, tmp_path)
    for tag, attrs in page.tags:
        assert tag != "link", "no external stylesheets"
        if tag in ("script", "img", "iframe"):
            assert not attrs.get("src"), f"<{tag} src=...> pulls an asset"
    assert not re.search(r"(src|href)\s*=\s*\"(https?:)?//", text)
    assert "@import" not in text and "url(" not in text


def test_badge(every_report, passing_report, tmp_path):
    bad = json.loads(write_reports(every_report, tmp_path / "a")["badge.json"].read_text())
    good = json.loads(write_reports(passing_report, tmp_path / "b")["badge.json"].read_text())
    assert bad == {"schemaVersion": 1, "label": "push_cache", "message": "not certified: 1 flaky test", "color": "red"}
    assert good == {"schemaVersion": 1, "label": "push_cache", "message": "certified", "color": "brightgreen"}


def test_formats_derive_from_json_alone(every_report, tmp_path):
    """From the JSON and where it lies (the re-run command names that report.json)."""
    first = write_reports(every_report, tmp_path / "first")
    again = render_derived(load_report(first["report.json"]), tmp_path / "again", first["report.json"])
    for name, path in again.items():
        assert path.read_bytes() == first[name].read_bytes(), name

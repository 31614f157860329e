"""index.html in a real headless browser: counts on screen and the outcome filter (URL hash #filter=...).

Needs Chromium (Debian package `chromium`); skipped, with the reason, when it is not installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conformance_tests.report import write_reports
from conformance_tests.report.model import TEST_OUTCOMES


def _chromium() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


CHROMIUM = _chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no headless browser: /usr/bin/chromium not found (apt-get install chromium)"
)


def dump_dom(page: Path, fragment: str, profile: Path) -> str:
    url = page.resolve().as_uri() + fragment
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--dump-dom",
        url,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "</html>" in proc.stdout, (
        f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}"
    )
    return proc.stdout


class Dom(HTMLParser):
    """Attributes and text of the elements with an id, and every row with class `filterable`."""

    def __init__(self, text: str):
        super().__init__()
        self.text: dict[str, str] = {}
        self.attrs: dict[str, dict[str, str | None]] = {}
        self.rows: list[dict[str, str | None]] = []
        self.family_bodies: list[dict[str, str | None]] = []
        self._stack: list[str | None] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.attrs[a["id"]] = a
            self.text[a["id"]] = ""
        if "filterable" in (a.get("class") or "").split():
            self.rows.append({"tag": tag, **a})
        if tag == "tbody" and "data-family" in a:
            self.family_bodies.append(a)
        if tag not in ("input", "meta", "br", "img", "hr", "link"):
            self._stack.append(a.get("id"))

    def handle_endtag(self, tag):
        if tag not in ("input", "meta", "br", "img", "hr", "link") and self._stack:
            self._stack.pop()

    def handle_data(self, data):
        for ident in self._stack:
            if ident:
                self.text[ident] += data

    def visible(self, kind: str) -> list[dict[str, str | None]]:
        return [r for r in self.rows if kind in (r.get("class") or "").split() and "hidden" not in r]


def _render(report, tmp_path) -> Path:
    return write_reports(report, tmp_path / "out")["index.html"]


def test_counts_on_screen_match_the_json(every_report, tmp_path):
    dom = Dom(dump_dom(_render(every_report, tmp_path), "", tmp_path / "profile"))
    summary = every_report["summary"]
    for key in ("tests", *TEST_OUTCOMES):
        assert dom.text[f"count-{key}"].strip() == str(summary[key]), key
    assert dom.text["verdict"].strip() == every_report["verdict"]["label"]
    assert dom.text["filter-state"].strip() == "all"
    assert dom.text["visible-tests"].strip() == str(summary["tests"])
    assert dom.text["visible-clauses"].strip() == str(len(every_report["clauses"]))
    assert len(dom.visible("test-row")) == summary["tests"]


@pytest.mark.parametrize("selected", [["failed"], ["failed", "error"], ["passed"], ["untested"]])
def test_filter_from_url_hash(every_report, tmp_path, selected):
    fragment = "#filter=" + ",".join(selected)
    dom = Dom(dump_dom(_render(every_report, tmp_path), fragment, tmp_path / "profile"))
    assert dom.text["filter-state"].strip() == ",".join(selected)
    tests = [t["id"] for t in every_report["tests"] if t["outcome"] in selected]
    clauses = [c["id"] for c in every_report["clauses"] if c["outcome"] in selected]
    assert [r["data-test"] for r in dom.visible("test-row")] == tests
    assert sorted(r["data-clause"] for r in dom.visible("clause-row")) == sorted(clauses)
    assert dom.text["visible-tests"].strip() == str(len(tests))
    assert dom.text["visible-clauses"].strip() == str(len(clauses))
    hidden = {r["data-outcome"] for r in dom.rows if "hidden" in r}
    assert not hidden & set(selected)
    shown_families = {b["data-family"] for b in dom.family_bodies if "hidden" not in b}
    assert shown_families == {c["family"] for c in every_report["clauses"] if c["outcome"] in selected}
    # the counts stay the totals of the whole run whatever the filter
    assert dom.text["count-failed"].strip() == str(every_report["summary"]["failed"])

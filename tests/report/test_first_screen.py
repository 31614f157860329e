"""A failing report leads with its cause (issue 33). Two failing runs opened in Chromium at 1280 x 900 (Playwright):

- the broken adapter of tests/kit/fakes/wrong_entry_adapter.py (pushes with src_batch_index == 1 land in the
  wrong destination entry): the first screen of its index.html shows the verdict, the likely cause in one sentence
  (its clauses folded into one line, not a wall of links), the failing call with its byte diff and the command that
  re-runs only the failing tests, and the page does not scroll sideways;
- a backend that ignores src_batch_index, certified on the data clauses: the cause the run computed
  ("src_batch_index > 0") and the first failure message on the first screen; its screenshot is kept in
  reports/screenshots/ as the test's artefact.

Needs Playwright (``tox -e browser`` installs it) and Debian's Chromium; skipped, with the reason, without them.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT
from tests.helpers.certify import certify

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed here (tox -e browser)")
CHROMIUM = next((c for c in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"))
                 if c and os.access(c, os.X_OK)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (apt-get install chromium)")

SCREEN = {"width": 1280, "height": 900}
ARTEFACT = ROOT / "reports" / "screenshots" / "failing-report-first-screen.png"
RERUN = "--failed-from reports/fake-wrong-entry/report.json"


@pytest.fixture(scope="module")
def failing_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("failing")
    proc = certify("--backend", "mutants.catalog:ignores_src_batch_index", "--clauses", "push_cache.data.*",
                   "--report-dir", str(out), "-q", "--hypothesis-profile", "quick")
    assert proc.returncode == 1, proc.stdout[-2000:]
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                                      "--disable-background-networking"])
        try:
            yield chromium
        finally:
            chromium.close()


def _open(browser: Any, index: Path) -> Any:
    page = browser.new_page(viewport=SCREEN)
    page.goto(index.resolve().as_uri())
    return page


def _on_first_screen(page: Any, selector: str) -> Any:
    element = page.locator(selector).first
    box = element.bounding_box()
    assert box is not None and box["y"] + box["height"] <= SCREEN["height"], (selector, box)
    return element


def test_the_broken_adapter_s_first_screen_reads_verdict_cause_call_and_rerun(browser: Any,
                                                                               wrong_entry_run: dict[str, Any]) -> None:
    report = wrong_entry_run["report"]
    cause = report["likely_causes"][0]
    page = _open(browser, wrong_entry_run["folder"] / "index.html")
    try:
        assert "NOT CERTIFIED" in _on_first_screen(page, "#verdict").inner_text()
        said = _on_first_screen(page, "#first-cause")
        assert cause["statement"] in said.inner_text(), (said.inner_text(), cause["statement"])
        box = said.bounding_box()
        assert box["height"] <= 3 * 24, box  # the sentence and one folded line of clauses, not a wall of links
        assert "src_batch_index=1" in _on_first_screen(page, "#first-failure").inner_text()
        assert _on_first_screen(page, "#rerun-command").inner_text().strip().endswith(RERUN)
        wide = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert wide[0] <= wide[1], ("sideways scroll at 1280 px", wide)
        said.locator("summary").click()  # the clauses unfold on demand, each a link to its row
        links = said.locator("a").evaluate_all("els => els.map(e => e.textContent)")
        assert links == cause["clauses"], links
    finally:
        page.close()


def test_the_first_screen_shows_the_likely_cause_and_the_first_failure(browser: Any, failing_report: Path) -> None:
    report = json.loads((failing_report / "report.json").read_text(encoding="utf-8"))
    cause = report["likely_causes"][0]
    assert cause["predicate"] == "src_batch_index > 0", cause
    page = _open(browser, failing_report / "index.html")
    try:
        ARTEFACT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTEFACT))  # the first screen only
        assert "src_batch_index > 0" in _on_first_screen(page, "#first-cause").inner_text()
        assert "targeted slice" in _on_first_screen(page, "pre.first-message").inner_text()  # the byte diff
        wide = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert wide[0] <= wide[1], ("sideways scroll at 1280 px", wide)
    finally:
        page.close()
    assert ARTEFACT.stat().st_size > 10_000

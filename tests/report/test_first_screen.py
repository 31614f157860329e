"""A failing report leads with its cause: certified on the data clauses, a backend that ignores src_batch_index
fails 10 clauses; the first screen of its index.html (1280 x 800, Chromium driven by Playwright) shows the likely
cause the run computed ("src_batch_index > 0") and the first failure message with its byte diff. The screenshot is
kept in reports/screenshots/ as the test's artefact.

Needs Playwright (``tox -e browser`` installs it) and Debian's Chromium; skipped, with the reason, without them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.certify import certify

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed here (tox -e browser)")
CHROMIUM = next((c for c in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"))
                 if c and os.access(c, os.X_OK)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (apt-get install chromium)")

SCREEN = {"width": 1280, "height": 800}
ARTEFACT = ROOT / "reports" / "screenshots" / "failing-report-first-screen.png"


@pytest.fixture(scope="module")
def failing_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("failing")
    proc = certify("--backend", "mutants.catalog:ignores_src_batch_index", "--clauses", "push_cache.data.*",
                   "--report-dir", str(out), "-q")
    assert proc.returncode == 1, proc.stdout[-2000:]
    return out


def test_the_first_screen_shows_the_likely_cause_and_the_first_failure(failing_report: Path) -> None:
    report = json.loads((failing_report / "report.json").read_text(encoding="utf-8"))
    cause = report["likely_causes"][0]
    assert cause["predicate"] == "src_batch_index > 0", cause
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                                     "--disable-background-networking"])
        try:
            page = browser.new_page(viewport=SCREEN)
            page.goto((failing_report / "index.html").resolve().as_uri())
            ARTEFACT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTEFACT))  # the first screen only
            first_cause = page.locator("#likely-causes li.cause").first
            first_message = page.locator("pre.first-message").first
            for element in (first_cause, first_message):
                box = element.bounding_box()
                assert box is not None and box["y"] < SCREEN["height"], box
            assert "src_batch_index > 0" in first_cause.inner_text()
            assert "targeted slice" in first_message.inner_text()  # the byte diff names where the bytes are wrong
        finally:
            browser.close()
    assert ARTEFACT.stat().st_size > 10_000

"""The results site in a real browser: four backends certified by the kit's CLI (the reference, its vendor mode
``reference-vendor`` and two mutants) on the families that hold the vendor's departures and the mutants'
defects, the site built from their reports, and the site opened in Chromium driven by Playwright. The grid renders
with the four implementations, the vendor's row fails exactly the clauses whose report row records a deviation,
the filters hide and show what they say (state in the URL hash), every link of the index resolves to a file of
the site, and a screenshot of the grid is kept in reports/screenshots/site-grid.png as the test's artefact.

Needs Playwright (``tox -e browser`` installs it) and Debian's Chromium; skipped, with the reason, without them.
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from conformance_tests.report.site import build_site
from conformance_tests.report.site_model import OPEN_COLUMNS
from conformance_tests.spec import load_spec
from tests.helpers import ROOT
from tests.helpers.certify import certify

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed here (tox -e browser)")
CHROMIUM = next((c for c in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"))
                 if c and os.access(c, os.X_OK)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (apt-get install chromium)")

ARTEFACT = ROOT / "reports" / "screenshots" / "site-grid.png"
SCREEN = {"width": 1600, "height": 1000}
#: the families that hold every clause the vendor departs from and the two mutants' targets
CLAUSES = "push_cache.data.*,push_cache.restriction.*,push_cache.param.*,push_cache.safety.*,push_cache.timeout.*"
MUTANTS = ("ignores_src_batch_index", "always_dst_batch_zero")
#: the clauses of the packaged spec's newest release: one column each
SPEC = load_spec()
NEWEST = len(SPEC.for_release(SPEC.releases[-1]).clauses)
BACKENDS = {
    "reference": ("reference", 5),  # PARTIAL: a clean run of a selection
    "reference-vendor": ("reference-vendor", 1),
    **{f"mutant-{m}": (f"mutants.catalog:{m}", 1) for m in MUTANTS},
}
FAILED_RGB = "rgb(207, 34, 46)"  # --failed


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("site-browser")

    def run(item: tuple[str, tuple[str, int]]) -> Path:
        name, (backend, code) = item
        folder = base / "reports" / name
        # the quick profile: what the grid shows is which clauses fail, which the quick profile's examples find
        # as the certify profile's do (tests/nodehost/test_vendor_mode_host.py: the vendor's deviations, exactly)
        proc = certify("--backend", backend, "--clauses", CLAUSES, "--report-dir", str(folder), "-q",
                       "--hypothesis-profile", "quick", timeout=600)
        assert proc.returncode == code, f"{name}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        return folder / "report.json"

    with ThreadPoolExecutor(max_workers=2) as pool:  # two at a time: the machine has two cores
        paths = list(pool.map(run, BACKENDS.items()))
    out = base / "site"
    files = build_site(paths, out)
    reports = {name: json.loads(path.read_text(encoding="utf-8")) for name, path in zip(BACKENDS, paths,
                                                                                         strict=True)}
    return {"out": out, "files": files, "reports": reports}


@pytest.fixture(scope="module")
def browser() -> Any:
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                                      "--disable-background-networking"])
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Any:
    context = browser.new_context(viewport=SCREEN)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield tab
    finally:
        context.close()
    assert errors == [], errors  # the inline script ran without an error


def _index(site: dict[str, Any]) -> str:
    return (site["out"] / "index.html").resolve().as_uri()


def _cells(page: Any, impl: str) -> dict[str, dict[str, str]]:
    """The grid cells of an implementation's row: clause ID -> its outcome, deviation mark and background."""
    return page.eval_on_selector_all(
        f'table.grid tr.impl-row[data-impl="{impl}"] td.cell',
        """cells => Object.fromEntries(cells.map(td => [td.dataset.clause, {
               outcome: td.dataset.outcome, deviation: td.dataset.deviation, hidden: td.hidden,
               background: getComputedStyle(td).backgroundColor}]))""")


def _visible(page: Any, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "els => els.filter(e => e.offsetParent !== null)"
                                               ".map(e => e.dataset.impl || e.dataset.clause)")


def test_the_grid_renders_the_four_implementations_with_the_vendors_deviations(site: dict[str, Any],
                                                                                page: Any) -> None:
    from mutants.catalog import MUTANTS as CATALOG

    page.goto(_index(site))
    rows = page.locator("table.grid tr.impl-row")
    assert rows.count() == 4
    assert _visible(page, "table.grid tr.impl-row") == list(BACKENDS)
    for i in range(4):
        box = rows.nth(i).bounding_box()
        assert box is not None and box["height"] > 10 and box["width"] > 500, box
    columns = page.locator("table.grid th.clause-head").count()
    assert columns == len(site["reports"]["reference"]["clauses"]) == NEWEST
    # the vendor fails exactly the selected clauses whose report row records a deviation
    vendor = site["reports"]["reference-vendor"]
    deviating = {c["id"] for c in vendor["clauses"] if c.get("deviation") and c["covered"]}
    recorded = {c.id for c in SPEC.for_release(SPEC.releases[-1]).clauses if c.deviation}
    assert deviating == recorded, deviating  # every departure the spec records lies in the selected families
    cells = _cells(page, "reference-vendor")
    assert len(cells) == columns
    failed = {cid for cid, cell in cells.items() if cell["outcome"] == "failed"}
    assert failed == deviating
    assert {cid for cid, cell in cells.items() if cell["deviation"] == "true"} == {
        c["id"] for c in vendor["clauses"] if c.get("deviation")}
    assert {cells[cid]["background"] for cid in failed} == {FAILED_RGB}  # drawn in the failed colour
    # the reference fails nothing; each mutant fails the clauses it targets
    assert not [cid for cid, cell in _cells(page, "reference").items() if cell["outcome"] in ("failed", "incompatible")]
    for m in CATALOG:
        if m.name in MUTANTS:
            mine = _cells(page, f"mutant-{m.name}")
            assert set(m.targets) <= {cid for cid, cell in mine.items() if cell["outcome"] == "failed"}, m.name
    # the screenshot: the whole grid at a width that holds it
    width = page.evaluate("document.querySelector('table.grid').scrollWidth")
    page.set_viewport_size({"width": min(int(width) + 80, 4000), "height": SCREEN["height"]})
    ARTEFACT.parent.mkdir(parents=True, exist_ok=True)
    page.locator("#grid-section").screenshot(path=str(ARTEFACT))
    assert ARTEFACT.stat().st_size > 10_000


def test_the_filters_hide_and_show_rows_and_columns_and_keep_their_state_in_the_url(site: dict[str, Any],
                                                                                   page: Any) -> None:
    page.goto(_index(site))
    all_columns = page.locator("table.grid th.clause-head").count()
    # outcome "failed": the reference (nothing failed) is hidden; only the clauses someone failed stay
    page.locator('#filter input[data-group="outcome"][value="failed"]').check()
    assert urlsplit(page.url).fragment == "outcome=failed"
    assert _visible(page, "table.grid tr.impl-row") == ["reference-vendor", *(f"mutant-{m}" for m in MUTANTS)]
    failing = {c["id"] for r in site["reports"].values() for c in r["clauses"] if c["outcome"] == "failed"}
    assert set(_visible(page, "table.grid th.clause-head")) == failing
    assert page.locator("#visible-impls").inner_text() == "3"
    assert page.locator("#visible-clauses").inner_text() == str(len(failing))
    # and level "should" on top: no should clause failed (a should failure is "incompatible"): nothing left
    page.locator('#filter input[data-group="level"][value="should"]').check()
    assert urlsplit(page.url).fragment == "outcome=failed&level=should"
    assert _visible(page, "table.grid tr.impl-row") == [] and _visible(page, "table.grid th.clause-head") == []
    page.locator("#filter-clear").click()
    assert urlsplit(page.url).fragment == ""
    assert len(_visible(page, "table.grid tr.impl-row")) == 4
    # without a filter, the families open by default show their columns, the others their summary column
    open_families = page.eval_on_selector_all('table.grid th.family-head[data-open="true"]', "els => els.map(e => "
                                              "e.dataset.family)")
    assert len(_visible(page, "table.grid th.clause-head")) == sum(
        1 for c in site["reports"]["reference"]["clauses"] if c["family"] in open_families) < all_columns
    # family "timeout": only its columns, every implementation still shown
    page.locator('#filter input[data-group="family"][value="timeout"]').check()
    timeout = [c["id"] for c in site["reports"]["reference"]["clauses"] if c["family"] == "timeout"]
    assert _visible(page, "table.grid th.clause-head") == timeout
    assert len(_visible(page, "table.grid tr.impl-row")) == 4
    assert page.eval_on_selector_all(
        "table.grid th.family-head", "els => els.filter(e => !e.hidden).map(e => [e.dataset.family, e.colSpan])"
    ) == [["timeout", len(timeout)]]
    # the state comes back from the URL: the vendor's departures in the safety family
    page.goto(_index(site) + "#outcome=failed&family=safety")
    page.reload()
    assert page.locator('#filter input[data-group="outcome"][value="failed"]').is_checked()
    assert page.locator('#filter input[data-group="family"][value="safety"]').is_checked()
    shown = set(_visible(page, "table.grid th.clause-head"))
    assert shown and all(cid.startswith("push_cache.safety.") for cid in shown)
    vendor = site["reports"]["reference-vendor"]
    assert {c["id"] for c in vendor["clauses"] if c["family"] == "safety" and c.get("deviation")} <= shown
    dimmed = page.eval_on_selector_all("table.grid td.cell.dim", "els => els.filter(e => !e.hidden).length")
    assert dimmed > 0  # the cells of the shown columns that did not fail are dimmed, not hidden


def test_every_link_on_the_index_resolves_to_a_file_of_the_site(site: dict[str, Any], page: Any) -> None:
    page.goto(_index(site))
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    root = site["out"].resolve()
    assert len(hrefs) > 4 * NEWEST  # one link per cell, plus the names, the clauses, the runs
    for href in set(hrefs):
        parts = urlsplit(href)
        assert parts.scheme == "file", href
        target = Path(unquote(parts.path))
        assert target.is_file() and target.resolve().is_relative_to(root), href
    assert page.locator("img, script[src], link[href]").count() == 0  # no external assets


def test_the_links_lead_to_the_implementation_and_clause_pages(site: dict[str, Any], page: Any) -> None:
    page.goto(_index(site))
    page.locator('table.grid th.impl a', has_text="reference-vendor").click()
    assert page.url.endswith("/impl/reference-vendor.html")
    assert "not certified" in page.locator("#badge").inner_text()
    assert page.locator("#history tr.run-row").count() == 1
    assert page.locator("#chart svg circle[data-series=passed]").count() == 1
    page.locator("#failing a", has_text="push_cache.param.src_cache.not_local").click()
    assert page.url.endswith("/clause/push_cache.param.src_cache.not_local.html")
    clause = SPEC.clause("push_cache.param.src_cache.not_local")
    assert clause.source.en and clause.source.zh
    assert page.locator("#source-en").inner_text() == " ".join((clause.source.en or "").split())
    assert page.locator("#source-zh").inner_text() == " ".join((clause.source.zh or "").split())
    outcomes = page.eval_on_selector_all("#outcomes tr.outcome-row", "rs => rs.map(r => [r.dataset.impl, "
                                                                       "r.dataset.outcome])")
    assert dict(outcomes)["reference-vendor"] == "failed" and dict(outcomes)["reference"] == "passed"
    page.go_back()
    page.go_back()
    page.locator('table.grid tr.impl-row[data-impl="reference-vendor"] td.cell[data-outcome=failed]:not([hidden]) a'
                 ).first.click()
    assert "/runs/reference-vendor/1/index.html#clause-" in page.url  # the run's own page, at the clause
    assert page.locator("#verdict").inner_text() == site["reports"]["reference-vendor"]["verdict"]["label"]


# ------------------------------------------------------------------- every clause of the spec, at 1280 px

NARROW = {"width": 1280, "height": 900}
#: the families the hand-made vendor fails clauses of (the first two must clauses of each)
BROKEN = ("restriction", "data", "remote")


@pytest.fixture
def whole_spec_site(kit: Any, tmp_path: Path) -> dict[str, Any]:
    """Two implementations over every clause of the newest release, one failing two clauses in each of three
    families; the vendor's report folder holds a planted page with a script, and a link to a page outside it."""
    clauses = [{"id": c.id, "level": c.level.value, "family": c.family, "title": c.title}
               for c in SPEC.for_release(SPEC.releases[-1]).clauses]
    broken = {cid for fam in BROKEN for cid in [c["id"] for c in clauses if c["family"] == fam and c["level"] == "must"][:2]}
    paths = []
    for name, failing in (("reference", set()), ("vendor", broken)):
        rows = [kit.row(c["id"], "ok", "failed" if c["id"] in failing else "passed", c["level"]) for c in clauses]
        report = kit.make_report(rows, clauses)
        report["backend"]["name"] = name
        folder = tmp_path / "in" / name
        folder.mkdir(parents=True)
        (folder / "report.json").write_text(json.dumps(report), encoding="utf-8")
        paths.append(folder / "report.json")
    (tmp_path / "outside.html").write_text("<script>window.linked = 'ran';</script>", encoding="utf-8")
    (tmp_path / "in" / "vendor" / "index.html").write_text("<script>window.planted = 'ran';</script>",
                                                             encoding="utf-8")
    (tmp_path / "in" / "reference" / "index.html").symlink_to(tmp_path / "outside.html")
    out = tmp_path / "site"
    build_site(paths, out)
    return {"out": out, "clauses": clauses, "broken": broken}


def test_the_grid_of_every_clause_fits_1280_px_with_the_failing_families_first_and_open(
        whole_spec_site: dict[str, Any], browser: Any) -> None:
    context = browser.new_context(viewport=NARROW)
    page = context.new_page()
    try:
        page.goto((whole_spec_site["out"] / "index.html").resolve().as_uri())
        assert page.locator("table.grid th.clause-head").count() == len(whole_spec_site["clauses"]) == NEWEST
        wide = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth, "
                             "document.querySelector('.grid-wrap').scrollWidth, "
                             "document.querySelector('.grid-wrap').clientWidth]")
        assert wide[0] <= wide[1] and wide[2] <= wide[3], ("sideways scroll at 1280 px", wide)
        heads = page.eval_on_selector_all("table.grid th.family-head", "els => els.map(e => [e.dataset.family, "
                                                                  "e.dataset.open])")
        families = [f for f, _ in heads]
        assert set(families[:3]) == set(BROKEN), heads  # the failing families first
        opened = [f for f, o in heads if o == "true"]
        size = {f: sum(1 for c in whole_spec_site["clauses"] if c["family"] == f) for f in BROKEN}
        # the smallest failing families open, as many as fit OPEN_COLUMNS; the others fold to their summary column
        budget, fit = OPEN_COLUMNS, set()
        for f in sorted(families[:3], key=lambda f: size[f]):
            if size[f] <= budget:
                fit.add(f)
                budget -= size[f]
        assert opened == [f for f in families[:3] if f in fit] and opened, (heads, size, OPEN_COLUMNS)
        family_of = {c["id"]: c["family"] for c in whole_spec_site["clauses"]}
        assert set(_visible(page, 'table.grid tr.impl-row[data-impl="vendor"] td.cell[data-outcome=failed]')) \
            == {cid for cid in whole_spec_site["broken"] if family_of[cid] in opened}
        folded = [f for f in BROKEN if f not in opened]
        summary = page.eval_on_selector_all('table.grid tr.impl-row[data-impl="vendor"] td.family-cell',
                                            "els => els.filter(e => !e.hidden).map(e => [e.dataset.family, "
                                            "e.dataset.worst, e.textContent.trim()])")
        assert [s for s in summary if s[0] in folded] == [[f, "failed", "✗2"] for f in folded], summary
        # a folded family opens on a click (its columns show, the URL keeps it) and folds again
        closed = next(f for f, o in heads if o == "false")
        page.locator(f'table.grid th.family-head[data-family="{closed}"] button').click()
        mine = [c["id"] for c in whole_spec_site["clauses"] if c["family"] == closed]
        assert [c for c in _visible(page, "table.grid th.clause-head") if c in mine] == mine
        assert urlsplit(page.url).fragment == f"open={closed}"
        page.locator(f'table.grid th.family-head[data-family="{closed}"] button').click()
        assert not [c for c in _visible(page, "table.grid th.clause-head") if c in mine]
        assert urlsplit(page.url).fragment == ""
    finally:
        context.close()


def test_no_planted_or_linked_script_is_in_the_sites_dom(whole_spec_site: dict[str, Any], browser: Any) -> None:
    context = browser.new_context(viewport=NARROW)
    page = context.new_page()
    try:
        for run in ("vendor", "reference"):
            page.goto((whole_spec_site["out"] / "runs" / run / "1" / "index.html").resolve().as_uri())
            ran = page.evaluate("[typeof window.planted, typeof window.linked]")
            assert ran == ["undefined", "undefined"], (run, ran)
            scripts = page.eval_on_selector_all("script", "els => els.map(e => e.textContent)")
            assert not [t for t in scripts if "window.planted" in t or "window.linked" in t], run
            assert page.locator("#verdict").count() == 1  # the kit's own page, rendered from the report
    finally:
        context.close()


# ------------------------------------------------------------------- reports of two operations


@pytest.fixture
def family_site(kit: Any, tmp_path: Path) -> Path:
    """The reference's push_cache report (all passing) and its pull_cache report (one failing clause), and a
    vendor's pull_cache report: two grids."""
    from tests.report.test_site import all_passing, report_of, write
    from tests.report.test_site_operations import PULL_FAILING, pull_report

    push = report_of(kit, "reference", "2025-02-01T10:00:00+00:00", all_passing(kit, kit.CLAUSES))
    paths = [write(tmp_path / "in" / "push", push),
             write(tmp_path / "in" / "pull", pull_report(kit, "reference", "2025-01-01T10:00:00+00:00",
                                                          (PULL_FAILING,))),
             write(tmp_path / "in" / "vendor", pull_report(kit, "vendor", "2025-01-15T10:00:00+00:00"))]
    build_site(paths, tmp_path / "site")
    return tmp_path / "site"


def test_the_filters_pick_operations_and_a_family_opens_in_its_own_grid(family_site: Path, page: Any) -> None:
    page.goto((family_site / "index.html").resolve().as_uri())
    assert page.eval_on_selector_all("table.grid", "ts => ts.map(t => t.dataset.operation)") == [
        "push_cache", "pull_cache"]
    assert page.locator("#visible-impls").inner_text() == "3"
    # the operation filter shows one grid
    page.locator('#filter input[data-group="operation"][value="pull_cache"]').check()
    assert urlsplit(page.url).fragment == "operation=pull_cache"
    assert not page.locator("#op-push_cache").is_visible() and page.locator("#op-pull_cache").is_visible()
    assert page.locator("#visible-impls").inner_text() == "2"
    page.locator("#filter-clear").click()
    # outcome "failed": the reference's pull_cache row alone, in every grid
    page.locator('#filter input[data-group="outcome"][value="failed"]').check()
    shown = page.eval_on_selector_all("table.grid tr.impl-row", "rs => rs.filter(r => r.offsetParent !== null)"
                                                                ".map(r => [r.dataset.impl, r.dataset.operation])")
    assert shown == [["reference", "pull_cache"]]
    page.locator("#filter-clear").click()
    # a family folded in both grids opens in the one clicked: the URL names it with its operation
    grid = 'table.grid[data-operation="pull_cache"]'
    page.locator(f'{grid} th.family-head[data-family="param"] button').click()
    assert urlsplit(page.url).fragment == "open=pull_cache.param"
    assert _visible(page, f'{grid} th.clause-head[data-family="param"]')
    assert not _visible(page, 'table.grid[data-operation="push_cache"] th.clause-head[data-family="param"]')
    page.reload()  # and comes back from the URL
    assert _visible(page, f'{grid} th.clause-head[data-family="param"]')

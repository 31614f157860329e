"""The results site over reports of several operations of the transfer family: an implementation is a (backend,
operation) pair, so a backend's push_cache and pull_cache reports are two implementations with a history each
(neither hides the other as its newer run), the index has one grid per operation with that operation's clauses
described by its packaged spec, and the impl, badge, clause and run files, the filters and site.json say which
operation each is of. A site of push_cache reports alone keeps the shape it had before the family."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from conformance_tests.report.badge import to_badge
from conformance_tests.report.site import build_site, main
from conformance_tests.spec import load_spec, operation_spec_path
from tests.report.test_site import all_passing, page, report_of, write

PULL = load_spec(operation_spec_path("pull_cache"))
#: a few pull_cache clauses of three families, each as a report lists it (a title of its own: the grid must take
#: the spec's), and the one the hand-made pull fails
PULL_CLAUSES = [{"id": c.id, "level": c.level.value, "family": c.family, "title": f"report's title of {c.id}"}
                for fam in ("signature", "param", "remote") for c in [c for c in PULL.clauses if c.family == fam][:3]]
PULL_FAILING = next(c["id"] for c in PULL_CLAUSES if c["family"] == "remote" and c["level"] == "must")


def pull_report(kit: ModuleType, name: str, started: str, failing: tuple[str, ...] = ()) -> dict[str, Any]:
    report = report_of(kit, name, started, all_passing(kit, PULL_CLAUSES, failing), PULL_CLAUSES)
    report["spec"].update(operation="pull_cache", path="spec/pull_cache.yaml")
    return report


@pytest.fixture
def family_site(kit: ModuleType, tmp_path: Path) -> dict[str, Any]:
    """The reference's push_cache report (the newest of its runs) and its pull_cache report, which fails one
    clause, and a vendor's pull_cache report; the pull is named first on the command line."""
    push = report_of(kit, "reference", "2025-02-01T10:00:00+00:00", all_passing(kit, kit.CLAUSES))
    pull = pull_report(kit, "reference", "2025-01-01T10:00:00+00:00", (PULL_FAILING,))
    vendor = pull_report(kit, "vendor", "2025-01-15T10:00:00+00:00")
    paths = [write(tmp_path / "in" / "pull", pull), write(tmp_path / "in" / "push", push),
             write(tmp_path / "in" / "vendor", vendor)]
    out = tmp_path / "site"
    return {"out": out, "files": build_site(paths, out), "paths": paths,
            "reports": {"push": push, "pull": pull, "vendor": vendor}}


def _grids(out: Path) -> dict[str, Any]:
    return {t.get("data-operation"): t for t in page(out / "index.html").all("table", "grid")}


def test_each_operation_has_a_grid_of_its_own_implementations_and_clauses(family_site: dict[str, Any]) -> None:
    grids = _grids(family_site["out"])
    assert list(grids) == ["push_cache", "pull_cache"]  # the family's order, whatever the command line's
    rows = {op: [r.get("data-impl") for r in g.all("tr", "impl-row")] for op, g in grids.items()}
    assert rows == {"push_cache": ["reference"], "pull_cache": ["reference", "vendor"]}
    reports = family_site["reports"]
    for op, name, report in (("push_cache", "reference", reports["push"]), ("pull_cache", "reference", reports["pull"]),
                             ("pull_cache", "vendor", reports["vendor"])):
        row = next(r for r in grids[op].all("tr", "impl-row") if r.get("data-impl") == name)
        assert row.get("data-operation") == op and row.get("data-verdict") == report["verdict"]["label"]
        cells = {c.get("data-clause"): c.get("data-outcome") for c in row.all("td", "cell")}
        assert cells == {c["id"]: c["outcome"] for c in report["clauses"]}, (op, name)  # its own run, not the other's
    # no grid mixes the operations' clauses
    for op, grid in grids.items():
        heads = [h.get("data-clause") or "" for h in grid.all("th", "clause-head")]
        assert heads and all(cid.startswith(f"{op}.") for cid in heads), (op, heads)
    reference_pull = next(r for r in grids["pull_cache"].all("tr", "impl-row") if r.get("data-impl") == "reference")
    assert [c.get("data-clause") for c in reference_pull.all("td", "cell") if c.get("data-outcome") == "failed"] == [
        PULL_FAILING]


def test_an_operations_columns_are_described_by_its_packaged_spec(family_site: dict[str, Any]) -> None:
    heads = _grids(family_site["out"])["pull_cache"].all("th", "clause-head")
    for head in heads:
        clause = PULL.clause(head.get("data-clause") or "")
        assert (head.get("data-family"), head.get("data-level")) == (clause.family, clause.level.value)
        assert clause.title in (head.get("title") or "") and "report's title" not in (head.get("title") or "")
        assert head.all("a")[0].text == clause.id.removeprefix(f"pull_cache.{clause.family}.")
    # the failing family first, then the spec's order of families and of clauses
    ids = [h.get("data-clause") for h in heads]
    assert ids[:3] == [c["id"] for c in PULL_CLAUSES if c["family"] == "remote"]


def test_each_backend_and_operation_has_its_page_badge_and_history(family_site: dict[str, Any]) -> None:
    out, reports = family_site["out"], family_site["reports"]
    for slug, op, report in (("reference", "push_cache", reports["push"]),
                             ("reference@pull_cache", "pull_cache", reports["pull"]),
                             ("vendor@pull_cache", "pull_cache", reports["vendor"])):
        impl = page(out / "impl" / f"{slug}.html")
        assert impl.by_id("impl-name").get("data-operation") == op
        assert impl.by_id("impl-operation").text == op
        assert [r.get("data-run") for r in impl.by_id("history").all("tr", "run-row")] == ["1"]
        assert impl.by_id("verdict").text == report["verdict"]["label"]
        badge = json.loads((out / "impl" / f"{slug}.badge.json").read_text(encoding="utf-8"))
        assert badge == {**to_badge(report), "label": op}
        assert json.loads((out / "runs" / slug / "1" / "report.json").read_text(encoding="utf-8")) == report
    pull = page(out / "impl" / "reference@pull_cache.html")
    assert [li.get("data-clause") for li in pull.all("li", "failing-clause")] == [PULL_FAILING]


def test_a_clause_page_is_its_operations_with_its_implementations_outcomes(family_site: dict[str, Any]) -> None:
    out = family_site["out"]
    clause = PULL.clause(PULL_FAILING)
    doc = page(out / "clause" / f"{PULL_FAILING}.html")
    assert doc.by_id("clause-operation").text == "pull_cache"
    assert doc.by_id("clause-title").text == clause.title
    assert "the pull_cache documentation" in doc.by_id("clause-source").text
    assert doc.by_id("source-zh").text == clause.source.zh
    rows = doc.by_id("outcomes").all("tr", "outcome-row")
    assert [(r.get("data-impl"), r.get("data-outcome")) for r in rows] == [("reference", "failed"),
                                                                          ("vendor", "passed")]
    push = page(out / "clause" / "push_cache.safety.guard_bytes.html")
    assert [r.get("data-impl") for r in push.by_id("outcomes").all("tr", "outcome-row")] == ["reference"]
    named = {c["id"] for r in family_site["reports"].values() for c in r["clauses"]}
    assert {p.name for p in (out / "clause").iterdir()} == {f"{cid}.html" for cid in named}


def test_the_filters_and_the_open_families_name_the_operations(family_site: dict[str, Any]) -> None:
    index = page(family_site["out"] / "index.html")
    boxes = index.by_id("filter").all("input", "filter-box")
    assert [b.get("value") for b in boxes if b.get("data-group") == "operation"] == ["push_cache", "pull_cache"]
    for op, grid in _grids(family_site["out"]).items():
        keys = {h.get("data-key") for h in grid.all("th", "family-head")}
        assert keys == {f"{op}.{h.get('data-family')}" for h in grid.all("th", "family-head")}
    assert [h.text.split()[0] for h in index.all("h2", "operation-head")] == ["push_cache", "pull_cache"]
    assert index.by_id("count-impls").get("data-count") == "3"
    assert index.by_id("count-operations").get("data-count") == "2"


def test_site_json_records_the_operations(family_site: dict[str, Any]) -> None:
    manifest = json.loads((family_site["out"] / "site.json").read_text(encoding="utf-8"))
    assert manifest["spec"] is None
    assert [(o["name"], o["spec"], o["implementations"]) for o in manifest["operations"]] == [
        ("push_cache", load_spec().version, ["impl/reference.html"]),
        ("pull_cache", PULL.version, ["impl/reference@pull_cache.html", "impl/vendor@pull_cache.html"])]
    assert [(i["name"], i["operation"], len(i["runs"])) for i in manifest["implementations"]] == [
        ("reference", "push_cache", 1), ("reference", "pull_cache", 1), ("vendor", "pull_cache", 1)]
    assert {c["operation"] for c in manifest["clauses"] if c["id"].startswith("pull_cache.")} == {"pull_cache"}


def test_every_link_of_a_family_site_resolves(family_site: dict[str, Any]) -> None:
    out = family_site["out"]
    for html in sorted(out.rglob("*.html")):
        for node in page(html).all():
            href = node.get("href")
            if href is None or not urlsplit(href).path:
                continue
            assert not urlsplit(href).scheme, (html, href)
            target = (html.parent / unquote(urlsplit(href).path)).resolve()
            assert target.is_file() and target.is_relative_to(out.resolve()), f"{html.relative_to(out)}: {href}"


def test_the_command_counts_the_operations(family_site: dict[str, Any], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli"
    assert main([*map(str, family_site["paths"]), "--out", str(out)]) == 0
    clauses = len({c["id"] for r in family_site["reports"].values() for c in r["clauses"]})
    assert capsys.readouterr().out.splitlines() == [
        f"site: 3 implementation(s) of 2 operations, 3 run(s), {clauses} clause page(s): {out / 'index.html'}"]


def test_a_site_of_one_operation_keeps_its_shape(kit: ModuleType, tmp_path: Path) -> None:
    """push_cache alone: no operation filter or headings, families named alone in the URL, pages as before."""
    out = tmp_path / "site"
    build_site([write(tmp_path / "in", report_of(kit, "solo", None, all_passing(kit, kit.CLAUSES)))], out)
    index = page(out / "index.html")
    assert not index.has_id("filter-operation") and not index.has_id("count-operations")
    assert index.all("h2", "operation-head") == []
    assert index.all("h1")[0].text == "push_cache conformance results"
    heads = index.all("th", "family-head")
    assert heads and all(h.get("data-key") == h.get("data-family") for h in heads)
    assert (out / "impl" / "solo.html").is_file() and (out / "runs" / "solo" / "1" / "report.json").is_file()
    manifest = json.loads((out / "site.json").read_text(encoding="utf-8"))
    assert manifest["spec"] == load_spec().version and [o["name"] for o in manifest["operations"]] == ["push_cache"]


def test_an_operation_without_a_packaged_spec_gets_a_grid_from_its_reports(kit: ModuleType, tmp_path: Path) -> None:
    """A report of an operation this kit does not specify: its own grid, its clauses described by its rows."""
    clauses = [kit.clause("push_later.param.x", "must"), kit.clause("push_later.data.y", "should")]
    report = report_of(kit, "ref", None, all_passing(kit, clauses), clauses)
    report["spec"]["operation"] = "push_later"
    out = tmp_path / "site"
    build_site([write(tmp_path / "a", report_of(kit, "ref", None, all_passing(kit, kit.CLAUSES))),
                write(tmp_path / "b", report)], out)
    grids = _grids(out)
    assert list(grids) == ["push_cache", "push_later"]
    assert [h.get("data-clause") for h in grids["push_later"].all("th", "clause-head")] == [
        "push_later.param.x", "push_later.data.y"]
    doc = page(out / "clause" / "push_later.param.x.html")
    assert "not in the packaged spec of push_later" in doc.by_id("not-in-spec").text
    assert (out / "impl" / "ref@push_later.html").is_file()

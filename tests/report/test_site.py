"""The results site (``site REPORT.json... --out DIR``), read as files: the grid (one row per implementation, one
cell per clause of its newest run, columns by family in the spec's order, levels, deviations), the history of an
implementation (ordered by ``run.started``, what changed as ``report diff`` says), the clause pages (the packaged
spec's English and Chinese sentence), safe file names, escaping, links that resolve, and bad inputs (one line,
exit 2). The browser test (test_site_browser.py) drives the same site in Chromium."""

from __future__ import annotations

import json
import os
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from conformance_tests.report.badge import to_badge
from conformance_tests.report.diff import diff_reports
from conformance_tests.report.folders import safe_name
from conformance_tests.report.htmlpage import to_html
from conformance_tests.report.rerun import shown_path
from conformance_tests.report.site import GENERATOR, build_site, main
from conformance_tests.spec import families, load_spec

# ------------------------------------------------------------------------------------------------ helpers

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def get(self, name: str) -> str | None:
        return self.attrs.get(name)

    @property
    def classes(self) -> list[str]:
        return (self.get("class") or "").split()

    def all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if ((tag is None or child.tag == tag) and (cls is None or cls in child.classes)
                        and all(child.get(k.replace("_", "-")) == v for k, v in attrs.items())):
                    found.append(child)
                found += child.all(tag, cls, **attrs)
        return found

    def by_id(self, id_: str) -> Node:
        found = [n for n in self.all() if n.get("id") == id_]
        assert len(found) == 1, f"{len(found)} elements with id {id_!r}"
        return found[0]

    def has_id(self, id_: str) -> bool:
        return any(n.get("id") == id_ for n in self.all())

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)


class Tree(HTMLParser):
    """A page as a tree of nodes (the tests read attributes and text, as a browser would show them)."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self._at = self.root
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self._at)
        self._at.children.append(node)
        if tag not in VOID:
            self._at = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._at.children.append(Node(tag, dict(attrs), self._at))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self._at
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self._at = node.parent

    def handle_data(self, data: str) -> None:
        self._at.children.append(data)


def page(path: Path) -> Node:
    return Tree(path.read_text(encoding="utf-8")).root


def report_of(kit: ModuleType, name: str, started: str | None, rows: list[dict[str, Any]],
              clauses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    report = kit.make_report(rows, clauses)
    report["backend"]["name"] = name
    report["run"]["started"] = started
    return report


def write(folder: Path, report: dict[str, Any], with_page: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "report.json"
    path.write_text(json.dumps(report, indent=1), encoding="utf-8")
    if with_page:
        (folder / "index.html").write_text(to_html(report), encoding="utf-8")
    return path


DEVIATING = ("push_cache.param.src_batch_index.type", "push_cache.safety.guard_bytes")


def with_deviations(kit: ModuleType) -> list[dict[str, Any]]:
    """The conftest's clauses, two of them with the vendor departure the spec would record."""
    return [{**c, "deviation": f"the vendor departs from {c['id']}"} if c["id"] in DEVIATING else dict(c)
            for c in kit.CLAUSES]


def all_passing(kit: ModuleType, clauses: list[dict[str, Any]], failing: tuple[str, ...] = ()) -> list[dict]:
    return [kit.row(c["id"], "ok", "failed" if c["id"] in failing else "passed", c["level"]) for c in clauses]


@pytest.fixture
def site(kit: ModuleType, tmp_path: Path) -> dict[str, Any]:
    """Two implementations: the reference (an older run with every outcome, a newer one that passes, given in
    the wrong order) and a vendor that fails exactly its two deviating clauses."""
    clauses = with_deviations(kit)
    ref_old = report_of(kit, "reference", "2025-01-01T10:00:00+00:00", kit.every_outcome_rows(), clauses)
    ref_new = report_of(kit, "reference", "2025-02-01T10:00:00+00:00", all_passing(kit, clauses), clauses)
    vendor = report_of(kit, "vendor", "2025-01-15T10:00:00+00:00", all_passing(kit, clauses, DEVIATING), clauses)
    paths = [write(tmp_path / "in" / "ref-new", ref_new, with_page=True),
             write(tmp_path / "in" / "vendor", vendor),
             write(tmp_path / "in" / "ref-old", ref_old, with_page=True)]
    out = tmp_path / "site"
    files = build_site(paths, out)
    return {"out": out, "files": files, "paths": paths, "clauses": clauses,
            "reports": {"ref_old": ref_old, "ref_new": ref_new, "vendor": vendor}}


# ------------------------------------------------------------------------------------------------ the grid


def test_the_grid_has_a_row_per_implementation_and_a_cell_per_clause_of_its_newest_run(site: dict[str, Any]) -> None:
    index = page(site["out"] / "index.html")
    rows = index.by_id("grid-push_cache").all("tr", "impl-row")
    assert [r.get("data-impl") for r in rows] == ["reference", "vendor"]  # first named first
    ids = [c["id"] for c in site["clauses"]]
    order = {f: i for i, f in enumerate(families())}
    failing = {cid.split(".")[1] for cid in DEVIATING}  # the vendor's newest run fails them
    family = {cid: cid.split(".")[1] for cid in ids}
    # the failing families first, then the spec's order of families, stable within a family
    expected = sorted(ids, key=lambda cid: (family[cid] not in failing, order[family[cid]]))
    heads = index.all("th", "clause-head")
    assert [h.get("data-clause") for h in heads] == expected
    level = {c["id"]: c["level"] for c in site["clauses"]}
    assert [h.get("data-level") for h in heads] == [level[cid] for cid in expected]
    assert [h.text for h in index.all("th", "level-head") if h.get("data-col")] == [level[cid] for cid in expected]
    groups = index.all("th", "family-head")
    assert [g.get("data-family") for g in groups] == list(dict.fromkeys(family[cid] for cid in expected))
    assert sum(int(g.get("data-span") or 0) for g in groups) == len(ids)
    # the failing families are open (a column per clause), the others folded to their summary column
    assert {g.get("data-family"): g.get("data-open") for g in groups} == {
        g.get("data-family"): "true" if g.get("data-family") in failing else "false" for g in groups}
    assert [int(g.get("colspan") or 0) for g in groups] == [
        int(g.get("data-span") or 0) if g.get("data-family") in failing else 1 for g in groups]
    newest = {"reference": site["reports"]["ref_new"], "vendor": site["reports"]["vendor"]}
    for tr in rows:
        cells = tr.all("td", "cell")
        assert [c.get("data-clause") for c in cells] == expected
        outcome = {c["id"]: c["outcome"] for c in newest[tr.get("data-impl")]["clauses"]}
        assert {c.get("data-clause"): c.get("data-outcome") for c in cells} == outcome
        assert {c.get("data-clause") for c in cells if c.get("data-deviation") == "true"} == set(DEVIATING)
        assert {c.get("data-clause") for c in cells if "dev" in c.classes} == set(DEVIATING)
    vendor = next(r for r in rows if r.get("data-impl") == "vendor")
    assert {c.get("data-clause") for c in vendor.all("td", "cell") if c.get("data-outcome") == "failed"} == set(
        DEVIATING)
    assert {h.get("data-clause") for h in heads if "has-deviation" in h.classes} == set(DEVIATING)
    assert index.by_id("count-deviations").get("data-count") == str(2 * len(DEVIATING))
    assert [r.get("data-verdict") for r in rows] == [site["reports"]["ref_new"]["verdict"]["label"],
                                                     site["reports"]["vendor"]["verdict"]["label"]]
    # the filters offer what the grid holds
    boxes = index.by_id("filter").all("input", "filter-box")
    by_group = {g: [b.get("value") for b in boxes if b.get("data-group") == g] for g in ("outcome", "level", "family")}
    assert by_group["outcome"] == ["failed", "passed"]
    assert by_group["level"] == ["must", "should", "may"]
    assert by_group["family"] == [g.get("data-family") for g in groups]


def test_a_cell_links_to_the_runs_own_page_at_the_clause(site: dict[str, Any]) -> None:
    index = page(site["out"] / "index.html")
    newest = {"reference": "runs/reference/2", "vendor": "runs/vendor/1"}
    for tr in index.all("tr", "impl-row"):
        for td in tr.all("td", "cell"):
            href = td.all("a")[0].get("href") or ""
            assert href == f"{newest[tr.get('data-impl') or '']}/index.html#clause-{td.get('data-clause')}", href


# ------------------------------------------------------------------------------------------------ history


def test_the_history_is_ordered_by_start_and_says_what_changed_as_report_diff_does(
        kit: ModuleType, tmp_path: Path) -> None:
    clauses = kit.CLAUSES
    r1 = report_of(kit, "impl", "2025-01-01T00:00:00+00:00", kit.every_outcome_rows())
    # 01:30 UTC on 1 January: after r1, though its text sorts before r1's
    r2 = report_of(kit, "impl", "2024-12-31T23:30:00-02:00", all_passing(kit, clauses))
    r3 = report_of(kit, "impl", "2025-01-02T00:00:00", all_passing(kit, clauses, ("push_cache.safety.guard_bytes",
                                                                                   "push_cache.data.bytes_equal")))
    paths = [write(tmp_path / name, r) for name, r in (("c", r3), ("a", r2), ("b", r1))]
    out = tmp_path / "site"
    build_site(paths, out)
    impl = page(out / "impl" / "impl.html")
    runs = impl.by_id("history").all("tr", "run-row")
    assert [r.get("data-run") for r in runs] == ["1", "2", "3"]
    assert [r.get("data-started") for r in runs] == [r1["run"]["started"], r2["run"]["started"],
                                                     r3["run"]["started"]]
    for tr, report in zip(runs, (r1, r2, r3), strict=True):
        for key in ("passed", "failed", "flaky", "incompatible"):
            assert tr.get(f"data-{key}") == str(report["summary"][key])
    assert runs[0].get("data-newly-failing") is None and "first run" in runs[0].text
    for tr, (before, after) in zip(runs[1:], ((r1, r2), (r2, r3)), strict=True):
        diff = diff_reports(before, after)
        assert tr.get("data-newly-failing") == str(len(diff["clauses"]["newly_failing"]))
        assert tr.get("data-fixed") == str(len(diff["clauses"]["fixed"]))
        assert tr.get("data-tests-newly-failing") == str(len(diff["tests"]["newly_failing"]))
        assert tr.get("data-tests-fixed") == str(len(diff["tests"]["fixed"]))
        assert tr.get("data-regression") == ("true" if diff["regression"] else "false")
        assert {li.get("data-clause") for li in tr.all("li", "newly-failing-clause")} == {
            c["id"] for c in diff["clauses"]["newly_failing"]}
        assert {li.get("data-clause") for li in tr.all("li", "fixed-clause")} == {
            c["id"] for c in diff["clauses"]["fixed"]}
    # something changed both ways: 5 clauses fixed from run 1 to 2 (failed, incompatible, failed, error and flaky
    # before: a flaky clause that passes is fixed), 2 newly failing from 2 to 3
    assert runs[1].get("data-fixed") == "5" and runs[1].get("data-newly-failing") == "0"
    assert runs[2].get("data-newly-failing") == "2" and runs[2].get("data-fixed") == "0"
    assert runs[2].get("data-regression") == "true" and "regression" in runs[2].classes
    # the chart: one point per run, oldest left, the passed tests of each
    passed = impl.by_id("chart").all("circle", None, data_series="passed")
    assert [p.get("data-run") for p in passed] == ["1", "2", "3"]
    assert [int(p.get("data-value") or -1) for p in passed] == [r["summary"]["passed"] for r in (r1, r2, r3)]
    xs = [float(p.get("cx") or 0) for p in passed]
    assert xs == sorted(xs) and len(set(xs)) == 3
    ys = [float(p.get("cy") or 0) for p in passed]
    assert ys[1] < ys[0]  # more passed tests draw higher
    # the grid shows the newest run, whatever the order on the command line
    index = page(out / "index.html")
    cells = index.all("td", "cell")
    assert {c.get("data-clause"): c.get("data-outcome") for c in cells} == {
        c["id"]: c["outcome"] for c in r3["clauses"]}


def test_runs_without_a_start_time_come_first_and_equal_times_keep_the_command_line_order(
        kit: ModuleType, tmp_path: Path) -> None:
    clauses = kit.CLAUSES
    same = "2025-03-01T00:00:00+00:00"
    reports = [report_of(kit, "x", same, all_passing(kit, clauses)),
               report_of(kit, "x", None, all_passing(kit, clauses)),
               report_of(kit, "x", same, all_passing(kit, clauses, ("push_cache.safety.guard_bytes",)))]
    paths = [write(tmp_path / str(i), r) for i, r in enumerate(reports)]
    out = tmp_path / "site"
    build_site(paths, out)
    manifest = json.loads((out / "site.json").read_text(encoding="utf-8"))
    sources = [run["source"] for run in manifest["implementations"][0]["runs"]]
    assert sources == [str(paths[1]), str(paths[0]), str(paths[2])]
    rows = page(out / "impl" / "x.html").all("tr", "run-row")
    assert rows[0].get("data-started") == "unknown"
    assert rows[2].get("data-newly-failing") == "1"


def test_the_implementation_page_shows_the_badge_of_its_newest_run(site: dict[str, Any]) -> None:
    for name, report in (("reference", site["reports"]["ref_new"]), ("vendor", site["reports"]["vendor"])):
        impl = page(site["out"] / "impl" / f"{name}.html")
        badge = to_badge(report)
        shown = impl.by_id("badge")
        assert (shown.get("data-message"), shown.get("data-color")) == (badge["message"], badge["color"])
        assert badge["message"] in shown.text
        assert json.loads((site["out"] / "impl" / f"{name}.badge.json").read_text(encoding="utf-8")) == badge
        assert impl.by_id("verdict").text == report["verdict"]["label"]
    vendor = page(site["out"] / "impl" / "vendor.html")
    assert [li.get("data-clause") for li in vendor.all("li", "failing-clause")] == list(DEVIATING)
    assert len(vendor.all("em", "deviation")) == len(DEVIATING)


# ------------------------------------------------------------------------------------------------ clause pages


def test_a_clause_page_shows_the_spec_text_in_english_and_chinese_and_each_newest_outcome(
        site: dict[str, Any]) -> None:
    spec = load_spec()
    cid = "push_cache.param.src_batch_index.type"
    clause = spec.clause(cid)
    assert clause.source.en and clause.source.zh
    doc = page(site["out"] / "clause" / f"{cid}.html")
    assert doc.by_id("clause-id").text == cid
    assert doc.by_id("clause-title").text == clause.title
    assert doc.by_id("clause-level").text == clause.level.value
    assert doc.by_id("clause-family").text == clause.family
    assert clause.source.ref in doc.by_id("clause-source").text
    en, zh = doc.by_id("source-en"), doc.by_id("source-zh")
    assert (en.text, en.get("lang")) == (clause.source.en, "en")
    assert (zh.text, zh.get("lang")) == (clause.source.zh, "zh")
    assert not doc.has_id("not-in-spec")
    rows = doc.by_id("outcomes").all("tr", "outcome-row")
    assert [(r.get("data-impl"), r.get("data-outcome"), r.get("data-deviation")) for r in rows] == [
        ("reference", "passed", "true"), ("vendor", "failed", "true")]


def test_a_clause_not_in_the_packaged_spec_says_so(site: dict[str, Any]) -> None:
    cid = "push_cache.data.bytes_equal"
    assert cid not in {c.id for c in load_spec().clauses}
    doc = page(site["out"] / "clause" / f"{cid}.html")
    assert "not in the packaged spec" in doc.by_id("not-in-spec").text
    assert not doc.has_id("source-en") and not doc.has_id("source-zh")
    assert doc.by_id("clause-title").text == f"title of {cid}"  # the report's


def test_every_clause_any_run_names_has_a_page(site: dict[str, Any]) -> None:
    named = {c["id"] for r in site["reports"].values() for c in r["clauses"]}
    assert {p.name for p in (site["out"] / "clause").iterdir()} == {f"{safe_name(cid)}.html" for cid in named}


# ------------------------------------------------------------------------------------------------ files and links


def _links(html: Path) -> list[str]:
    return [n.get("href") or "" for n in page(html).all() if n.get("href") is not None]


def test_every_link_of_every_page_resolves_to_a_file_of_the_site(site: dict[str, Any]) -> None:
    out = site["out"]
    pages = sorted(out.rglob("*.html"))
    assert len(pages) > 10
    for html in pages:
        doc = page(html)
        assert not [n for n in doc.all() if n.get("src") is not None], f"{html}: no external assets"
        for href in _links(html):
            parts = urlsplit(href)
            assert not parts.scheme and not parts.netloc, f"{html}: {href} leaves the site"
            if not parts.path:
                continue  # an anchor in the same page
            target = (html.parent / unquote(parts.path)).resolve()
            assert target.is_file(), f"{html.relative_to(out)}: {href} does not resolve"
            assert target.is_relative_to(out.resolve()), f"{html}: {href} leaves the site"


def test_each_run_s_report_and_page_are_written_from_its_data(site: dict[str, Any]) -> None:
    out, files = site["out"], site["files"]
    for source, run in zip(site["paths"], ("reference/2", "vendor/1", "reference/1"), strict=True):
        data = json.loads(source.read_text(encoding="utf-8"))
        assert json.loads((out / f"runs/{run}/report.json").read_text(encoding="utf-8")) == data, run
        page_text = (out / f"runs/{run}/index.html").read_text(encoding="utf-8")
        assert page_text == to_html(data, shown_path(source)), run  # rendered, whether its folder had a page or not
    assert all(path.is_file() and path.is_relative_to(out) for path in files.values())
    assert {name for name in files} == {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    manifest = json.loads(files["site.json"].read_text(encoding="utf-8"))
    assert manifest["generator"] == GENERATOR
    assert [(i["name"], len(i["runs"])) for i in manifest["implementations"]] == [("reference", 2), ("vendor", 1)]


def test_names_become_safe_file_names_and_every_text_is_escaped(kit: ModuleType, tmp_path: Path) -> None:
    name = '../../<b id="x">evil</b> & "q"'
    odd_clause = 'push_cache.param.<i id="y">odd</i>/../../z'
    clauses = [*kit.CLAUSES, kit.clause(odd_clause, "must", '<script>alert("t")</script>')]
    rows = [*all_passing(kit, kit.CLAUSES), kit.row(odd_clause, "ok", "failed", "must", message="<img src=x>")]
    report = report_of(kit, name, "2025-01-01T00:00:00Z", rows, clauses)
    out = tmp_path / "site"
    files = build_site([write(tmp_path / "in", report, with_page=True)], out)
    slug = safe_name(name)
    assert slug != name and "/" not in slug and not slug.startswith(".")
    assert (out / "impl" / f"{slug}.html").is_file() and (out / "runs" / slug / "1" / "report.json").is_file()
    assert (out / "clause" / f"{safe_name(odd_clause)}.html").is_file()
    assert all(p.resolve().is_relative_to(out.resolve()) for p in files.values())
    assert {p.parent.relative_to(out).parts[0] for p in files.values() if p.parent != out} <= {
        "impl", "clause", "runs"}
    for html in [out / "index.html", out / "impl" / f"{slug}.html", out / "clause" / f"{safe_name(odd_clause)}.html"]:
        text = html.read_text(encoding="utf-8")
        assert "<b id" not in text and "<i id" not in text and "<script>alert" not in text, html
        doc = page(html)
        assert not doc.has_id("x") and not doc.has_id("y")
    index = page(out / "index.html")
    assert index.all("tr", "impl-row")[0].get("data-impl") == name  # the name as the backend gave it
    assert index.all("th", "impl")[0].text == name


def test_building_again_replaces_the_site_whole(kit: ModuleType, tmp_path: Path, site: dict[str, Any]) -> None:
    out = site["out"]
    only = write(tmp_path / "only", report_of(kit, "solo", "2025-05-05T00:00:00Z", all_passing(kit, kit.CLAUSES)))
    build_site([only], out)
    assert sorted(p.name for p in (out / "impl").iterdir()) == ["solo.badge.json", "solo.html"]
    assert not (out / "runs" / "reference").exists()
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []  # no temporary left


def test_the_same_file_named_twice_is_one_run(site: dict[str, Any], tmp_path: Path) -> None:
    path = site["paths"][1]
    out = tmp_path / "twice"
    build_site([path, Path(os.path.relpath(path)), path], out)
    assert len(json.loads((out / "site.json").read_text(encoding="utf-8"))["implementations"][0]["runs"]) == 1


# ------------------------------------------------------------------------------------------------ the CLI


def test_the_command_writes_the_site_and_says_where_in_one_line(site: dict[str, Any], tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli-site"
    assert main([*map(str, site["paths"]), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.splitlines() == [
        f"site: 2 implementation(s), 3 run(s), {len(site['clauses'])} clause page(s): {out / 'index.html'}"]
    assert (out / "index.html").is_file()


def _bad_inputs(tmp: Path, good: Path) -> dict[str, tuple[list[str], str]]:
    (tmp / "bad.json").write_text("{not json", encoding="utf-8")
    (tmp / "wrong.json").write_text(json.dumps({"schema_version": 1}), encoding="utf-8")
    (tmp / "a-file").write_text("x", encoding="utf-8")
    (tmp / "foreign").mkdir()
    (tmp / "foreign" / "notes.txt").write_text("mine", encoding="utf-8")
    (tmp / "deep").mkdir()  # a planted site.json nested past any recursion limit: no site of ours
    (tmp / "deep" / "site.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    out = str(tmp / "out")
    return {
        "missing report": ([str(tmp / "nope.json"), "--out", out], "no such file"),
        "invalid JSON": ([str(good), str(tmp / "bad.json"), "--out", out], "not valid JSON"),
        "not a report": ([str(tmp / "wrong.json"), "--out", out], "not a valid report"),
        "a folder for a report": ([str(tmp), "--out", out], "is a directory"),
        "no reports": (["--out", out], "no reports"),
        "no --out": ([str(good)], "--out"),
        "unknown option": ([str(good), "--out", out, "--colour"], "--colour"),
        "out is a file": ([str(good), "--out", str(tmp / "a-file")], "not a folder"),
        "out holds other files": ([str(good), "--out", str(tmp / "foreign")], "not a site"),
        "out holds a deep site.json": ([str(good), "--out", str(tmp / "deep")], "not a site"),
        "out cannot be made": ([str(good), "--out", str(tmp / "a-file" / "site")], "cannot write"),
    }


@pytest.mark.parametrize("case", ["missing report", "invalid JSON", "not a report", "a folder for a report",
                                  "no reports", "no --out", "unknown option", "out is a file",
                                  "out holds other files", "out holds a deep site.json", "out cannot be made"])
def test_bad_input_is_one_line_on_stderr_and_exit_2(case: str, site: dict[str, Any], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    argv, said = _bad_inputs(tmp_path, site["paths"][0])[case]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert said in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, no temporary left
    assert (tmp_path / "foreign" / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "--out" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------ hostile folders

PLANTED = "<script>window.planted = 'ran';</script>"


def test_a_planted_or_linked_page_of_a_report_folder_never_reaches_the_site(kit: ModuleType, tmp_path: Path) -> None:
    """A run's page is rendered from its report.json: an index.html planted beside it, or one that is a link to a
    file outside the folder, is never read, so none of its text (its script) is in any file of the site."""
    secret = tmp_path / "outside.html"
    secret.write_text("<p>a file outside every report folder</p>" + PLANTED.replace("planted", "linked"),
                      encoding="utf-8")
    planted = write(tmp_path / "in" / "planted", report_of(kit, "planted", None, all_passing(kit, kit.CLAUSES)))
    (planted.parent / "index.html").write_text(f"<html><body>{PLANTED}</body></html>", encoding="utf-8")
    linked = write(tmp_path / "in" / "linked", report_of(kit, "linked", None, all_passing(kit, kit.CLAUSES)))
    (linked.parent / "index.html").symlink_to(secret)
    files = build_site([planted, linked], tmp_path / "site")
    texts = {name: path.read_text(encoding="utf-8") for name, path in files.items()}
    for name, text in texts.items():
        assert "window.planted" not in text and "window.linked" not in text and "outside every" not in text, name
    assert {"runs/planted/1/index.html", "runs/linked/1/index.html"} <= set(texts)


def test_a_report_file_that_is_a_link_is_refused_in_one_line(kit: ModuleType, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    real = write(tmp_path / "elsewhere", report_of(kit, "x", None, all_passing(kit, kit.CLAUSES)))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "report.json").symlink_to(real)
    code = main([str(tmp_path / "in" / "report.json"), "--out", str(tmp_path / "site")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "is a link" in err[0], (code, err)
    assert not (tmp_path / "site").exists()

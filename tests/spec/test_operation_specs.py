"""The family's operation spec files: each packaged operation loads with its operation section, a file may share
another's types (``shares``) and name the languages of its pages (``languages``), and push_blocks', pull_cache's
and pull_blocks' clauses quote their recorded pages exactly (the pulls' also keep the level rule of
spec/README.md)."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest
import yaml

from conformance_tests.spec import SpecError, load_spec, operation_spec_path, specified_operations
from conformance_tests.spec.expect import Succeeds
from conformance_tests.spec.model import Spec
from tests.helpers.seeds import SEEDS
from tests.spec.test_level_rule import supported_only_refusals, unlabelled_facts_musts


def _norm(text: str) -> str:
    """White space collapsed, a table row's separators (tab, |), line breaks in a cell (<br>) and markdown escapes
    (\\_) read as plain text."""
    return " ".join(re.sub(r"[\t|]+|<br>", " ", text.replace("\\_", "_")).split())


def test_the_packaged_operations_include_push_cache_push_blocks_and_pull_cache() -> None:
    assert specified_operations()[:3] == ("push_cache", "push_blocks", "pull_cache")  # the family's order
    for api in specified_operations():
        spec = load_spec(operation_spec_path(api))
        assert spec.api == api and all(c.id.startswith(f"{api}.") for c in spec.clauses)


def test_push_blocks_moves_block_lists_and_shares_push_cache_types() -> None:
    blocks, cache = load_spec(operation_spec_path("push_blocks")), load_spec()
    assert (blocks.operation.unit, blocks.operation.src_entries, blocks.operation.dst_entries) == (
        "blocks", "src_blocks", "dst_blocks")
    assert cache.operation.unit == "batch" and not cache.operation.lists
    assert blocks.types == cache.types
    assert blocks.signatures[0].default("src_blocks") == ()  # {tuple: []}: the prototype's default is a tuple


def _missing_quotes(spec: Spec, page: str) -> list[str]:
    """Each fragment of a doc clause's Chinese quote (fragments joined by " ... ") that is not on the page."""
    return [f"{c.id}: {f!r}" for c in spec.clauses if c.source.kind == "doc" and c.source.zh
            for f in (x.strip() for x in c.source.zh.split(" ... ")) if f and _norm(f) not in page]


@pytest.mark.parametrize("api", ["push_blocks", "pull_cache", "pull_blocks"])
def test_every_quote_is_on_its_page(api: str) -> None:
    page = _norm((SEEDS / f"{api}.zh.md").read_text(encoding="utf-8"))
    missing = _missing_quotes(load_spec(operation_spec_path(api)), page)
    assert not missing, f"quote fragments not on spec/documentation/{api}.zh.md:\n" + "\n".join(missing)


def test_a_changed_pull_cache_quote_is_found(tmp_path: pathlib.Path) -> None:
    (tmp_path / "push_cache.yaml").write_bytes(operation_spec_path("push_cache").read_bytes())
    raw = dict(yaml.safe_load(operation_spec_path("pull_cache").read_text(encoding="utf-8")))
    clause = next(c for c in raw["clauses"] if c["id"] == "pull_cache.data.size_positive")
    clause["source"]["zh"] = clause["source"]["zh"].replace(">0", ">=0")  # one character of the page changed
    page = _norm((SEEDS / "pull_cache.zh.md").read_text(encoding="utf-8"))
    assert _missing_quotes(load_spec(_write(tmp_path, raw, "pull_cache.yaml")), page) == [
        "pull_cache.data.size_positive: '设置为>=0的整数，表示要拉取的tensor大小。'"]


def test_a_changed_pull_blocks_quote_is_found(tmp_path: pathlib.Path) -> None:
    (tmp_path / "push_cache.yaml").write_bytes(operation_spec_path("push_cache").read_bytes())
    raw = dict(yaml.safe_load(operation_spec_path("pull_blocks").read_text(encoding="utf-8")))
    clause = next(c for c in raw["clauses"] if c["id"] == "pull_blocks.param.src_blocks.other_keys")
    clause["source"]["zh"] = clause["source"]["zh"].replace("不填", "必填")  # the page's "leave empty", reversed
    page = _norm((SEEDS / "pull_blocks.zh.md").read_text(encoding="utf-8"))
    assert _missing_quotes(load_spec(_write(tmp_path, raw, "pull_blocks.yaml")), page) == [
        "pull_blocks.param.src_blocks.other_keys: 'src_cache_key不是BlocksCacheKey时，必填。'"]


def test_pull_cache_reads_its_key_on_the_remote_source_and_shares_push_cache_types() -> None:
    pull, cache = load_spec(operation_spec_path("pull_cache")), load_spec()
    op = pull.operation
    assert (op.direction, op.key, op.cache, op.unit) == ("pull", "cache_key", "cache", "batch")
    assert pull.types == cache.types and pull.signatures[0].default("batch_index") == 0


def test_pull_blocks_reads_its_key_on_the_remote_source_and_moves_block_lists() -> None:
    pull, cache = load_spec(operation_spec_path("pull_blocks")), load_spec()
    op = pull.operation
    assert (op.direction, op.key, op.cache, op.unit) == ("pull", "src_cache_key", "dst_cache", "blocks")
    assert (op.src_entries, op.dst_entries) == ("src_blocks", "dst_blocks") and op.lists and op.pulls
    assert pull.types == cache.types
    assert pull.signatures[0].default("src_blocks") == () and pull.signatures[0].default("dst_blocks") == ()


@pytest.mark.parametrize("api", ["pull_cache", "pull_blocks"])
def test_the_pulls_keep_the_level_rule(api: str) -> None:
    """The checks of tests/spec/test_level_rule.py (there run on push_cache), on the pulls' clauses."""
    clauses = yaml.safe_load(operation_spec_path(api).read_text(encoding="utf-8"))["clauses"]
    problems = supported_only_refusals(clauses) + unlabelled_facts_musts(clauses)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("api", ["pull_cache", "pull_blocks"])
def test_the_pulls_deviations_are_on_blocking_clauses_only(api: str) -> None:
    """A deviation says the vendor fails the clause: only a must or may clause can be failed that way (a should
    clause is the vendor's own behaviour)."""
    spec = load_spec(operation_spec_path(api))
    assert all(c.level.name != "SHOULD" for c in spec.clauses if c.deviation)


#: pull_blocks' inventory rules its spec does not carry under the same id, and where each went (or why not)
PULL_BLOCKS_ELSEWHERE = {
    "pull_blocks.param.src_blocks": "pull_blocks.param.src_blocks.type",
    "pull_blocks.param.dst_blocks": "pull_blocks.param.dst_blocks.type",
    "pull_blocks.native.host_blocks": "pull_blocks.restriction.block_lists.vendor_host_blocks",
    "pull_blocks.data.counts": None,  # the counts procedure does not run a pull yet
    "pull_blocks.history.valid_pulls": None,  # nor do the histories
    "pull_blocks.restriction.device_pool.host_to_device": None,  # a blocks destination needs the device pool
}


def test_pull_blocks_carries_each_inventory_rule_or_says_where_it_went() -> None:
    from conformance_tests.spec.inventory import load_inventory

    ids = {c.id for c in load_spec(operation_spec_path("pull_blocks")).clauses}
    rules = load_inventory().of("pull_blocks")
    # the inventory now names the clause each rule went to; the rest it keeps, saying why they are not clauses
    assert {x for x in PULL_BLOCKS_ELSEWHERE.values() if x} <= {r.id for r in rules if r.clause is not None} <= ids
    missing = {r.id for r in rules if r.id not in ids}
    assert missing <= {k for k, v in PULL_BLOCKS_ELSEWHERE.items() if v is None}
    assert all(r.not_a_clause for r in rules if r.id in missing)


def test_pull_blocks_from_a_contiguous_cache_is_confined_at_must_and_exact_at_should() -> None:
    """The page documents the call (a key that is not a BlocksCacheKey, src_blocks empty) but not which bytes
    land: the must clause judges only that nothing outside the listed blocks changes; the vendor's reading, the
    exact bytes, refines it at should."""
    spec = load_spec(operation_spec_path("pull_blocks"))
    must = spec.clause("pull_blocks.data.from_contiguous")
    should = spec.clause("pull_blocks.data.from_contiguous.blocks")
    assert isinstance(must.expect, Succeeds) and isinstance(should.expect, Succeeds)
    assert must.level.name == "MUST" and must.expect.post == "confined"
    assert should.level.name == "SHOULD" and should.refines == must.id and should.expect.post == "exact"
    assert [c.name for c in should.cases] == [c.name for c in must.cases]


def _blocks_raw() -> dict[str, Any]:
    return dict(yaml.safe_load(operation_spec_path("push_blocks").read_text(encoding="utf-8")))


def _write(folder: pathlib.Path, raw: dict[str, Any], name: str = "push_blocks.yaml") -> pathlib.Path:
    path = folder / name
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def test_a_shared_file_gives_the_types(tmp_path: pathlib.Path) -> None:
    (tmp_path / "push_cache.yaml").write_bytes(operation_spec_path("push_cache").read_bytes())
    spec = load_spec(_write(tmp_path, _blocks_raw()))
    assert "BlocksCacheKey" in spec.types.records


def test_a_file_that_shares_types_has_none_of_its_own(tmp_path: pathlib.Path) -> None:
    (tmp_path / "push_cache.yaml").write_bytes(operation_spec_path("push_cache").read_bytes())
    raw = {**_blocks_raw(), "types": {}}
    with pytest.raises(SpecError, match=r"\$\.types: a spec that shares push_cache.yaml's types has none"):
        load_spec(_write(tmp_path, raw))


def test_a_missing_shared_file_is_one_line(tmp_path: pathlib.Path) -> None:
    with pytest.raises(SpecError, match=r"\$\.shares: cannot read the shared spec push_cache.yaml"):
        load_spec(_write(tmp_path, _blocks_raw()))


def test_a_must_doc_clause_quotes_each_language_of_its_pages(tmp_path: pathlib.Path) -> None:
    (tmp_path / "push_cache.yaml").write_bytes(operation_spec_path("push_cache").read_bytes())
    raw = _blocks_raw()
    load_spec(_write(tmp_path, raw))  # languages [zh]: no English sentence needed
    raw["languages"] = ["en", "zh"]
    with pytest.raises(SpecError, match=r"needs its sentence in each language .*missing: en"):
        load_spec(_write(tmp_path, raw, "other.yaml"))


def test_an_edit_of_the_shared_file_is_seen(tmp_path: pathlib.Path) -> None:
    shared = tmp_path / "push_cache.yaml"
    shared.write_bytes(operation_spec_path("push_cache").read_bytes())
    path = _write(tmp_path, _blocks_raw())
    before = load_spec(path)
    raw = yaml.safe_load(shared.read_text(encoding="utf-8"))
    del raw["types"]["BlocksCacheKey"]["note"]
    shared.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    after = load_spec(path)
    assert after.sha256 != before.sha256 and load_spec(path) is after  # seen, then cached again

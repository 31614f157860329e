"""The family's operation spec files: each packaged operation loads with its operation section, a file may share
another's types (``shares``) and name the languages of its pages (``languages``), and push_blocks' clauses quote
its recorded page exactly."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest
import yaml

from conformance_tests.spec import SpecError, load_spec, operation_spec_path, specified_operations
from tests.helpers.seeds import SEEDS


def _norm(text: str) -> str:
    """White space collapsed, a table row's separators (tab, |) and markdown escapes (\\_) read as plain text."""
    return " ".join(re.sub(r"[\t|]+", " ", text.replace("\\_", "_")).split())


def test_the_packaged_operations_are_push_cache_and_push_blocks() -> None:
    assert specified_operations() == ("push_cache", "push_blocks")
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


def test_every_push_blocks_quote_is_on_its_page() -> None:
    page = _norm((SEEDS / "push_blocks.zh.md").read_text(encoding="utf-8"))
    spec = load_spec(operation_spec_path("push_blocks"))
    missing = [f"{c.id}: {f!r}" for c in spec.clauses if c.source.kind == "doc" and c.source.zh
               for f in (x.strip() for x in c.source.zh.split(" ... ")) if f and _norm(f) not in page]
    assert not missing, "quote fragments not on spec/documentation/push_blocks.zh.md:\n" + "\n".join(missing)


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

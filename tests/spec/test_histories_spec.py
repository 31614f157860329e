"""The stateful suite's spec data: the histories' domains, the element encodings, the situations."""

from __future__ import annotations

import copy

import pytest
import yaml

from conformance_tests.spec import SpecError, load_spec
from tests.helpers import ROOT

SPEC = ROOT / "spec" / "push_cache.yaml"


def test_the_histories_domains_are_the_documented_ones():
    spec = load_spec()
    hist = spec.generation.histories
    assert hist.cluster_id == spec.types.domains["uint64"]
    assert hist.cache_id == spec.types.domains["int64"]
    assert hist.nodes.min >= 2 and hist.nodes.max >= 4
    assert hist.sync_kv_timeout_ms.min == 1 and hist.sync_kv_timeout_ms.max == 2**31 - 1
    assert any(s.pushes >= 1000 for s in hist.streams.values()), "a long run over one link"
    models = [s for s in hist.streams.values() if s.layouts == "models"]
    assert models and hist.model_layouts
    assert any(m.num_tensors > 128 for m in hist.model_layouts)
    assert all(spec.types.element_size(m.data_type) for m in hist.model_layouts)


def test_every_documented_data_type_has_an_encoding_that_fills_its_size():
    members = load_spec().types.enums["DataType"].members
    for name, m in members.items():
        if m.size_source == "vendor":
            continue
        assert m.encoding is not None, name
        if m.encoding.kind == "float":
            assert 1 + m.encoding.exponent_bits + m.encoding.mantissa_bits == 8 * m.size, name


def test_each_situation_is_declared_once_per_release_by_a_must_or_may_clause():
    spec = load_spec()
    for release in spec.releases:
        selected = spec.for_release(release)
        declared = [c for c in selected.clauses if c.history is not None]
        assert len({c.history for c in declared}) == len(declared), release
        assert all(c.level.value in ("must", "may") for c in declared)
    assert "valid" in spec.situations()


def _broken(tmp_path, edit) -> SpecError:
    raw = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    edit(raw)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(copy.deepcopy(raw), allow_unicode=True, sort_keys=False), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return info.value


def _clause(raw, cid):
    return next(c for c in raw["clauses"] if c["id"] == cid)


def test_a_should_clause_cannot_declare_a_situation(tmp_path):
    err = _broken(tmp_path, lambda raw: _clause(raw, "push_cache.remote.not_linked.status").update(history="dead_peer"))
    assert "should clause cannot declare a history situation" in str(err)


def test_a_situation_is_declared_once_per_release(tmp_path):
    err = _broken(tmp_path, lambda raw: _clause(raw, "push_cache.remote.not_linked").update(history="unlinked"))
    assert "also declared by" in str(err) and "unlinked" in str(err)


def test_an_unknown_domain_or_a_wrong_encoding_is_refused(tmp_path):
    def domain(raw):
        raw["generation"]["histories"]["cluster_id"] = {"domain": "uint63"}

    assert "unknown domain 'uint63'" in str(_broken(tmp_path, domain))

    def bits(raw):
        raw["types"]["DataType"]["members"]["DT_FLOAT"]["encoding"]["mantissa_bits"] = 22

    assert "32" in str(_broken(tmp_path, bits)) and "bits" in str(_broken(tmp_path, bits))

    def model(raw):
        raw["generation"]["histories"]["model_layouts"][0]["data_type"] = "DT_STRING"

    assert "documented size" in str(_broken(tmp_path, model))


def test_an_overtime_naming_no_clause_is_refused(tmp_path):
    def overtime(raw):
        raw["generation"]["histories"]["overtime"] = "push_cache.timeout.exceded"

    err = str(_broken(tmp_path, overtime))
    assert "generation.histories.overtime" in err and "names no clause" in err
    assert "push_cache.timeout.exceeded" in err  # the nearest id is suggested

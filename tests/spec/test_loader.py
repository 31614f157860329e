"""conformance_tests.spec: loading, validation errors (with JSON paths), release selection, caching."""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Callable
from typing import Any

import pytest

from conformance_tests.spec import (
    AnyOf,
    Case,
    Clause,
    Fault,
    Level,
    Raises,
    Spec,
    SpecError,
    Succeeds,
    families,
    load_spec,
)
from conformance_tests.spec.expect import parse_expect
from conformance_tests.spec.value_language import ListOf, Lit

WriteSpec = Callable[..., pathlib.Path]


def _error(write_spec: WriteSpec, data: dict[str, Any] | str) -> SpecError:
    path = write_spec(data)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert "\n" not in message, message
    assert message.startswith(f"{path.resolve()}: "), message
    return info.value


# --------------------------------------------------------------------------------------------------------------
# a valid spec


def test_mini_spec_loads(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    path = write_spec(mini_spec)
    spec = load_spec(path)
    assert isinstance(spec, Spec)
    assert spec.version == "9.0.0"
    assert spec.releases == ("8.2.RC1.alpha002", "8.2.RC1.alpha003", "8.3.RC1.alpha003", "9.0.0")
    assert [c.id for c in spec.clauses] == [c["id"] for c in mini_spec["clauses"]]
    assert spec.path == path.resolve()
    assert len(spec.sha256) == 64
    assert spec.scenario.src.num_tensors == 4
    assert spec.types.enums["LLMStatusCode"].members["LLM_TIMEOUT"].value == 1343270938
    assert len(spec.signatures) == 2
    assert spec.release is None


def test_clause_and_case_fields(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    spec = load_spec(write_spec(mini_spec))
    clause = spec.clause("push_cache.param.src_batch_index.type")
    assert isinstance(clause, Clause)
    assert (clause.level, clause.family, clause.since, clause.until) == (Level.MUST, "param", None, None)
    assert clause.refines is None and clause.deviation is None
    assert clause.requires == ("placements.DEVICE",)
    assert (clause.source.en, clause.source.zh) == (
        "If the input data type is incorrect, a TypeError or ValueError is thrown.",
        "传入数据类型错误情况下会抛出TypeError或ValueError异常。",
    )
    assert all(isinstance(c, Case) for c in clause.cases)
    float_case, list_case, bool_case = clause.cases
    assert (float_case.name, dict(float_case.args), float_case.note) == ("float", {"src_batch_index": Lit(1.0)}, None)
    assert float_case.scenario == clause.scenario == spec.scenario  # no override: the baseline
    assert dict(list_case.args) == {"src_batch_index": ListOf((Lit(0),))}
    assert bool_case.expect == Succeeds("exact") and bool_case.note == "bool is an int"
    assert float_case.expect == clause.expect == Raises(("TypeError", "ValueError"))

    facts = spec.clause("push_cache.timeout.delay")
    assert (facts.source.en, facts.source.zh) == (None, None)
    assert facts.cases[0].scenario.faults == (Fault("delay", "local", 0.6),)
    assert facts.cases[0].scenario.with_(faults=()) == spec.scenario  # the rest is the baseline

    with pytest.raises(dataclasses.FrozenInstanceError):
        clause.level = Level.MAY  # type: ignore[misc]
    # one object per clause and case: usable as dict keys and in sets
    assert len({spec, *spec.clauses, *clause.cases}) == 1 + len(spec.clauses) + 3


def test_clause_lookup_error_is_clear(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    spec = load_spec(write_spec(mini_spec))
    with pytest.raises(KeyError) as info:
        spec.clause("push_cache.param.src_batch_index.typ")
    text = str(info.value)
    assert "no clause 'push_cache.param.src_batch_index.typ'" in text
    assert "did you mean 'push_cache.param.src_batch_index.type'" in text


def test_refining_clause_without_cases_inherits(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    spec = load_spec(write_spec(mini_spec))
    should = spec.clause("push_cache.param.src_batch_index.type_vendor")
    # the case with its own expect (bool -> success) is outside the envelope being narrowed
    assert [c.name for c in should.cases] == ["float", "list"]
    assert should.scenario.src.placement == "DEVICE"
    assert should.requires == ("placements.DEVICE",)
    assert should.expect == Raises(("TypeError",))
    assert [c.expect for c in should.cases] == [should.expect] * 2  # the refining clause's own expect


def test_refining_clause_with_cases_keeps_its_own(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    mini_spec["clauses"][1]["cases"] = [{"name": "str", "args": {"src_batch_index": "1"}}]
    mini_spec["clauses"][1]["scenario"] = {"link": True}
    should = load_spec(write_spec(mini_spec)).clause("push_cache.param.src_batch_index.type_vendor")
    assert [c.name for c in should.cases] == ["str"]
    assert should.scenario.link is True


def test_families_come_from_the_schema(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    spec = load_spec(write_spec(mini_spec))
    assert {c.family for c in spec.clauses} == {"param", "data", "timeout"}
    assert families()[:3] == ("signature", "types", "param")


@pytest.mark.parametrize(
    ("expect", "text"),
    [
        ({"raises": ["LLMException"], "status": "LLM_PARAM_INVALID"}, "raises LLMException(LLM_PARAM_INVALID)"),
        ({"raises": ["TypeError", "ValueError"]}, "raises TypeError or ValueError"),
        ({"outcome": "success"}, "success (exact)"),
        ({"outcome": "success", "post": "prefix"}, "success (prefix)"),
        ({"outcome": "any_of", "allowed": [{"outcome": "success"}, {"raises": ["LLMException"]}]},
         "any of: success (exact) | raises LLMException"),
        ({"raises": ["LLMException"], "writes": "valid_layers"},
         "raises LLMException (side effects allowed: valid_layers)"),
    ],
)
def test_an_expect_is_typed_once_and_described_by_its_form(expect: dict[str, Any], text: str) -> None:
    typed = parse_expect(expect)
    assert isinstance(typed, (Raises, Succeeds, AnyOf)) and typed.describe() == text
    assert parse_expect(typed.as_data()) == typed


# --------------------------------------------------------------------------------------------------------------
# releases


def test_for_release_filters_by_since_until(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    spec = load_spec(write_spec(mini_spec))
    old = spec.for_release("8.2.RC1.alpha002")
    assert old.release == "8.2.RC1.alpha002"
    ids = {c.id for c in old.clauses}
    assert "push_cache.param.tensor_num_per_layer.zero" not in ids  # since 8.3.RC1.alpha003
    assert "push_cache.data.layers.all" in ids  # until 9.0.0 (exclusive)

    new = spec.for_release("9.0.0")
    ids = {c.id for c in new.clauses}
    assert "push_cache.param.tensor_num_per_layer.zero" in ids  # since is inclusive
    assert "push_cache.data.layers.all" not in ids  # until is exclusive

    mid = spec.for_release("8.3.RC1.alpha003")
    assert {"push_cache.param.tensor_num_per_layer.zero", "push_cache.data.layers.all"} <= {c.id for c in mid.clauses}
    # the unfiltered spec is untouched; load_spec(release=...) is the same as for_release
    assert len(spec.clauses) == len(mini_spec["clauses"])
    assert load_spec(spec.path, release="9.0.0").clauses == new.clauses


def test_for_release_unknown_release(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    spec = load_spec(write_spec(mini_spec))
    with pytest.raises(SpecError) as info:
        spec.for_release("8.4.0")
    assert "unknown release '8.4.0'" in str(info.value)
    assert "8.2.RC1.alpha002, 8.2.RC1.alpha003, 8.3.RC1.alpha003, 9.0.0" in str(info.value)
    with pytest.raises(SpecError):
        load_spec(spec.path, release="10.0.0")


def test_signature_for(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    spec = load_spec(write_spec(mini_spec))
    names = lambda release: list(spec.signature_for(release).names)  # noqa: E731
    assert names("8.2.RC1.alpha002") == ["dst_cache_key", "src_cache"]
    assert names("8.2.RC1.alpha003") == ["dst_cache_key", "src_cache"]
    assert names("9.0.0") == ["dst_cache_key", "src_cache", "tensor_num_per_layer"]
    with pytest.raises(SpecError):
        spec.signature_for("nope")


def test_signature_gap_is_a_spec_error(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    mini_spec["signature"][0]["since"] = "8.2.RC1.alpha003"
    error = _error(write_spec, mini_spec)
    assert (error.where, error.what) == ("$.signature", "no signature entry covers release(s) 8.2.RC1.alpha002")


# --------------------------------------------------------------------------------------------------------------
# malformed specs: each is rejected with the JSON path of the bad node


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        node = data
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return mutate


def _drop(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        node = data
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]

    return mutate


MALFORMED: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    # --- schema
    ("bad_level", _set(("clauses", 2, "level"), "mustt"), "$.clauses[2].level",
     "expected one of must, should, may; got 'mustt'"),
    ("missing_id", _drop(("clauses", 3, "id")), "$.clauses[3]", "missing required key 'id'"),
    ("unknown_top_level_key", _set(("clause",), []), "$.clause", "unknown key 'clause' (did you mean 'clauses'?)"),
    ("bad_id_pattern", _set(("clauses", 0, "id"), "pull_cache.param"), "$.clauses[0].id",
     "expected a string matching ^(push_cache|push_blocks|pull_cache|pull_blocks)"),
    ("bad_family", _set(("clauses", 0, "family"), "params"), "$.clauses[0].family", "expected one of signature"),
    ("unknown_clause_key", _set(("clauses", 1, "refine"), None), "$.clauses[1].refine",
     "unknown key 'refine' (did you mean 'refines'?)"),
    ("source_kind", _set(("clauses", 0, "source", "kind"), "code"), "$.clauses[0].source.kind",
     "expected one of doc, facts"),
    ("source_unknown_key", _set(("clauses", 0, "source", "de"), "x"), "$.clauses[0].source.de", "unknown key 'de'"),
    ("case_unknown_key", _set(("clauses", 0, "cases", 1, "arg"), {}), "$.clauses[0].cases[1].arg",
     "unknown key 'arg' (did you mean 'args'?)"),
    ("case_bad_name", _set(("clauses", 0, "cases", 0, "name"), "Float-1"), "$.clauses[0].cases[0].name",
     "expected a string matching ^[a-z0-9_]+$"),
    ("case_value_unknown_tag", _set(("clauses", 0, "cases", 0, "args"), {"src_layer_range": {"rnge": [0, 1]}}),
     "$.clauses[0].cases[0].args.src_layer_range.rnge", "key 'rnge' is not allowed here"),
    ("case_value_bad_symbol", _set(("clauses", 0, "cases", 0, "args"), {"src_layer_range": {"range": [0, "Q"]}}),
     "$.clauses[0].cases[0].args.src_layer_range.range[1]", "expected a string matching ^[LTB]"),
    ("raises_unknown_exception", _set(("clauses", 0, "expect"), {"raises": ["KeyError"]}),
     "$.clauses[0].expect.raises[0]", "expected one of TypeError, ValueError, LLMException; got 'KeyError'"),
    ("raises_empty", _set(("clauses", 0, "expect"), {"raises": []}), "$.clauses[0].expect.raises",
     "expected at least 1 item(s)"),
    ("outcome_typo", _set(("clauses", 0, "expect"), {"outcome": "sucess"}), "$.clauses[0].expect.outcome",
     "expected one of success, any_of; got 'sucess'"),
    ("expect_empty", _set(("clauses", 0, "expect"), {}), "$.clauses[0].expect",
     "an expect needs either raises"),
    ("expect_mixed", _set(("clauses", 0, "expect"), {"raises": ["TypeError"], "outcome": "success"}),
     "$.clauses[0].expect.outcome", "unknown key 'outcome'"),
    ("any_of_without_allowed", _set(("clauses", 4, "expect"), {"outcome": "any_of"}), "$.clauses[4].expect",
     "missing required key 'allowed'"),
    ("since_not_a_string", _set(("clauses", 0, "since"), 8.5), "$.clauses[0].since",
     "expected string or null; got a number 8.5"),
    ("requires_unknown_capability", _set(("clauses", 3, "requires"), ["fault.delay"]), "$.clauses[3].requires[0]",
     "expected a string matching ^(placements|"),
    ("scenario_unknown_key", _set(("clauses", 3, "scenario"), {"lnk": False}), "$.clauses[3].scenario.lnk",
     "unknown key 'lnk' (did you mean 'link'?)"),
    ("scenario_boolean_key", _set(("clauses", 4, "cases", 0, "scenario"), {"fault": {True: "local", "kind": "delay"}}),
     "$.clauses[4].cases[0].scenario.fault.True", "quote the key"),
    ("enum_member_without_value", _set(("types", "Placement", "members", "HOST"), {"val": 0}),
     "$.types.Placement.members.HOST", "missing required key 'value'"),
    ("no_clauses", _set(("clauses",), []), "$.clauses", "expected at least 1 item(s)"),
    ("wrong_api", _set(("api",), "pull_kv"), "$.api",
     "expected one of push_cache, push_blocks, pull_cache, pull_blocks; got 'pull_kv'"),
    ("operation_unit", _set(("operation", "unit"), "pages"), "$.operation.unit", "expected one of batch, blocks"),
    ("signature_kind", _set(("signature", 0, "parameters", 0, "kind"), "keyword_only"),
     "$.signature[0].parameters[0].kind", "expected one of positional_or_keyword, var_keyword"),
    # --- semantic checks (after the schema passed)
    ("duplicate_id", _set(("clauses", 2, "id"), "push_cache.param.src_batch_index.type"), "$.clauses[2].id",
     "duplicate clause id 'push_cache.param.src_batch_index.type' (first at $.clauses[0])"),
    ("id_of_another_operation", _set(("clauses", 2, "id"), "push_blocks.param.x"), "$.clauses[2].id",
     "a clause of push_cache must be named push_cache.<family>...; got 'push_blocks.param.x'"),
    ("operation_key_not_a_parameter", _set(("operation", "key"), "src_cache_key"), "$.operation.key",
     "'src_cache_key' is not a parameter of $.signature[0]"),
    ("blocks_entries_not_parameters", _set(("operation", "unit"), "blocks"), "$.operation.entries.src",
     "'src_batch_index' is not a parameter of $.signature[0] (dst_cache_key, src_cache)"),
    ("family_mismatch", _set(("clauses", 3, "family"), "param"), "$.clauses[3].family",
     "does not match the id 'push_cache.data.layers.all'"),
    ("unknown_release_in_since", _set(("clauses", 2, "since"), "8.4.0"), "$.clauses[2].since",
     "unknown release '8.4.0'; known releases: 8.2.RC1.alpha002, 8.2.RC1.alpha003, 8.3.RC1.alpha003, 9.0.0"),
    ("unknown_release_in_until", _set(("clauses", 3, "until"), "9.0.1"), "$.clauses[3].until",
     "unknown release '9.0.1'"),
    ("until_not_after_since", _set(("clauses", 2, "until"), "8.3.RC1.alpha003"), "$.clauses[2].until",
     "must be a later release than since"),
    ("refines_missing_clause", _set(("clauses", 1, "refines"), "push_cache.param.src_batch_index.typo"),
     "$.clauses[1].refines", "refines names no clause: 'push_cache.param.src_batch_index.typo'"),
    ("refines_itself", _set(("clauses", 1, "refines"), "push_cache.param.src_batch_index.type_vendor"),
     "$.clauses[1].refines", "cannot refine itself"),
    ("should_refines_should", _set(("clauses", 1, "refines"), "push_cache.param.tensor_num_per_layer.zero"),
     "$.clauses[1].refines", "a should clause must refine a must or may clause"),
    ("doc_must_without_zh", _drop(("clauses", 0, "source", "zh")), "$.clauses[0].source",
     "needs its sentence in each language of the operation's pages (en, zh; missing: zh)"),
    ("status_without_llmexception", _set(("clauses", 0, "expect"), {"raises": ["TypeError"], "status": "LLM_TIMEOUT"}),
     "$.clauses[0].expect.status", "status is only allowed with raises: [LLMException]; got raises: [TypeError]"),
    ("status_unknown", _set(("clauses", 2, "expect", "status"), "LLM_PARAM_INVALD"), "$.clauses[2].expect.status",
     "unknown status 'LLM_PARAM_INVALD' (did you mean 'LLM_PARAM_INVALID'?)"),
    ("status_unknown_nested", _set(("clauses", 4, "expect", "allowed", 0, "status"), "LLM_NOPE"),
     "$.clauses[4].expect.allowed[0].status", "unknown status 'LLM_NOPE'"),
    ("status_in_case_expect", _set(("clauses", 0, "cases", 0, "expect"), {"raises": ["ValueError"], "status": "LLM_TIMEOUT"}),
     "$.clauses[0].cases[0].expect.status", "only allowed with raises: [LLMException]"),
    ("duplicate_case_name", _set(("clauses", 0, "cases", 1, "name"), "float"), "$.clauses[0].cases[1].name",
     "duplicate case name 'float'"),
    ("duplicate_release", _set(("releases", 1, "name"), "8.2.RC1.alpha002"), "$.releases[1].name",
     "duplicate release '8.2.RC1.alpha002'"),
    ("spec_version_not_newest", _set(("spec_version",), "8.3.RC1.alpha003"), "$.spec_version",
     "expected the newest release, '9.0.0'"),
    ("signature_overlap", _set(("signature", 1, "since"), "8.2.RC1.alpha003"), "$.signature[1]",
     "release 8.2.RC1.alpha003 is also covered by $.signature[0]"),
    ("signature_unknown_release", _set(("signature", 0, "until"), "8.3.RC1.alpha002"), "$.signature[0].until",
     "unknown release '8.3.RC1.alpha002'"),
    ("enum_duplicate_value", _set(("types", "Placement", "members", "DEVICE", "value"), 0),
     "$.types.Placement.members.DEVICE.value", "value 0 already used by Placement.HOST"),
]


@pytest.mark.parametrize(("mutate", "where", "what"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_spec_is_rejected_with_json_path(
    write_spec: WriteSpec, mini_spec: dict[str, Any], mutate: Callable[[dict[str, Any]], None], where: str, what: str
) -> None:
    mutate(mini_spec)
    error = _error(write_spec, mini_spec)
    assert error.where == where, str(error)
    assert what in error.what, str(error)
    assert str(error) == f"{error.file}: {where}: {error.what}"


def _with_kwargs(keyword_defaults: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        data["signature"][1]["parameters"].append(
            {"name": "kwargs", "kind": "var_keyword", "type": "src_layer_range, dst_layer_range",
             "keyword_defaults": keyword_defaults})
    return mutate


def test_a_keyword_of_kwargs_with_a_stated_default_is_a_defaulted_parameter(
        write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    _with_kwargs({"dst_layer_range": None})(mini_spec)
    sig = load_spec(write_spec(mini_spec)).signature_for("9.0.0")
    # a declared default first, then the keyword whose default the spec states; the other keyword has none
    assert sig.defaulted == ("tensor_num_per_layer", "dst_layer_range")
    assert sig.names == ("dst_cache_key", "src_cache", "tensor_num_per_layer", "src_layer_range", "dst_layer_range")
    assert [p.name for p in sig.declared] == ["dst_cache_key", "src_cache", "tensor_num_per_layer"]


@pytest.mark.parametrize(("mutate", "where", "what"), [
    (_with_kwargs({"size": -1}), "$.signature[1].parameters[3].keyword_defaults.size",
     "'size' is not a keyword this parameter takes (dst_layer_range, src_layer_range)"),
    (_set(("signature", 1, "parameters", 2, "keyword_defaults"), {"tensor_num_per_layer": 2}),
     "$.signature[1].parameters[2].keyword_defaults", "only a var_keyword parameter takes keyword defaults"),
], ids=["unknown_keyword", "not_var_keyword"])
def test_keyword_defaults_name_keywords_of_a_var_keyword_entry(
        write_spec: WriteSpec, mini_spec: dict[str, Any], mutate: Callable[[dict[str, Any]], None], where: str,
        what: str) -> None:
    mutate(mini_spec)
    error = _error(write_spec, mini_spec)
    assert (error.where, error.what) == (where, what), str(error)


def test_yaml_syntax_error_gives_line_and_column(write_spec: WriteSpec) -> None:
    text = "spec_version: 9.0.0\napi: push_cache\nclauses:\n  - id: push_cache.param.x\n   level: must\n"
    error = _error(write_spec, text)
    assert error.where == "line 5, column 4", str(error)
    assert error.what.startswith("YAML: ")


def test_yaml_duplicate_key_is_an_error(write_spec: WriteSpec) -> None:
    error = _error(write_spec, "spec_version: 9.0.0\napi: push_cache\napi: pull_cache\n")
    assert error.where == "line 3, column 1", str(error)
    assert "duplicate key 'api'" in error.what


def test_yaml_merge_keys_are_not_duplicates(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    import yaml

    del mini_spec["scenario"]
    text = yaml.safe_dump(mini_spec, allow_unicode=True, sort_keys=False) + (
        "scenario:\n"
        "  local: &node {cluster_id: 1, role: PROMPT}\n"
        "  remote: {<<: *node, cluster_id: 2, role: DECODER}\n"
        "  link: true\n"
        "  src: &cache {num_tensors: 4, shape: [2, 8], data_type: DT_FLOAT16, placement: DEVICE}\n"
        "  dst: {<<: *cache, placement: HOST}\n"
        "  call: {size: -1}\n"
    )
    spec = load_spec(write_spec(text))
    assert (spec.scenario.remote.cluster_id, spec.scenario.remote.role) == (2, "DECODER")
    assert spec.scenario.dst.placement == "HOST" and spec.scenario.dst.num_tensors == 4


def test_empty_file(write_spec: WriteSpec) -> None:
    error = _error(write_spec, "")
    assert (error.where, error.what) == ("$", "expected object; got null")


def test_missing_file(tmp_path: pathlib.Path) -> None:
    with pytest.raises(SpecError, match=r"\$: cannot read spec"):
        load_spec(tmp_path / "nope.yaml")


def test_all_semantic_problems_are_kept(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    mini_spec["clauses"][2]["since"] = "1.0.0"
    mini_spec["clauses"][1]["refines"] = "push_cache.nope.nope"
    error = _error(write_spec, mini_spec)
    assert [where for where, _ in error.problems] == ["$.clauses[1].refines", "$.clauses[2].since"]


# --------------------------------------------------------------------------------------------------------------
# caching


def test_load_is_cached_and_sees_edits(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    path = write_spec(mini_spec)
    first = load_spec(path)
    assert load_spec(str(path)) is first
    mini_spec["clauses"][0]["title"] = "changed"
    write_spec(mini_spec)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))
    second = load_spec(path)
    assert second is not first
    assert second.clauses[0].title == "changed"
    assert second.sha256 != first.sha256


def test_a_call_argument_in_a_scenario_override_replaces_the_baseline_value_whole():
    """A key overriding the baseline key is a new value, not a merge: a CacheKeyByIdAndIndex given in a clause's
    scenario must not keep the baseline BlocksCacheKey's ``args`` (which would make it another key)."""
    from conformance_tests.spec.load import deep_merge

    base = {"call": {"k": {"key": "BlocksCacheKey", "args": ["remote", 0]}, "n": 1}, "src": {"a": 1, "b": 2}}
    got = deep_merge(base, {"call": {"k": {"key": "CacheKeyByIdAndIndex", "cluster": "remote"}}, "src": {"b": 3}})
    assert got == {"call": {"k": {"key": "CacheKeyByIdAndIndex", "cluster": "remote"}, "n": 1},
                   "src": {"a": 1, "b": 3}}, got

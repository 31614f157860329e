"""The spec shipped in the package (spec/push_cache.yaml, installed as push_cache_spec) is valid and sound."""

from __future__ import annotations

import collections
import json

import pytest

from conformance_tests.spec import (
    LEVELS,
    Spec,
    SpecError,
    default_schema_path,
    default_spec_path,
    families,
    load_spec,
)


@pytest.fixture(scope="module")
def spec() -> Spec:
    try:
        return load_spec()
    except SpecError:
        pytest.skip("the packaged spec is invalid; see test_packaged_spec_validates")


def test_default_paths_point_into_the_package() -> None:
    assert default_spec_path().name == "push_cache.yaml"
    assert default_spec_path().parent == default_schema_path().parent
    assert default_spec_path().is_file()


def test_schema_is_valid_draft_2020_12() -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads(default_schema_path().read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_packaged_spec_validates() -> None:
    try:
        spec = load_spec()
    except SpecError as exc:  # names the file, the JSON path and what was expected
        pytest.fail(f"the packaged spec is invalid: {exc}", pytrace=False)
    assert spec.version == spec.releases[-1]
    assert spec.clauses


def test_clause_ids_are_unique(spec: Spec) -> None:
    counts = collections.Counter(c.id for c in spec.clauses)
    assert [i for i, n in counts.items() if n > 1] == []


def test_doc_sourced_must_clauses_quote_both_languages(spec: Spec) -> None:
    missing = [c.id for c in spec.clauses
               if c.level == "must" and c.source.kind == "doc" and not (c.source.en and c.source.zh)]
    assert missing == []


def test_levels_and_families_are_known(spec: Spec) -> None:
    assert {c.level for c in spec.clauses} <= set(LEVELS)
    assert {c.family for c in spec.clauses} <= set(families())


def test_every_release_has_a_signature_and_clauses(spec: Spec) -> None:
    for release in spec.releases:
        assert spec.signature_for(release).parameters, release
        assert spec.for_release(release).clauses, release


def test_refining_should_clauses_have_cases_or_inherit_them(spec: Spec) -> None:
    for clause in spec.clauses:
        if clause.refines and clause.level == "should":
            refined = spec.clause(clause.refines)
            if refined.cases:
                assert clause.cases, f"{clause.id} refines {refined.id} but ends up with no cases"

"""The spec schema's enums and the suite's registered functions are the same sets: every postcondition, side-effect
rule, procedure, step and violation rule a spec can name has its function, and no function hides behind a name
the schema does not allow."""

from __future__ import annotations

import json

import pytest

from conformance_tests import outcomes, procedures, violations
from conformance_tests.spec import default_schema_path

SCHEMA = json.loads(default_schema_path().read_text(encoding="utf-8"))["$defs"]


@pytest.mark.parametrize(("enum", "registry"), [
    (SCHEMA["expect_success"]["properties"]["post"]["enum"], outcomes.POSTCONDITIONS),
    (SCHEMA["expect_raises"]["properties"]["writes"]["enum"], outcomes.WRITES),
    (SCHEMA["procedure"]["properties"]["name"]["enum"], procedures.PROCEDURES),
    (SCHEMA["steps"]["items"]["enum"], procedures.STEPS),
    (SCHEMA["violation_rule"]["enum"], violations.RULES),
], ids=["post", "writes", "procedure", "steps", "rules"])
def test_schema_enum_equals_registry(enum, registry):
    assert sorted(enum) == sorted(registry)


def test_every_expect_of_the_packaged_spec_parses():
    from conformance_tests.spec import load_spec

    for clause in load_spec().clauses:
        for case in clause.cases or (None,):
            expect = clause.expect_for(case) if case is not None else clause.expect
            assert outcomes.parse(expect).describe(), clause.id

"""The spec schema's enums and the kit's registered functions are the same sets: every postcondition, side-effect
rule, procedure, step and violation rule a spec can name has its function, and no function hides behind a name
the schema does not allow; the levels are the schema's."""

from __future__ import annotations

import json

import pytest

from conformance_tests import procedures
from conformance_tests.inputs import violations
from conformance_tests.judging import observation
from conformance_tests.procedures.histories import SITUATIONS
from conformance_tests.spec import LEVELS, default_schema_path, load_spec
from conformance_tests.spec.expect import check_names

SCHEMA = json.loads(default_schema_path().read_text(encoding="utf-8"))["$defs"]


@pytest.mark.parametrize(("enum", "registry"), [
    (SCHEMA["expect_success"]["properties"]["post"]["enum"], observation.POSTCONDITIONS),
    (SCHEMA["expect_raises"]["properties"]["writes"]["enum"], observation.WRITES),
    (SCHEMA["procedure"]["properties"]["name"]["enum"], procedures.PROCEDURES),
    (SCHEMA["steps"]["items"]["enum"], procedures.STEPS),
    (SCHEMA["violation_rule"]["enum"], violations.RULES),
    (SCHEMA["clause"]["properties"]["level"]["enum"], dict.fromkeys(LEVELS)),
    (SCHEMA["history_situation"]["enum"], SITUATIONS),
], ids=["post", "writes", "procedure", "steps", "rules", "levels", "situations"])
def test_schema_enum_equals_registry(enum, registry):
    assert sorted(enum) == sorted(registry)


def test_every_expectation_of_the_packaged_spec_names_registered_checks():
    for clause in load_spec().clauses:
        for expectation in [clause.expect, *(case.expect for case in clause.cases)]:
            assert expectation.describe(), clause.id
            assert check_names(expectation) <= set(observation.POSTCONDITIONS) | set(observation.WRITES), clause.id

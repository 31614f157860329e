"""Family `signature`: parameters, order, defaults, return value (inspect.signature and real calls)."""

from __future__ import annotations

import inspect

import pytest

from conformance_tests import session
from conformance_tests.cases import opened, run_case, signature_problems
from conformance_tests.generate import by_data, case_params, clause_params, data_name
from conformance_tests.harness import scenario_for


@pytest.mark.parametrize(("clause", "case"), case_params("signature", where=lambda c: data_name(c) != "signature"))
def test_case(clause, case):
    run_case(
        clause,
        case,
        positional=clause.id.endswith(".positional"),
        only_given=clause.id.endswith(".defaults"),
    )


@pytest.mark.parametrize("clause", clause_params("signature", by_data("signature")))
def test_signature(clause):
    ctx = session.current()
    entry = ctx.spec.signature_for(ctx.release)
    with opened(scenario_for(ctx.spec, clause), clause.id, minimal=True) as world:
        fn = world.local.cache_manager.push_cache
        world.step("import inspect; print(inspect.signature(local.cache_manager.push_cache))")
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            # e.g. a native binding: the behavioural clauses (positional, defaults, no_var_kwargs) still judge it
            pytest.skip(f"not supported: push_cache has no introspectable signature ({exc})")
        problems = signature_problems(sig, entry)
        assert not problems, (
            f"clause {clause.id} (release {ctx.release})\n  inspect.signature(push_cache) = {sig}\n  "
            + "\n  ".join(problems)
        )

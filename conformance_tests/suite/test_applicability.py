"""Family `applicability`: which products push_cache is documented for (a `may` envelope)."""

from __future__ import annotations

import pytest

from conformance_tests import session
from conformance_tests.cases import opened, per_call_bound
from conformance_tests.generate import clause_params
from conformance_tests.harness import Check, scenario_for


@pytest.mark.parametrize("clause", clause_params("applicability", lambda c: True))
def test_product(clause):
    """A backend on a product the documentation marks unsupported is outside what can be certified; on any
    other product (or an emulator) push_cache either works exactly or refuses with LLMException."""
    ctx = session.current()
    product = ctx.caps.get("product")
    table = (ctx.spec.types.get("products") or {})
    unsupported = {str(p).lower() for p in table.get("unsupported", [])}
    assert str(product).lower() not in unsupported, (
        f"clause {clause.id}: the backend declares product {product!r}, which the push_cache applicability "
        f"table marks unsupported ({', '.join(table.get('unsupported', []))})")
    with opened(scenario_for(ctx.spec, clause), clause.id) as world:
        call = world.call({})
        outcome = world.push(call, bound=per_call_bound())
        check = Check(world, call, clause.id, f"product {product or 'undeclared'}")
        check.expect(outcome, {"outcome": "any_of", "allowed": [
            {"outcome": "success", "data": "exact"},
            {"raises": ["LLMException"]},
        ]})

"""Family `safety`: memory safety — guard bytes around the destination, stride mismatches, freed caches.

With capability ``raw_memory`` the destination tensors live in memory from ``node.alloc_memory`` with guard
bytes before and after each tensor; any change to a guard byte fails the test.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance_tests import session
from conformance_tests.cases import (
    opened,
    per_call_bound,
    placements_supported,
    require,
    run_case,
    run_layout,
    tnpl_range_supported,
)
from conformance_tests.generate import by_id, case_params, clause_by_id, clause_id_params, inherited_cases
from conformance_tests.harness import Check, diff_tensors, scenario_for
from conformance_tests.strategies import layouts

GUARDS = "push_cache.safety.guard_bytes"
FREED = "push_cache.safety.deallocated_destination"


def _is_freed(clause) -> bool:
    return FREED in (clause.id, clause.refines)


@pytest.mark.parametrize(("clause", "case"), case_params("safety", exclude=(GUARDS,), where=lambda c: not _is_freed(c)))
def test_case(clause, case):
    run_case(clause, case, guard=True)


@pytest.mark.parametrize("clause_id", clause_id_params("safety", by_id(GUARDS)))
@given(layout=layouts(placements=placements_supported(), tnpl_range=tnpl_range_supported()))
def test_guard_bytes(clause_id, layout):
    run_layout(clause_by_id(clause_id), layout, ("targeted", "untouched", "guards"), guard=True)


def _freed_params() -> list:
    return [pytest.param(clause, case, id=f"{clause.id}-{case.name}", marks=pytest.mark.clause(clause.id))
            for clause in session.current().spec.clauses if clause.family == "safety" and _is_freed(clause)
            for case in inherited_cases(clause)]


@pytest.mark.parametrize(("clause", "case"), _freed_params())
def test_deallocated_destination(clause, case):
    """The remote frees the destination (before any push, or after one); neither the freed memory nor a cache
    allocated next (which may reuse it) may change, and the outcome is one the case allows."""
    ctx = session.current()
    require(list(clause.requires))
    with opened(scenario_for(ctx.spec, clause, case), clause.id) as world:
        if case.name == "after_first_push":
            first = world.call({})
            outcome = world.push(first, bound=per_call_bound())
            if outcome.exc is not None or outcome.hung:
                pytest.fail(f"clause {clause.id}: the first (valid) push failed: {outcome.describe()}", pytrace=False)
        addrs = list(world.dst.cache.tensor_addrs) if ctx.caps.get("raw_memory") else []
        world.step("remote.cache_manager.deallocate_cache(dst)")
        try:
            world.remote.cache_manager.deallocate_cache(world.dst.cache)
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"clause {clause.id}: deallocate_cache failed: {exc!r}", pytrace=False)
        bystander = world.make_cache("bystander", world.remote, "remote", world.scenario["dst"])
        bystander_before = world.sentinel(bystander, world.remote, "remote")
        freed_before = [world.remote.read_memory(a, world.dst.nbytes) for a in addrs]  # the sentinel may be there now
        call = world.call({})  # the key still names the freed cache's id
        outcome = world.push(call, bound=per_call_bound())
        check = Check(world, call, clause.id, case.name)
        expect = clause.expect_for(case)
        alternatives = expect.get("allowed", [expect])
        raising = [a for a in alternatives if "raises" in a]
        if outcome.exc is None and not outcome.hung and any(a.get("outcome") == "success" for a in alternatives):
            pass  # returning normally is allowed here, provided nothing was written (checked below)
        elif len(raising) == 1:
            check.expect(outcome, raising[0])
        else:
            check.fail(f"push_cache {outcome.describe()}; expected one of: {alternatives}")
        errors = diff_tensors(bystander_before, world.read(bystander, world.remote), "bystander cache (must be unchanged)")
        errors += diff_tensors(freed_before, [world.remote.read_memory(a, world.dst.nbytes) for a in addrs],
                               "freed destination memory (must be unchanged)")
        if errors:
            check.fail("push_cache into a freed cache wrote into freed memory or another cache on the remote", errors)

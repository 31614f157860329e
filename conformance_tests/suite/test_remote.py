"""Family `remote`: the remote side — links, unknown caches, remote batch and layer bounds."""

from __future__ import annotations

import pytest

from conformance_tests import session
from conformance_tests.cases import check_outcome, opened, per_call_bound, run_case
from conformance_tests.generate import by_id, case_params, clause_params
from conformance_tests.harness import Check, scenario_for

UNLINKED = "push_cache.remote.unlinked_after_link"
LATE_CACHE = "push_cache.remote.cache_after_first_push"
LATE_CACHE_STATUS = LATE_CACHE + ".status"


@pytest.mark.parametrize(("clause", "case"), case_params("remote", exclude=(UNLINKED, LATE_CACHE, LATE_CACHE_STATUS)))
def test_case(clause, case):
    run_case(clause, case)


def _first_push(world, clause):
    call = world.call({})
    outcome = world.push(call, bound=per_call_bound())
    if outcome.exc is not None or outcome.hung:
        pytest.fail(f"clause {clause.id}: the first (valid) push failed, so the scenario cannot be built: "
                    f"{outcome.describe()}\n  call: {call.code}", pytrace=False)


@pytest.mark.parametrize("clause", clause_params("remote", by_id(UNLINKED)))
def test_unlinked_after_link(clause):
    """Push once over the link, unlink, push again: the second push must fail."""
    ctx = session.current()
    with opened(scenario_for(ctx.spec, clause), clause.id) as world:
        _first_push(world, clause)
        world.unlink()
        call = world.call({})
        outcome = world.push(call, bound=per_call_bound())
        check_outcome(Check(world, call, clause.id, "after_unlink"), outcome, clause, clause.expect)


@pytest.mark.parametrize("clause", clause_params("remote", by_id(LATE_CACHE, LATE_CACHE_STATUS)))
def test_cache_after_first_push(clause):
    """A cache the remote allocates after the first push over the link: pushed exactly, or reported unknown."""
    ctx = session.current()
    with opened(scenario_for(ctx.spec, clause), clause.id) as world:
        _first_push(world, clause)
        late = world.make_cache("late", world.remote, "remote", world.scenario["dst"])
        world.dst_before = world.sentinel(late, world.remote, "remote")
        world.dst = late
        call = world.call({})
        outcome = world.push(call, bound=per_call_bound())
        check_outcome(Check(world, call, clause.id, "late_cache"), outcome, clause, clause.expect)

"""The situations of a mover run's histories (push_blocks, pull_cache, pull_blocks): every history makes the run's
own transfer once in each situation its spec's clauses declare (history:) — a link that stops carrying data, a
delay within the budget and one past it, a dead peer, a key naming no cache, a node never linked or unlinked, the
local cache released, the peer's cache released — each judged by the clause declaring it and followed by valid
transfers; a backend that reads a released blocks cache fails the clause naming it; a situation no history of the operation can be in is refused, naming the clause."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from conformance_tests.judging.judge import ClauseFailure
from conformance_tests.procedures.histories import mover_situations, mover_transfers
from conformance_tests.procedures.histories.movers import own
from conformance_tests.running.context import RunContext
from conformance_tests.spec import load_spec
from conformance_tests.spec.paths import operation_spec_path
from mutants import catalog
from reference_impl.backend import backend as reference
from tests.helpers.histories import run_stream

HISTORY = {"push_blocks": "push_blocks.history.valid_pushes", "pull_cache": "pull_cache.history.valid_pulls",
           "pull_blocks": "pull_blocks.history.valid_pulls"}


@pytest.fixture
def judged(monkeypatch):
    """(clause id, raised) of every transfer the situations judged (None: by the history clause)."""
    seen: Counter[tuple[str | None, bool]] = Counter()
    original = mover_transfers.judge_transfer

    def spy(*args, clause=None, **kwargs):
        outcome = original(*args, clause=clause, **kwargs)
        seen[(clause.id if clause is not None else None, outcome.exc is not None)] += 1
        return outcome

    monkeypatch.setattr(mover_transfers, "judge_transfer", spy)
    return seen


def _run(api: str, backend, target: str, examples: int) -> RunContext:
    return run_stream(api, HISTORY[api], backend, target, examples)


@pytest.mark.parametrize("api", sorted(HISTORY))
def test_every_declared_situation_is_reached_and_judged_by_its_clause(quick, judged, api):
    run = _run(api, reference, "reference_impl.backend:backend", 1)
    declared = {name: c.id for name, c in run.selected.situations().items()}
    # the spec declares the situations a serving system meets mid-history, each by a clause of its own
    assert {"dropped_link", "dead_peer", "unknown_cache", "never_linked", "unlinked"} <= set(declared), declared
    refusals = {clause for (clause, raised), n in judged.items() if raised and clause is not None}
    recoveries = {clause for (clause, raised), n in judged.items() if not raised}
    # one history reaches each by construction: refused (writing nothing) by the clause that declares it
    mover = own(SimpleNamespace(run=run))
    for name in ("dropped_link", "delay_exceeded", "dead_peer", "unknown_cache", "never_linked", "unlinked",
                 mover_situations.local_freed(mover), mover_situations.remote_freed(mover)):
        if name in declared:
            assert declared[name] in refusals, f"{api}: situation {name} ({declared[name]}) was never judged"
    # and what follows a refusal over the same link is judged by the clause saying what the link must do then
    # as is a transfer a delay slows within its budget (it must succeed; the reference decides by its own
    # simulated time, so no timing of this machine excuses a refusal)
    for name in ("after_refusal", "after_timeout", "delay_within_budget"):
        if name in declared:
            assert declared[name] in recoveries, f"{api}: {name} ({declared[name]}) was never judged"
    assert (None, False) in judged, "no valid transfer followed a situation"
    assert all(not raised for (clause, raised) in judged if clause is None), judged


def test_a_block_read_after_its_release_fails_the_safety_clause(quick):
    with pytest.raises(ClauseFailure) as info:
        _run("push_blocks", catalog.blocks_push_from_freed_source, "mutants.catalog:blocks_push_from_freed_source", 1)
    assert info.value.clause_id == "push_blocks.safety.deallocated_source"


def test_a_situation_no_history_of_the_operation_can_be_in_is_refused_naming_its_clause():
    run = SimpleNamespace(spec=load_spec(operation_spec_path("push_blocks")), signature=SimpleNamespace(names=()))
    mover = own(SimpleNamespace(run=run))
    clause = SimpleNamespace(id="push_blocks.remote.not_remote_accessible")
    h = SimpleNamespace(situations={"inaccessible_destination": clause})
    with pytest.raises(ValueError, match=r"push_blocks.remote.not_remote_accessible: declares history situation "
                                         r"'inaccessible_destination', which a history of push_blocks"):
        mover_situations.situation_rules(h, None, mover, str)
    assert mover_situations.buildable("freed_source", mover)
    assert mover_situations.buildable("delay_exceeded", mover)
    assert mover_situations.buildable("freed_destination", mover)

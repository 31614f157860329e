"""Histories of a blocks run (certify --operation push_blocks / pull_blocks): the machine's caches are blocks caches
(allocated, and registered at uneven offsets by register_blocks_cache), its ``blocks`` step moves block lists by
the operation's direction and its companion step the other way (the family's other blocks operation), each judged
by the run's history clause; it passes on the reference and fails, naming that
clause, on a backend that lays a registered blocks cache's tensors out as an allocation would."""

from __future__ import annotations

import pytest

from conformance_tests.judging.judge import ClauseFailure
from conformance_tests.procedures.histories import blocks
from conformance_tests.running.context import RunContext
from conformance_tests.spec import load_spec
from conformance_tests.spec.paths import operation_spec_path
from mutants import catalog
from reference_impl.backend import backend as reference
from tests.helpers.histories import run_stream

#: operation -> its history clause and the mutant only its histories catch
CASES = {"push_blocks": ("push_blocks.history.valid_pushes", "blocks_local_tensors_packed"),
         "pull_blocks": ("pull_blocks.history.valid_pulls", "pull_blocks_local_tensors_packed")}


@pytest.fixture
def judged(monkeypatch):
    """The moves the histories judged, with the calls the bed made."""
    seen = []
    original = blocks.judge_move

    def spy(m, move, mover, label):
        seen.append((move, mover.op, label))
        return original(m, move, mover, label)

    monkeypatch.setattr(blocks, "judge_move", spy)
    return seen


def _run(api: str, backend, target: str, examples: int) -> RunContext:
    return run_stream(api, CASES[api][0], backend, target, examples)


@pytest.mark.parametrize("api", sorted(CASES))
def test_a_blocks_run_moves_blocks_between_blocks_caches_by_its_direction(quick, judged, api):
    run = _run(api, reference, "reference_impl.backend:backend", 3)
    assert judged, "no history moved blocks"
    op = run.spec.operation
    # the run's own moves, and its companion's the other way (push_blocks beside pull_blocks), over the same links
    assert {used.direction for _, used, _ in judged} == {"push", "pull"}
    assert any(used == op for _, used, _ in judged)
    for move, used, label in judged:
        assert used.lists and move.pulls == used.pulls, label
        assert move.src.blocks and move.dst.blocks, f"{label}: a move between caches that are not blocks caches"
        # a push's source is the client's, a pull's the server's; the key names the server's cache
        assert move.keyed.node == move.server.index, label
        assert (move.src.node == move.server.index) == used.pulls, label
        assert len(move.src_blocks) == len(move.dst_blocks) == len(set(move.dst_blocks)) > 0, label
    # every opening registers a pair of blocks caches at uneven offsets (what the broken backend below needs)
    assert any(move.src.registered or move.dst.registered for move, _, _ in judged)
    assert run.counters.history_pushes >= len(judged)


@pytest.mark.parametrize("api", sorted(CASES))
def test_registered_blocks_read_as_packed_fail_the_history_clause(quick, judged, api):
    clause_id, name = CASES[api]
    with pytest.raises(ClauseFailure) as info:
        _run(api, getattr(catalog, name), f"mutants.catalog:{name}", 3)
    assert info.value.clause_id == clause_id
    assert judged and any(m.src.registered or m.dst.registered for m, _, _ in judged)


def test_a_companion_is_a_specified_operation_moving_the_runs_unit_the_other_way():
    """generation.histories.companion names the family operation mixed into the histories: one with a spec file
    that moves the run's unit the other way; anything else is a clear error naming the spec's field."""
    from types import SimpleNamespace

    from conformance_tests.procedures.histories.movers import companion

    def run_of(api: str, named: str | None):
        spec = load_spec(operation_spec_path(api))
        return SimpleNamespace(run=SimpleNamespace(spec=spec), hist=SimpleNamespace(companion=named))

    assert companion(run_of("push_blocks", "pull_blocks")).api == "pull_blocks"
    assert companion(run_of("pull_cache", "push_cache")).op.direction == "push"
    assert companion(run_of("push_blocks", None)) is None
    with pytest.raises(ValueError, match="generation.histories.companion names 'pull_kv', which has no spec file"):
        companion(run_of("push_blocks", "pull_kv"))
    with pytest.raises(ValueError, match="moves the run's unit .blocks. the other way"):
        companion(run_of("push_blocks", "pull_cache"))

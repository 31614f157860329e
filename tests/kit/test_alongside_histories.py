"""The family's operations on the other unit in one history (``generation.histories.alongside``): a run of batch
entries makes blocks caches beside its own contiguous caches on the same nodes and moves block lists between them
over the same links, and a run of block lists does the reverse; each transfer goes between caches of its own
operation's kind and is judged by the run's history clause.  A backend whose defect shows only where a node holds
both kinds (blocks caches numbered apart from contiguous ones, in one table) passes push_cache's clause tests and
fails its histories."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance_tests.judging.judge import ClauseFailure
from conformance_tests.procedures.histories import blocks, pulls
from conformance_tests.procedures.histories.movers import alongside_movers
from conformance_tests.spec import load_spec
from conformance_tests.spec.paths import operation_spec_path
from mutants import catalog
from reference_impl.backend import backend as reference
from tests.helpers.certify import certify
from tests.helpers.histories import run_stream

#: operation -> its history clause
CLAUSES = {"push_cache": "push_cache.history.valid_pushes", "pull_cache": "pull_cache.history.valid_pulls",
           "push_blocks": "push_blocks.history.valid_pushes", "pull_blocks": "pull_blocks.history.valid_pulls"}


@pytest.fixture
def judged(monkeypatch):
    """Every move of blocks and every transfer of one batch entry a history judged: (the transfer, its
    operation's method, label)."""
    seen = []
    for module, name in ((blocks, "judge_move"), (pulls, "judge_pull")):
        original = getattr(module, name)

        def spy(m, moved, mover, label, original=original):
            seen.append((moved, mover.api, label))
            return original(m, moved, mover, label)

        monkeypatch.setattr(module, name, spy)
    return seen


@pytest.mark.parametrize("api", sorted(CLAUSES))
def test_each_run_moves_the_other_unit_between_caches_of_its_kind_on_the_same_nodes(quick, judged, api):
    spec = load_spec(operation_spec_path(api))
    others = {name: load_spec(operation_spec_path(name)).operation for name in spec.generation.histories.alongside}
    assert others and all(op.unit != spec.operation.unit for op in others.values()), others
    run_stream(api, CLAUSES[api], reference, "reference_impl.backend:backend", 2)
    beside = [(moved, method, label) for moved, method, label in judged if method in others]
    # every history's opening moves a pair of the other kind by each operation alongside
    assert {method for _, method, _ in beside} == set(others), [label for _, _, label in judged]
    for moved, method, label in beside:
        kind = others[method].lists
        assert moved.src.blocks == moved.dst.blocks == kind, f"{label}: {method} between caches of another kind"
    # an opening's: over the opening's link, between the nodes its own first pair is on (both kinds made there
    # before the link), after the run's own transfers over it (push_cache's opening pushes only in some streams)
    opening = [(moved, label) for moved, _, label in beside if ", alongside" in label]
    assert opening, [label for _, _, label in beside]
    for moved, label in opening:
        assert {moved.src.node, moved.dst.node} == {0, 1}, label
    own = [moved for moved, method, _ in judged if method == api]
    assert api == "push_cache" or any({t.src.node, t.dst.node} == {0, 1} and t.src.blocks == spec.operation.lists
                                      for t in own)


def test_an_operation_alongside_moves_another_unit_and_has_a_spec():
    def run_of(api: str, *named: str):
        return SimpleNamespace(run=SimpleNamespace(spec=load_spec(operation_spec_path(api))),
                               hist=SimpleNamespace(alongside=named))

    assert [v.api for v in alongside_movers(run_of("push_cache", "push_blocks", "pull_blocks"))] == \
        ["push_blocks", "pull_blocks"]
    assert alongside_movers(run_of("pull_blocks")) == ()
    with pytest.raises(ValueError, match="alongside names 'pull_cache', which moves the run's own unit"):
        alongside_movers(run_of("push_cache", "pull_cache"))
    with pytest.raises(ValueError, match="generation.histories.alongside names 'pull_kv', which has no spec file"):
        alongside_movers(run_of("push_blocks", "pull_kv"))


def test_blocks_caches_numbered_apart_pass_the_clause_tests_and_fail_the_histories(quick, tmp_path):
    """The defect needs a node holding both kinds: push_cache's clause tests never make a blocks cache, its
    histories do (alongside), and the first push into a contiguous cache whose id a blocks cache took fails."""
    with pytest.raises(ClauseFailure) as info:
        run_stream("push_cache", CLAUSES["push_cache"], catalog.numbers_blocks_apart,
                   "mutants.catalog:numbers_blocks_apart", 2)
    assert info.value.clause_id == CLAUSES["push_cache"]
    proc = certify("--backend", "mutants.catalog:numbers_blocks_apart", "--hypothesis-profile", "quick",
                   "--clauses", "push_cache.data.*", "--report-dir", str(tmp_path), "-q")
    assert proc.returncode == 5, proc.stdout[-2000:] + proc.stderr[-2000:]  # partial: no clause failed

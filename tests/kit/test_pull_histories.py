"""Histories of a pull run (certify --operation pull_cache): the machine's pull step, judged like a valid push by
pull_cache.history.valid_pulls, passes on the reference and fails, naming that clause, on a backend whose pulls
write one wrong byte."""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import replace

import pytest

import conformance_tests.running.profiles  # noqa: F401 - registers the profiles
from conformance_tests.judging.judge import ClauseFailure
from conformance_tests.procedures import PROCEDURES, items_for
from conformance_tests.procedures.histories import pulls
from conformance_tests.running.context import RunContext
from conformance_tests.spec import load_spec
from conformance_tests.spec.paths import operation_spec_path
from reference_impl.backend import ReferenceBackend
from reference_impl.backend import backend as reference
from reference_impl.cache_manager import CacheManager

HISTORY = "pull_cache.history.valid_pulls"
PULL_SPEC = load_spec(operation_spec_path("pull_cache"))


class WrongBytePull(CacheManager):
    """Pulls as the reference does, then flips the first byte each pulled slice wrote."""

    def _pull_copy(self, a, link, pairs):  # type: ignore[no-untyped-def]
        super()._pull_copy(a, link, pairs)
        for _, dst in pairs:
            if dst.size:
                dst[0] ^= 0xFF


#: the reference with WrongBytePull's pulls (module level: a repro script imports its backend by name)
BROKEN = ReferenceBackend(name="wrong-byte-pull", cache_manager_cls=WrongBytePull)


@pytest.fixture
def judged(monkeypatch):
    """The pulls the histories judged (their Push records)."""
    seen = []
    original = pulls.judge_pull

    def spy(m, pull, mover, label):
        seen.append((pull, mover.op))
        return original(m, pull, mover, label)

    monkeypatch.setattr(pulls, "judge_pull", spy)
    return seen


def _run(backend, target: str, examples: int, *, shrink_s: float | None = None,
         run: RunContext | None = None) -> RunContext:
    run = run or RunContext.for_backend(backend, target, spec=PULL_SPEC)
    if shrink_s is not None:
        run.shrink_s = shrink_s
    clause = run.spec.clause(HISTORY)
    item = next(i for i in items_for(run, clause) if i.key == "serving")
    with contextlib.redirect_stdout(io.StringIO()):
        PROCEDURES["history"].run(run, clause, replace(item, examples=examples))
    return run


def test_a_pull_runs_histories_that_pull_and_judge_every_pull_on_the_reference(quick, judged):
    run = _run(reference, "reference_impl.backend:backend", 3)
    c = run.counters
    pulled = [p for p, op in judged if op == PULL_SPEC.operation]
    assert pulled, "no history pulled"
    # the pull is the run's transfer in its histories (no clause of the spec declares a push situation), with its
    # companion's pushes (generation.histories.companion: push_cache) over the same links
    pushed = [p for p, op in judged if op != PULL_SPEC.operation]
    assert pushed and all(op.direction == "push" and not op.lists for p, op in judged if p in pushed)
    assert c.histories >= 3 and c.history_pushes >= len(judged) > 0
    assert all(p.src.node == p.server.index and p.dst.node == p.client.index for p in pulled)
    assert all(p.src.node == p.client.index and p.dst.node == p.server.index for p in pushed)


def test_a_pull_writing_a_wrong_byte_fails_the_history_clause_and_its_repro_makes_the_pull(quick, judged):
    run = RunContext.for_backend(BROKEN, "tests.kit.test_pull_histories:BROKEN", spec=PULL_SPEC)
    with pytest.raises(ClauseFailure) as info:
        _run(BROKEN, "tests.kit.test_pull_histories:BROKEN", 2, shrink_s=5, run=run)
    assert info.value.clause_id == HISTORY
    assert "dst targeted slice" in str(info.value) and judged
    script = run.last_testbed.repro("repro")
    assert "cluster = backend.open_cluster(" in script and "pull_cache(" in script
    # the script names the pull's nodes and caches before the call (the server's source read on the remote node)
    assert re.search(r"src_data, dst_data = snap\(remote, src\), snap\(local, \w+\)", script)


def test_a_pull_that_raised_after_a_budget_its_bytes_may_need_is_judged_by_the_overtime_clause():
    """A node drawn with a 1 ms budget (in the domain) may time out a pull of any size over a loaded transport:
    the history judges its exception by the spec's histories.overtime clause (pull_cache.timeout.exceeded), not
    as a valid pull that failed; under a budget far above what its bytes need, the exception is still a failure."""
    from types import SimpleNamespace

    from conformance_tests.procedures.histories.pushes import clause_envelope, overtime_of
    from conformance_tests.testbed.testbed import Outcome
    from reference_impl.status import LLMException, LLMStatusCode

    assert PULL_SPEC.generation.histories.overtime == "pull_cache.timeout.exceeded"
    clause, exceeded = PULL_SPEC.clause(HISTORY), PULL_SPEC.clause("pull_cache.timeout.exceeded")
    h = SimpleNamespace(overtime=exceeded)
    src = SimpleNamespace(num_tensors=4, info=SimpleNamespace(nbytes=64))
    raised = Outcome(LLMException("timed out", status_code=LLMStatusCode.LLM_TIMEOUT), seconds=0.004)
    given = clause_envelope(clause)
    tight = SimpleNamespace(timeout_ms=1, faulty=False)
    assert overtime_of(h, tight, src, raised, given) != given
    loose = SimpleNamespace(timeout_ms=1000, faulty=False)
    assert overtime_of(h, loose, src, Outcome(raised.exc, seconds=1.2), given) is given

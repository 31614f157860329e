"""The stateful suite, run on the reference and on broken variants of it: histories pass on the reference and
count what they did; a broken backend fails the clause whose promise broke, and the history's reproduction is a
runnable script that fails the same way."""

from __future__ import annotations

import contextlib
import io
from dataclasses import replace

import pytest
from hypothesis import settings

import conformance_tests.profiles  # noqa: F401 - registers the profiles
from conformance_tests.context import RunContext
from conformance_tests.judging import ClauseFailure
from conformance_tests.procedures import PROCEDURES, histories, items_for
from mutants import catalog
from reference_impl.backend import backend as reference

HISTORY = "push_cache.history.valid_pushes"


@pytest.fixture
def quick():
    previous = settings.default
    settings.load_profile("quick")
    yield
    settings.register_profile("_restore", previous)
    settings.load_profile("_restore")


def _run(backend, stream: str, examples: int):
    run = RunContext.for_backend(backend, "reference_impl.backend:backend")
    clause = run.spec.clause(HISTORY)
    item = next(i for i in items_for(run, clause) if i.key == stream)
    with contextlib.redirect_stdout(io.StringIO()):
        PROCEDURES["history"].run(run, clause, replace(item, examples=examples))
    return run


def test_histories_pass_on_the_reference_and_count_what_they_did(quick):
    run = _run(reference, "serving", 3)
    c = run.counters
    assert c.histories >= 3 and c.history_steps > c.histories and c.history_pushes > 0
    assert c.push_calls >= c.history_pushes
    clause = run.spec.clause(HISTORY)
    item = next(i for i in items_for(run, clause) if i.key == "serving")
    assert "push_cache.remote.unknown_cache" in item.also and HISTORY not in item.also


def test_a_broken_backend_fails_the_clause_that_broke_and_its_repro_fails_too(quick, monkeypatch):
    monkeypatch.setattr(histories, "SHRINK_SECONDS", 5)  # a shorter shrink: this checks its result, not its bound
    run = RunContext.for_backend(catalog.first_tensor_only, "mutants.catalog:first_tensor_only")
    clause = run.spec.clause(HISTORY)
    item = next(i for i in items_for(run, clause) if i.key == "serving")
    with pytest.raises(ClauseFailure) as info, contextlib.redirect_stdout(io.StringIO()):
        PROCEDURES["history"].run(run, clause, replace(item, examples=2))
    assert info.value.clause_id == HISTORY
    script = run.last_testbed.repro("repro")
    assert "cluster = backend.open_cluster(" in script and "push_cache(" in script
    with pytest.raises(AssertionError, match=HISTORY):
        exec(compile(script, "repro.py", "exec"), {"__name__": "repro"})  # noqa: S102 - the kit's own script

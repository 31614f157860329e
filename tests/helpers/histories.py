"""One stream of a history clause run in the test's process, as certify runs it (a failure raises the clause's
ClauseFailure), for the tests of the stateful suite."""

from __future__ import annotations

import contextlib
import io
from dataclasses import replace

import conformance_tests.running.profiles  # noqa: F401 - registers the profiles
from conformance_tests.procedures import PROCEDURES, items_for
from conformance_tests.running.context import RunContext
from conformance_tests.spec import load_spec
from conformance_tests.spec.paths import operation_spec_path


def run_stream(api: str, clause_id: str, backend: object, target: str, examples: int, *, stream: str = "serving",
               shrink_s: float = 5) -> RunContext:
    """``examples`` histories of ``stream`` of ``clause_id`` (a history clause of ``api``'s spec) on ``backend``
    (importable as ``target``); a failing history is shrunk for ``shrink_s`` at most."""
    run = RunContext.for_backend(backend, target, spec=load_spec(operation_spec_path(api)))
    run.shrink_s = shrink_s
    clause = run.spec.clause(clause_id)
    item = next(i for i in items_for(run, clause) if i.key == stream)
    with contextlib.redirect_stdout(io.StringIO()):
        PROCEDURES["history"].run(run, clause, replace(item, examples=examples))
    return run

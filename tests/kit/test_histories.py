"""The stateful suite, run on the reference and on broken variants of it: histories pass on the reference and
count what they did; a broken backend fails the clause whose promise broke, and the history's reproduction is a
runnable script that fails the same way."""

from __future__ import annotations

import contextlib
import io
import math
import re
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import find

import conformance_tests.running.profiles  # noqa: F401 - registers the profiles
from conformance_tests.inputs import strategies
from conformance_tests.judging.judge import ClauseFailure
from conformance_tests.procedures import PROCEDURES, items_for
from conformance_tests.procedures.histories import draws
from conformance_tests.procedures.histories.bed import CONTENTS
from conformance_tests.running.context import RunContext
from conformance_tests.spec import CacheSpec, Level
from mutants import catalog
from reference_impl.backend import backend as reference

HISTORY = "push_cache.history.valid_pushes"


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
    run = RunContext.for_backend(catalog.first_tensor_only, "mutants.catalog:first_tensor_only")
    run.shrink_s = 5  # a shorter shrink: this checks its result, not its bound
    clause = run.spec.clause(HISTORY)
    item = next(i for i in items_for(run, clause) if i.key == "serving")
    with pytest.raises(ClauseFailure) as info, contextlib.redirect_stdout(io.StringIO()):
        PROCEDURES["history"].run(run, clause, replace(item, examples=2))
    # every push of this mutant is wrong: the clause named is the one whose push came first in the shrunk history
    # (a valid push's, or that of the situation it was pushed in), and the repro fails in its name
    broke = info.value.clause_id
    assert broke == HISTORY or broke in item.also
    script = run.last_testbed.repro("repro")
    assert "cluster = backend.open_cluster(" in script and "push_cache(" in script
    with pytest.raises(AssertionError, match=re.escape(broke)):
        exec(compile(script, "repro.py", "exec"), {"__name__": "repro"})  # noqa: S102 - the kit's own script


# ---- what every history reaches by construction, whatever else it draws -------------------------------------------

def _simplest(strategy, label=None):
    """The draw hypothesis starts from: what a stream with one example gets."""
    return find(strategy, lambda _: True)


def _contents(code):
    ns = {"np": np}
    exec("\n".join(CONTENTS), ns)  # noqa: S102 - the kit's own helper, as a repro script defines it
    return eval(code, ns)  # noqa: S307


def test_every_fill_differs_and_a_rewrite_changes_every_batch_entry_even_at_the_simplest_draws():
    run = RunContext.for_backend(reference, "reference_impl.backend:backend")
    for dtype in ("DT_FLOAT", "DT_INT8", "DT_BOOL"):
        desc = CacheSpec(3, (4, 1), dtype, "DEVICE")  # one element per batch entry: all of it special
        nbytes = 4 * run.spec.types.enums["DataType"].members[dtype].size
        code, shift = draws.content_code(_simplest, run.spec, desc, nbytes, 1)
        other, _ = draws.content_code(_simplest, run.spec, desc, nbytes, 2)
        again, _ = draws.content_code(_simplest, run.spec, desc, nbytes, 3, after=shift)
        first = _contents(code).reshape(3, 4, -1)
        assert not np.array_equal(first, _contents(other).reshape(3, 4, -1))
        changed = (first != _contents(again).reshape(3, 4, -1)).any(axis=2)
        assert changed.all(), f"{dtype}: a rewrite left batch entries as they were"


def test_the_long_run_layouts_hold_every_special_pattern_in_every_batch_entry():
    run = RunContext.for_backend(reference, "reference_impl.backend:backend")
    dom = strategies.domain(run.spec, Level.MUST, run.caps, run.params)
    for dtype in dom.data_types:
        desc, _ = draws.tour_desc(_simplest, run.spec, dom, dtype)
        assert math.prod(desc.shape[1:]) >= 2 * draws.special_count(run.spec, dtype), dtype


def test_the_model_stream_starts_at_the_edges_and_unknown_ids_alias_in_every_common_field():
    run = RunContext.for_backend(reference, "reference_impl.backend:backend")
    hist = run.spec.generation.histories
    dom = strategies.domain(run.spec, Level.MUST, run.caps, run.params)
    edges = draws.edge_models(hist, dom, run.caps.get("max_cache_bytes"))
    assert max(m.num_tensors for m in edges) == max(m.num_tensors for m in hist.model_layouts) > 128
    assert max(math.prod(m.shape[1:]) * dom.itemsize[m.data_type] for m in edges) > 65535
    ids = draws.unknown_ids(hist.cache_id, 5, {5, 6})
    for width in draws.COMMON_FIELD_BITS:
        assert any(i != 5 and (i - 5) % (1 << width) == 0 for i in ids), width
    assert {hist.cache_id.min, hist.cache_id.max} <= set(ids) and not {5, 6} & set(ids)


def test_a_focused_judgement_reads_its_destination_and_the_check_after_the_run_reads_everything():
    """A long run judges each push on its destination (the testbed's focus); the check once the run ends reads
    every cache: a byte changed in any other cache during the run, the source included, fails it."""
    from conformance_tests.judging.observation import Observation
    from conformance_tests.testbed.testbed import Outcome, Testbed

    run = RunContext.for_backend(reference, "reference_impl.backend:backend")
    with Testbed(run, run.spec.scenario) as tb:
        other = tb.make_cache("other", "remote", run.spec.scenario.dst)
        tb.fill_sentinel(other)
        tb.remote.write_tensor(other.cache, 0, np.zeros(other.nbytes, dtype=np.uint8))  # a stray write
        tb.local.write_tensor(tb.src.cache, 0, np.zeros(tb.src.nbytes, dtype=np.uint8))  # and into the source
        tb.focus = frozenset({"dst"})
        assert Observation(tb, None, Outcome(None, 0.0)).watched() == ["dst"]
        assert Observation(tb, None, Outcome(None, 0.0)).unchanged() == []
        tb.focus = None
        problems = Observation(tb, None, Outcome(None, 0.0)).unchanged()
        assert {p.cache for p in problems} == {"src", "other"}, problems


@pytest.mark.parametrize(("mutant", "clause_id"), [
    ("poisoned_after_timeout", "push_cache.timeout.link_recovers"),
    ("poisoned_after_refusal", "push_cache.remote.link_after_refusal"),
])
def test_the_push_after_a_timeout_or_a_refusal_is_judged_by_its_own_clause(quick, mutant, clause_id):
    """A link a backend left broken by what went over it before fails the clause of what came before (issue 31),
    not a widened envelope: the configuration stream reaches a timeout by construction, the serving stream
    refusals after nearly every push."""
    backend = getattr(catalog, mutant)
    run = RunContext.for_backend(backend, f"mutants.catalog:{mutant}")
    run.shrink_s = 0
    clause = run.spec.clause(HISTORY)
    stream = "configuration" if "timeout" in clause_id else "serving"
    item = next(i for i in items_for(run, clause) if i.key == stream)
    with pytest.raises(ClauseFailure) as info, contextlib.redirect_stdout(io.StringIO()):
        PROCEDURES["history"].run(run, clause, replace(item, examples=3))
    assert info.value.clause_id == clause_id, info.value

"""A re-run test's row, folded from hand-made phase reports as pytest-rerunfailures sends them (each carries its
attempt in ``rerun``; a failed phase that will run again has outcome ``rerun``), and hypothesis's FlakyFailure."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from conformance_tests.running.attempts import settled
from conformance_tests.running.phases import _message, replayed_and_passed
from conformance_tests.running.rows import PROPERTY, Rows, phase_outcome

NODE = "conformance_tests/suite/test_param.py::test_clause[push_cache.param.size.type-float]"
META = {"clauses": ["push_cache.param.size.type"], "level": "must", "params": {"item": "float"}, "expected": "pass",
        "waiver": None}


def report(when: str, outcome: str | None, *, rerun: int | None, status: str = "passed", message: str | None = None,
           counts: dict[str, Any] | None = None, repro: str | None = None, meta: bool = True) -> SimpleNamespace:
    """One phase's report: ``status`` is pytest's (passed, failed, rerun), ``outcome`` what the kit decided."""
    data: dict[str, Any] = {"result": {"outcome": outcome, "message": message, "repro": repro}}
    if meta:
        data["meta"] = META
    if counts is not None:
        data["counts"] = counts
    rep = SimpleNamespace(nodeid=NODE, when=when, outcome=status, duration=0.5, longrepr=None,
                          user_properties=[(PROPERTY, data)])
    if rerun is not None:
        rep.rerun = rerun
    return rep


def attempt(rows: Rows, index: int | None, outcome: str, message: str | None = None, *, last: bool) -> None:
    """The three phases of one attempt whose call ends in ``outcome`` (its failing phase is marked ``rerun``
    unless it is the last attempt)."""
    failing = outcome != "passed"
    rows.add(report("setup", None, rerun=index))
    rows.add(report("call", outcome, rerun=index, message=message, repro=f"repro of {message}" if failing else None,
                    status=("failed" if last else "rerun") if failing else "passed"))
    rows.add(report("teardown", None, rerun=index, counts={"push_calls": 1, "layouts": [f"L{index}"]}))


def test_a_test_run_once_has_the_row_it_always_had():
    rows = Rows()
    attempt(rows, None, "failed", "bytes differ", last=True)
    (row,) = rows.finished()
    assert row["outcome"] == "failed" and row["message"] == "bytes differ" and "attempts" not in row, row
    assert rows.attempts == {}


def test_failed_then_passed_is_flaky_and_keeps_the_failing_attempt():
    rows = Rows()
    attempt(rows, 0, "failed", "bytes differ at 3", last=False)
    attempt(rows, 1, "passed", last=True)
    (row,) = rows.finished()
    assert row["outcome"] == "flaky", row
    assert row["attempts"] == [{"outcome": "failed", "message": "bytes differ at 3"}, {"outcome": "passed"}]
    assert (row["message"], row["repro"]) == ("bytes differ at 3", "repro of bytes differ at 3")
    assert row["duration_s"] == pytest.approx(3.0)  # six phases of 0.5 s: the time both attempts took
    assert rows.push_calls == 2 and rows.layouts == {"L0", "L1"}  # what both attempts did to the backend


def test_an_error_then_a_pass_is_flaky():
    rows = Rows()
    rows.add(report("setup", "error", rerun=0, status="rerun", message="cluster would not open"))
    rows.add(report("teardown", None, rerun=0))
    attempt(rows, 1, "passed", last=True)
    (row,) = rows.finished()
    assert row["outcome"] == "flaky" and row["message"] == "cluster would not open"
    assert [a["outcome"] for a in row["attempts"]] == ["error", "passed"]


def test_failing_on_every_attempt_stays_failed_and_is_its_last_attempt():
    rows = Rows()
    attempt(rows, 0, "failed", "first", last=False)
    attempt(rows, 1, "error", "second", last=False)
    attempt(rows, 2, "failed", "third", last=True)
    (row,) = rows.finished()
    assert (row["outcome"], row["message"], row["repro"]) == ("failed", "third", "repro of third"), row
    assert row["attempts"] == [{"outcome": "failed", "message": "first"}, {"outcome": "error", "message": "second"},
                               {"outcome": "failed", "message": "third"}]


def test_a_row_whose_process_died_takes_its_clauses_from_the_next_attempt():
    """Under pytest-xdist a worker's crash is a report with no kit data (an error row without clauses); the test
    then runs again on another worker, which says what it checks."""
    rows = Rows()
    crash = SimpleNamespace(nodeid=NODE, when="call", outcome="rerun", duration=0.0, longrepr="worker 'gw0' crashed",
                            longreprtext="worker 'gw0' crashed", user_properties=[], rerun=0)
    rows.add(crash)
    assert rows.without_clauses == [NODE]
    attempt(rows, 1, "passed", last=True)
    (row,) = rows.finished()
    assert row["outcome"] == "flaky" and row["clauses"] == META["clauses"] and rows.without_clauses == []
    assert row["attempts"][0]["outcome"] == "error" and "crashed" in row["attempts"][0]["message"]


def test_settled_lists_only_attempts_that_decided_something():
    row = {"outcome": None, "message": None, "repro": None, "hypothesis": None, "push": None}
    earlier = [{"outcome": "failed", "message": "m", "repro": None, "hypothesis": None, "push": None}]
    out = settled(row, earlier)  # interrupted before the rerun decided anything
    assert out["outcome"] == "failed" and out["attempts"] == [{"outcome": "failed", "message": "m"}]


# ------------------------------------------------------------------------------------------------ hypothesis


def _flaky_failure() -> pytest.CallInfo[None]:
    calls = iter(range(10_000))

    @settings(database=None, derandomize=True, max_examples=20)
    @given(st.integers())
    def fails_only_on_its_fourth_call(x: int) -> None:
        assert next(calls) != 3, f"bytes differ for {x}"

    return pytest.CallInfo.from_call(fails_only_on_its_fourth_call, when="call")


def test_a_failing_example_hypothesis_could_not_reproduce_is_flaky():
    call = _flaky_failure()
    assert replayed_and_passed(call), call.excinfo
    rep = SimpleNamespace(when="call", failed=True, passed=False, skipped=False, longreprtext="")
    message = _message(call, rep)  # type: ignore[arg-type]
    lines = message.splitlines()
    assert lines[0] == "flaky: the example failed, then passed when hypothesis ran it again", lines[:3]
    assert lines[1].startswith("bytes differ for "), lines[:3]  # the failure it saw, then hypothesis's own text
    assert any(line.startswith("FlakyFailure: ") for line in lines), message
    for level in ("must", "should", "may"):
        assert phase_outcome(rep, level, message, False, flaky=True) == ("flaky", message)


def test_a_reproducible_failure_is_not_flaky():
    def fails() -> None:
        raise AssertionError("bytes differ")

    call = pytest.CallInfo.from_call(fails, when="call")
    assert not replayed_and_passed(call)
    rep = SimpleNamespace(when="call", failed=True, passed=False, skipped=False, longreprtext="")
    assert phase_outcome(rep, "must", "bytes differ", False) == ("failed", "bytes differ")


def test_an_example_that_ended_earlier_on_a_later_run_says_what_ended_it():
    """A run of an example that fails sooner than an earlier run of it (timing; a backend whose state carried
    over) makes hypothesis raise FlakyStrategyDefinition, whose text says only that the draws differed: the row's
    message also gives the exception that ended that run."""
    calls = iter(range(10_000))

    @settings(database=None, derandomize=True, max_examples=1, phases=[Phase.generate, Phase.shrink])
    @given(st.data())
    def fails_sooner_when_run_again(data: st.DataObject) -> None:
        data.draw(st.integers(0, 10))
        assert next(calls) == 0, "bytes differ at step 1"
        data.draw(st.integers(0, 10))
        raise AssertionError("bytes differ at step 2")

    call = pytest.CallInfo.from_call(fails_sooner_when_run_again, when="call")
    assert call.excinfo is not None and call.excinfo.typename == "FlakyStrategyDefinition", call.excinfo
    assert not replayed_and_passed(call)
    rep = SimpleNamespace(when="call", failed=True, passed=False, skipped=False, longreprtext="")
    message = _message(call, rep)  # type: ignore[arg-type]
    assert message.startswith("FlakyStrategyDefinition: "), message
    assert "this run of the example ended earlier, raising bytes differ at step 1" in message, message


def test_a_history_whose_replay_drew_differently_names_what_its_first_run_failed_with():
    """A failed history that hypothesis replays, and whose replay draws less (its failure came from timing, or
    from a backend's state), ends in FlakyStrategyDefinition with no failure on that run: the row's message gives
    the failure of the first run, which the reader needs and hypothesis's text leaves out."""
    from hypothesis.stateful import RuleBasedStateMachine, rule

    from conformance_tests.procedures.histories import run_machine
    from conformance_tests.procedures.histories.delays import Turns

    runs = iter(range(10_000))

    class History(RuleBasedStateMachine):
        turns = Turns()

        def __init__(self) -> None:
            super().__init__()
            self.index, self.first = self.turns.take(), next(runs) == 0

        @rule(data=st.data())
        def transfer(self, data: st.DataObject) -> None:
            data.draw(st.integers(0, 10), label="entry")
            if self.first:  # the first run draws on and fails; the replay, on a backend in another state, stops
                data.draw(st.integers(0, 10), label="layers")
                raise AssertionError("pull_cache.history.valid_pulls: 12 bytes changed outside the destination")

        def teardown(self) -> None:
            self.turns.ended(self.index, sys.exc_info()[1])

    config = settings(database=None, derandomize=True, max_examples=1, stateful_step_count=2,
                      phases=[Phase.generate])
    call = pytest.CallInfo.from_call(lambda: run_machine(History, config), when="call")
    assert call.excinfo is not None and call.excinfo.typename == "FlakyStrategyDefinition", call.excinfo
    rep = SimpleNamespace(when="call", failed=True, passed=False, skipped=False, longreprtext="")
    message = _message(call, rep)  # type: ignore[arg-type]
    assert ("the first run of this history failed, raising AssertionError: pull_cache.history.valid_pulls: 12 "
            "bytes changed outside the destination") in message, message

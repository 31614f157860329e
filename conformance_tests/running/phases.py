"""Each test's phases: its deadline and a new backend process where the last was lost (setup), the time budget
(teardown), and its outcome: a setup error is an ``error`` row, a failing ``should`` test is ``incompatible``
(reported, not blocking), a failing example that passes when hypothesis runs it again is ``flaky``; every phase's
report carries the row data the report is built from (rows.py)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import pytest

from ..selecting.collection import EXPECTED, LEVEL, WAIVER, checked_clauses, clause_ids
from ..spec import Level
from ..testbed.errors import HarnessError
from .rows import PROPERTY as ROW_PROPERTY
from .rows import carried, phase_outcome, plain
from .state import RunState

#: a test's deadline for backend calls, as a share of its pytest-timeout bound (the kit acts first)
DEADLINE_SHARE = 0.9
#: the outcomes of a test that fail a clause, for --until-failed (an incompatible: a should clause's)
UNTIL_FAILED_OUTCOMES = ("failed", "flaky", "incompatible")
#: the characters of a failure message a row keeps
MESSAGE_CHARS = 8000


def traceability_problem(clause_ids: Iterable[str], known: set[str]) -> str | None:
    """Why a test breaks traceability (it names no clause, or a clause the spec lacks), or None."""
    ids = list(clause_ids)
    if not ids:
        return "names no spec clause (mark it with @pytest.mark.clause(<id>))"
    unknown = [c for c in ids if c not in known]
    if unknown:
        return "names clause(s) the spec does not have: " + ", ".join(unknown)
    return None


def broken_clauses(exc: BaseException) -> list[str]:
    """The clauses a failure names (a ClauseFailure's ``clause_id``), also inside an exception group (hypothesis
    reports a failure that did not replay the same way as one, with the failures it saw)."""
    found = [exc.clause_id] if isinstance(getattr(exc, "clause_id", None), str) else []  # type: ignore[attr-defined]
    for inner in getattr(exc, "exceptions", None) or ():
        if isinstance(inner, BaseException):
            found += broken_clauses(inner)
    return list(dict.fromkeys(found))


def test_timeout(item: pytest.Item) -> float:
    """The test's pytest-timeout bound (its ``timeout`` mark, else --timeout), 0 when it has none."""
    mark = item.get_closest_marker("timeout")
    value = mark.args[0] if mark is not None and mark.args else item.config.getoption("timeout", None)
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def is_setup_error(report: pytest.TestReport) -> bool:
    """The scenario could not be built or observed (a HarnessError): an error, never a verdict."""
    return any(name == "setup_error" for name, _ in getattr(report, "user_properties", None) or [])


def _report_level(report: pytest.TestReport) -> str | None:
    for name, value in getattr(report, "user_properties", None) or []:
        if name == "level":
            return str(value)
    return None


def _level_blocks(report: pytest.TestReport) -> bool:
    """Whether the test's level blocks a certification (a report without a level, not one of the kit's, does)."""
    level = _report_level(report)
    return level is None or Level(level).blocking


def is_incompatible(report: pytest.TestReport) -> bool:
    """A should-level test whose check failed: reported as "incompatible", never as a failure."""
    return (report.when == "call" and report.failed and not hasattr(report, "wasxfail")
            and not _level_blocks(report) and not is_setup_error(report))


def replayed_and_passed(call: pytest.CallInfo[Any] | None) -> bool:
    """Hypothesis ran the failing example again and it passed (FlakyFailure): the test is flaky, as one that fails
    and then passes on a rerun is (certify --reruns). Other Flaky errors (a strategy drawing differently) say
    nothing of a failure that went away, and stay what they were."""
    from hypothesis import errors

    flaky = getattr(errors, "FlakyFailure", errors.Flaky)  # older hypothesis raised Flaky itself for this
    return call is not None and call.excinfo is not None and call.excinfo.errisinstance(flaky)


def _exception_text(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, AssertionError) or type(exc).__name__ in ("Failed", "Skipped", "XFailed"):
        return getattr(exc, "msg", None) or text
    return f"{type(exc).__name__}: {text}"


def is_flaky(report: pytest.TestReport) -> bool:
    """A test's call that passed after an earlier attempt failed (pytest-rerunfailures numbers the attempts), or
    one whose failing example passed when hypothesis ran it again: shown as FLAKY (K), not as a pass or failure."""
    if report.when != "call":
        return False
    if report.passed and (getattr(report, "rerun", 0) or 0) > 0:
        return True
    data = carried(report)
    return bool(report.failed and data and (data.get("result") or {}).get("outcome") == "flaky")


def _ended_earlier(exc: BaseException) -> str | None:
    """What ended a run of an example that hypothesis found drawing differently from an earlier run of it
    (FlakyStrategyDefinition): hypothesis raises it while handling that run's own exception, which is then the
    first thing a reader needs (a failure that came earlier on this run: timing, or a backend whose state
    carried over), and which its text alone does not give."""
    from hypothesis.errors import FlakyStrategyDefinition

    cause = exc.__context__
    if not isinstance(exc, FlakyStrategyDefinition) or cause is None or isinstance(cause, FlakyStrategyDefinition):
        return None
    return f"this run of the example ended earlier, raising {_exception_text(cause)}"


def _message(call: pytest.CallInfo[Any] | None, rep: pytest.TestReport) -> str:
    if call is not None and call.excinfo is not None:
        exc = call.excinfo.value
        text = _exception_text(exc)
        if replayed_and_passed(call):
            # the failure hypothesis saw first leads; its own text ("produces unreliable results") follows
            inner = [_exception_text(e) for e in getattr(exc, "exceptions", ())]
            text = "\n".join(["flaky: the example failed, then passed when hypothesis ran it again", *inner, text])
        ended = _ended_earlier(exc)
        if ended is not None:
            text += "\n" + ended
        notes = getattr(exc, "__notes__", None) or []
        if notes:
            text += "\n" + "\n".join(str(n) for n in notes)
        return text[:MESSAGE_CHARS]
    return (rep.longreprtext or "")[:MESSAGE_CHARS]


def _params(item: pytest.Item) -> dict[str, Any]:
    """The test's parameters as a row shows them: its clause and item key."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return {}
    out: dict[str, Any] = {}
    for name, value in callspec.params.items():
        for attr in ("id", "key"):  # a clause by its id, an item by its key
            if isinstance(getattr(value, attr, None), str):
                out[name] = getattr(value, attr)
                break
        else:
            out[name] = value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
    return out


class TestPhases:
    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, state: RunState) -> None:
        self.state = state

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        state = self.state
        run = state.run
        run.begin_test()  # each test's teardown report carries what it did (rows.py)
        run.deadlines.start_test(test_timeout(item) * DEADLINE_SHARE)
        if state.isolation == "process":
            self._revive()
        problem = traceability_problem(checked_clauses(item), {c.id for c in run.spec.clauses})
        if problem:
            pytest.fail(f"traceability: {item.nodeid} {problem}", pytrace=False)

    def _revive(self) -> None:
        """A new backend process when the last test lost it (crashed, or killed for hanging)."""
        from ..isolation import StartError

        run = self.state.run
        try:
            if run.backend.revive():
                run.counters.restarts += 1
        except StartError as exc:
            pytest.fail(f"the backend's process could not be restarted: {exc}", pytrace=False)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Any:
        yield
        state = self.state
        state.run.deadlines.end_test()
        if state.until_failed and not item.session.shouldstop and item.nodeid in state.rows.by_id:
            row = state.rows.row(item.nodeid)  # (in a serial run: a pytest-xdist worker keeps no rows)
            if row.get("outcome") in UNTIL_FAILED_OUTCOMES:
                state.failed_of_until |= set(row.get("failed_clauses") or row.get("clauses") or ()) & state.until_failed
            if state.failed_of_until == state.until_failed:
                item.session.shouldstop = f"--until-failed: {', '.join(sorted(state.until_failed))} failed"
                return
        if not state.max_time or state.out_of_time:
            return
        spent = time.monotonic() - state.t0
        if spent >= state.max_time:
            # the test that ran out the budget has finished; the ones not started are recorded as not run
            state.out_of_time = f"--max-time {state.max_time:g}s spent ({spent:.0f}s)"
            item.session.shouldstop = state.out_of_time

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        if isinstance(report, pytest.TestReport) and report.when == "call" and report.failed and is_setup_error(report):
            return "error", "E", ("ERROR", {"red": True})
        if isinstance(report, pytest.TestReport) and is_flaky(report):
            return "flaky", "K", ("FLAKY", {"yellow": True})
        if isinstance(report, pytest.TestReport) and is_incompatible(report):
            return "incompatible", "I", ("INCOMPATIBLE", {"yellow": True})
        return None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
        outcome = yield
        rep: pytest.TestReport = outcome.get_result()
        run = self.state.run
        if rep.failed and rep.when == "call" and call.excinfo is not None and call.excinfo.errisinstance(HarnessError):
            # a new list: the report's list is the item's, shared with the other phases
            rep.user_properties = [*rep.user_properties, ("setup_error", str(getattr(call.excinfo.value, "step", "")))]
        level = item.stash.get(LEVEL, Level.MUST).value
        message = _message(call, rep) if rep.failed or hasattr(rep, "wasxfail") else None
        result: dict[str, Any] = {}
        result["outcome"], result["message"] = phase_outcome(rep, level, message, is_setup_error(rep),
                                                             flaky=replayed_and_passed(call) if rep.failed else False)
        if result["outcome"] in ("failed", "incompatible", "xfailed", "flaky") and call.excinfo is not None:
            broken = broken_clauses(call.excinfo.value)  # judging.ClauseFailure: the promises that broke
            if broken:
                result["failed_clauses"] = broken
        if result["outcome"] in ("failed", "incompatible", "xfailed", "error", "flaky"):
            testbed = run.last_testbed
            if testbed is not None:
                ids = ", ".join(checked_clauses(item))
                result["repro"] = testbed.repro(f"Reproduce {item.name} ({ids}) on backend {run.target}")
            if result["outcome"] != "error":
                result["hypothesis"] = self._hypothesis_info(item, result["message"] or "")
        data: dict[str, Any] = {"meta": self._meta(item), "result": plain(result)}
        if rep.when == "teardown":
            counters = run.counters
            data["counts"] = plain({"push_calls": counters.push_calls, "layouts": sorted(counters.layouts),
                                    "coverage": sorted(counters.coverage),
                                    "restarts": counters.restarts, "histories": counters.histories,
                                    "history_steps": counters.history_steps, "history_pushes": counters.history_pushes,
                                    "push_features": counters.push_features, "last_push": counters.last_push})
        rep.user_properties = [*rep.user_properties, (ROW_PROPERTY, data)]

    def _hypothesis_info(self, item: pytest.Item, message: str) -> dict[str, Any] | None:
        if not getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            return None
        example = None
        lines = message.splitlines()
        for i, line in enumerate(lines):
            if line.startswith(("Falsifying example", "Failing test case")):
                example = "\n".join(lines[i:]).strip()
                break
        return {"example": example, "seed": self.state.seed, "profile": self.state.profile}

    @staticmethod
    def _meta(item: pytest.Item) -> dict[str, Any]:
        """What a row knows about its test before it runs (carried in every report, see rows.py)."""
        return plain({
            "clauses": list(checked_clauses(item) or clause_ids(item)),
            "level": item.stash.get(LEVEL, Level.MUST).value,
            "params": _params(item),
            "expected": item.stash.get(EXPECTED, "pass"),
            "waiver": item.stash.get(WAIVER, None),
        })

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # where the reports arrive (the serial process, or the pytest-xdist controller): one row per test
        state = self.state
        if state.is_worker:
            return
        row = state.rows.add(report)
        waiver = row.get("waiver")
        if report.when == "setup" and waiver and state.expectations is not None:
            hits = state.expectations.entries[int(waiver["entry"])].hits
            if report.nodeid not in hits:  # once per test, however many attempts it took (--reruns)
                hits.append(report.nodeid)

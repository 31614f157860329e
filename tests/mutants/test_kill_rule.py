"""The runner's kill rule, on hand-made reports: a must mutant needs NOT CERTIFIED and a failed must target; a
should (compatibility) mutant needs an incompatible target. Anything else is not a kill."""

from __future__ import annotations

import pytest

from mutants.catalog import Mutant
from mutants.run import Result, judge

MUST = Mutant("m", "a must defect", ("push_cache.x.must",))
SHOULD = Mutant("s", "a should defect", ("push_cache.x.must.status",), breaks="should")


def _report(label: str, **outcomes: str) -> dict:
    return {"verdict": {"label": label},
            "clauses": [{"id": cid.replace("__", "."), "outcome": o} for cid, o in outcomes.items()]}


@pytest.mark.parametrize(("mutant", "report", "status"), [
    (MUST, _report("NOT CERTIFIED", push_cache__x__must="failed"), "killed"),
    (MUST, _report("CERTIFIED", push_cache__x__must="passed", push_cache__x__must__status="incompatible"),
     "unrelated"),
    (MUST, _report("NOT CERTIFIED", push_cache__x__must="passed", push_cache__y__other="failed"), "unrelated"),
    (MUST, _report("CERTIFIED", push_cache__x__must="passed"), "survived"),
    (SHOULD, _report("CERTIFIED", push_cache__x__must__status="incompatible"), "killed"),
    (SHOULD, _report("NOT CERTIFIED", push_cache__x__must="failed"), "unrelated"),
    (SHOULD, _report("CERTIFIED", push_cache__x__must__status="passed"), "survived"),
])
def test_kill_rule(mutant, report, status):
    result = Result(mutant.name, mutant.defect, list(mutant.targets), mutant.breaks, verdict="?")
    judge(mutant, report, result)
    assert result.status == status, (mutant.breaks, report, result)
    assert result.verdict == report["verdict"]["label"]
    assert (result.caught_by_target == list(mutant.targets)) == (status == "killed"), result


HISTORIES = Mutant("h", "a defect only histories show", ("push_cache.x.must",), by="histories")
PROCEDURES = {"push_cache.x.must": "call", "push_cache.history.valid": "history"}


def _with_tests(label: str, *tests: tuple[str, str, list[str]]) -> dict:
    """A report whose tests are (clause of the test, outcome, the clauses it blames)."""
    report = _report(label, push_cache__x__must="failed")
    report["tests"] = [{"id": f"t{i}", "params": {"clause": clause}, "outcome": outcome, "clauses": blamed,
                        "failed_clauses": blamed} for i, (clause, outcome, blamed) in enumerate(tests)]
    return report


@pytest.mark.parametrize(("mutant", "tests", "status", "parts"), [
    (HISTORIES, [("push_cache.history.valid", "failed", ["push_cache.x.must"])], "killed", ["histories"]),
    (HISTORIES, [("push_cache.history.valid", "failed", ["push_cache.x.must"]),
                 ("push_cache.x.must", "failed", ["push_cache.x.must"])], "not_only_histories", ["clauses", "histories"]),
    (MUST, [("push_cache.x.must", "failed", ["push_cache.x.must"])], "killed", ["clauses"]),
    (MUST, [("push_cache.history.valid", "failed", ["push_cache.x.must"])], "killed", ["histories"]),
])
def test_the_matrix_says_which_part_killed_a_mutant(mutant, tests, status, parts):
    result = Result(mutant.name, mutant.defect, list(mutant.targets), mutant.breaks, verdict="?", by=mutant.by)
    judge(mutant, _with_tests("NOT CERTIFIED", *tests), result, PROCEDURES)
    assert (result.status, result.killed_by) == (status, parts)

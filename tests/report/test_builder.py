"""build_report: clause outcomes, counts and the verdict, from hand-made rows."""

from __future__ import annotations

import numpy as np
import pytest

from conformance_tests.report import ReportError, build_report, clause_outcome, validate_report

P = "push_cache."


def by_id(report):
    return {c["id"]: c for c in report["clauses"]}


def test_every_outcome_counts(every_report):
    assert every_report["summary"] == {
        "tests": 13,
        "passed": 4,
        "failed": 2,
        "flaky": 1,
        "incompatible": 1,
        "xfailed": 1,
        "xpassed": 1,
        "skipped": 1,
        "not_supported": 1,
        "error": 1,
    }
    cs = every_report["clause_summary"]
    assert cs["clauses"] == 12 and cs["covered"] == 10
    assert (cs["failed"], cs["flaky"], cs["incompatible"], cs["xfailed"], cs["passed"]) == (3, 1, 1, 1, 3)
    assert (cs["not_supported"], cs["skipped"], cs["untested"]) == (1, 0, 2)


def test_every_outcome_clause_outcomes(every_report):
    outcomes = {cid.removeprefix(P): c["outcome"] for cid, c in by_id(every_report).items()}
    assert outcomes == {
        "param.src_batch_index.type": "failed",
        "param.size.negative": "passed",
        "data.bytes_equal": "passed",
        "data.layer_range": "incompatible",
        "timeout.delay": "not_supported",
        "remote.unknown_cache": "xfailed",
        "remote.unlinked": "passed",
        "order.tensor_order": "failed",
        "config.mem_pool": "failed",
        "safety.guard_bytes": "untested",
        "types.dtype_sizes": "untested",
        "timeout.retry_once": "flaky",
    }
    clauses = by_id(every_report)
    assert clauses[P + "safety.guard_bytes"]["covered"] is False
    assert clauses[P + "safety.guard_bytes"]["tests"] == []
    assert len(clauses[P + "param.src_batch_index.type"]["tests"]) == 2


def test_every_outcome_verdict(every_report):
    verdict = every_report["verdict"]
    assert verdict["certified"] is False
    assert verdict["label"] == "NOT CERTIFIED" and verdict["kind"] == "not_certified"
    # clause order; a failing may-test blocks; a not_supported or should clause does not; a must clause whose
    # only test was waived (xfailed) has no passing test and blocks too; a flaky must test blocks as a failure does
    assert verdict["blocking"] == [
        P + "param.src_batch_index.type",
        P + "remote.unknown_cache",
        P + "order.tensor_order",
        P + "config.mem_pool",
        P + "safety.guard_bytes",
        P + "timeout.retry_once",
    ]
    assert verdict["no_passing"] == [P + "remote.unknown_cache"]
    assert verdict["unchecked"] == [P + "timeout.delay"]
    assert len(verdict["blocking_tests"]) == 4
    assert verdict["flaky_tests"] == [t["id"] for t in every_report["tests"] if t["outcome"] == "flaky"]
    assert "1 must/may test(s) flaky: failed, then passed when run again" in "; ".join(verdict["reasons"])
    assert verdict["compatibility"] == 0.5  # layer_range incompatible, unlinked passed, dtype_sizes untested


def test_every_outcome_expectations(every_report):
    exp = every_report["expectations"]
    assert exp["unmatched"] == ["conformance_tests/suite/test_gone.py::test_x"]
    assert exp["unexpected_passes"] == [t["id"] for t in every_report["tests"] if t["outcome"] == "xpassed"]


def test_empty_run_blocks_on_untested_must_clauses(empty_report, kit):
    assert empty_report["summary"]["tests"] == 0
    assert all(c["outcome"] == "untested" and not c["covered"] for c in empty_report["clauses"])
    must = [c["id"] for c in kit.CLAUSES if c["level"] == "must"]
    assert empty_report["verdict"]["blocking"] == must
    assert empty_report["verdict"]["compatibility"] is None
    validate_report(empty_report)


def test_no_clauses_certifies_nothing(kit):
    report = kit.make_report([], clauses=[])
    assert report["verdict"]["certified"] is False and report["verdict"]["blocking"] == []
    assert report["warnings"]


def test_all_passing_certified(passing_report):
    verdict = passing_report["verdict"]
    assert verdict == {
        "certified": True,
        "label": "CERTIFIED",
        "kind": "certified",
        "partial": False,
        "unchecked": [],
        "blocking": [],
        "blocking_tests": [],
        "no_passing": [],
        "waived_must_tests": [],
        "flaky_tests": [],
        "compatibility": 1.0,
        "reasons": [],
    }
    assert passing_report["completeness"]["full"] is True


def test_should_failures_and_not_supported_do_not_block(kit):
    rows = [kit.row(c["id"], "ok", "passed", c["level"]) for c in kit.CLAUSES]
    rows[3]["outcome"] = "incompatible"  # data.layer_range, should
    rows[4]["outcome"] = "not_supported"  # timeout.delay, must
    report = kit.make_report(rows)
    assert report["verdict"]["certified"] is True
    assert report["verdict"]["compatibility"] == pytest.approx(2 / 3)
    # a must clause none of whose tests the backend's capabilities allow is listed, and the label says so
    assert report["verdict"]["label"] == "CERTIFIED (DECLARED CAPABILITIES)"
    assert report["verdict"]["unchecked"] == [kit.CLAUSES[4]["id"]]


@pytest.mark.parametrize(
    ("level", "outcomes", "expected"),
    [
        ("must", [], "untested"),
        ("must", ["passed", "failed"], "failed"),
        ("must", ["passed", "error"], "failed"),
        ("may", ["failed"], "failed"),
        ("should", ["incompatible", "passed"], "incompatible"),
        ("should", ["error"], "incompatible"),
        ("must", ["xfailed", "passed"], "xfailed"),
        ("must", ["xpassed"], "passed"),
        ("must", ["passed", "skipped", "not_supported"], "passed"),
        ("must", ["not_supported", "not_supported"], "not_supported"),
        ("must", ["not_supported", "skipped"], "skipped"),
        ("must", ["skipped"], "skipped"),
    ],
)
def test_clause_outcome_rule(level, outcomes, expected):
    assert clause_outcome(level, outcomes) == expected


def test_rows_are_made_json_safe_and_defaults_filled(kit):
    rows = [
        {
            "id": "t::x",
            "clauses": [kit.CLAUSES[0]["id"]],
            "outcome": "passed",
            "params": {"shape": (2, 8), "n": np.int64(3), "f": np.float32(0.5), "o": object()},
        }
    ]
    report = kit.make_report(rows)
    test = report["tests"][0]
    assert test["params"]["shape"] == [2, 8] and test["params"]["n"] == 3 and test["params"]["f"] == 0.5
    assert isinstance(test["params"]["o"], str)
    assert test["level"] == "must"  # taken from the clause
    assert (test["expected"], test["message"], test["repro"], test["hypothesis"]) == (
        "pass",
        None,
        None,
        None,
    )


def test_unknown_clause_is_a_warning(kit):
    rows = [kit.row("push_cache.param.not_in_release", "x", "passed", "must")]
    report = kit.make_report(rows)
    assert any("push_cache.param.not_in_release" in w for w in report["warnings"])


def test_failing_test_on_unknown_clause_still_blocks(kit):
    rows = [kit.row(c["id"], "ok", "passed", c["level"]) for c in kit.CLAUSES]
    rows.append(kit.row("push_cache.param.not_in_release", "x", "failed", "must"))
    report = kit.make_report(rows)
    assert report["verdict"]["blocking"] == ["push_cache.param.not_in_release"]


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda rows: rows[0].pop("id"), "$.tests[0]: 'id'"),
        (lambda rows: rows[1].update(outcome="exploded"), "$.tests[1].outcome"),
        (lambda rows: rows[2].update(level="must-ish"), "$.tests[2].level"),
    ],
)
def test_bad_rows_give_one_line_errors(kit, mutate, where):
    rows = kit.every_outcome_rows()
    mutate(rows)
    with pytest.raises(ReportError) as info:
        build_report(kit.HEADER, rows, kit.CLAUSES, {})
    message = str(info.value)
    assert message.startswith(where) and "\n" not in message


def test_bad_header_names_the_field(kit):
    header = {**kit.HEADER, "backend": {"version": "1", "capabilities": {}}}
    with pytest.raises(ReportError, match=r"^\$\.backend: 'name' is a required property"):
        build_report(header, [], kit.CLAUSES, {})


def test_builder_does_not_mutate_inputs(kit):
    rows, clauses = kit.every_outcome_rows(), list(kit.CLAUSES)
    before = repr((rows, clauses, kit.HEADER))
    build_report(kit.HEADER, rows, clauses, {})
    assert repr((rows, clauses, kit.HEADER)) == before


def test_a_test_that_names_the_clauses_it_failed_fails_only_those(kit):
    """A history checks many clauses and breaks one: the report attributes its failure to that one."""
    history = kit.row("push_cache.data.bytes_equal", "serving", "failed", "must",
                      message="clause push_cache.remote.unknown_cache [history step 3]",
                      failed_clauses=["push_cache.remote.unknown_cache"])
    history["clauses"] = ["push_cache.data.bytes_equal", "push_cache.remote.unknown_cache",
                          "push_cache.safety.guard_bytes"]
    rows = [kit.row(c["id"], "ok", "passed", c["level"]) for c in kit.CLAUSES] + [history]
    report = kit.make_report(rows)
    outcomes = {c["id"]: c["outcome"] for c in report["clauses"]}
    assert outcomes["push_cache.remote.unknown_cache"] == "failed"
    assert outcomes["push_cache.data.bytes_equal"] == "passed"
    assert outcomes["push_cache.safety.guard_bytes"] == "passed"
    assert report["verdict"]["blocking"] == ["push_cache.remote.unknown_cache"]
    row = next(t for t in report["tests"] if t.get("failed_clauses"))
    assert row["failed_clauses"] == ["push_cache.remote.unknown_cache"]
    validate_report(report)


def test_a_failed_clause_of_another_level_is_judged_at_its_own(kit):
    history = kit.row("push_cache.data.bytes_equal", "serving", "failed", "must",
                      failed_clauses=["push_cache.order.tensor_order"])
    history["clauses"] = ["push_cache.data.bytes_equal", "push_cache.order.tensor_order"]
    report = kit.make_report([history])
    outcomes = {c["id"]: c["outcome"] for c in report["clauses"]}
    assert outcomes == {**outcomes, "push_cache.order.tensor_order": "failed", "push_cache.data.bytes_equal": "passed"}

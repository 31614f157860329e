"""The likely-cause analysis (conformance_tests/report/causes.py) and the summary's size: a predicate that every
failing push of a group satisfies and no passing push does, found greedily; and summary.md within a PR comment's
65,536 characters however many failures, each failure message kept with its byte diff."""

from __future__ import annotations

from conformance_tests.judging.push_features import RAISED, RETURNED, SLICE, merge
from conformance_tests.report.causes import likely_causes
from conformance_tests.report.markdown import MAX_CHARS, to_markdown


def _stats(pushes):
    out: dict = {}
    for p in pushes:
        merge(out, p)
    return out


def _failing(i, push, cls=SLICE):
    return {"id": f"t{i}", "outcome": "failed", "clauses": [f"push_cache.data.c{i % 2}"], "message": f"m{i}",
            "push": {**push, "class": cls}}


def test_a_feature_no_passing_push_shares_is_the_cause():
    passing = {SLICE: _stats([{"src_batch_index": 0, "dtype": "DT_FLOAT"}, {"src_batch_index": 0, "dtype": "DT_INT8"}])}
    failing = [_failing(i, {"src_batch_index": i + 1, "dtype": "DT_FLOAT"}) for i in range(5)]
    (cause,) = likely_causes(failing, passing)
    assert cause["predicate"] == "src_batch_index > 0" and cause["failures"] == 5
    assert cause["statement"] == "all 5 failing pushes have src_batch_index > 0; no passing push does"
    assert cause["clauses"] == ["push_cache.data.c0", "push_cache.data.c1"] and cause["first_message"] == "m0"


def test_two_defects_give_two_groups_and_the_unexplained_are_said_so():
    passing = {SLICE: _stats([{"a": 0, "b": "x"}, {"a": 1, "b": "x"}]), RAISED: _stats([{"a": 1, "b": "y"}])}
    failing = ([_failing(i, {"a": 9, "b": "x"}) for i in range(3)] + [_failing(3, {"a": 0, "b": "z"})]
               + [_failing(4, {"a": 1, "b": "y"}, RAISED)])
    groups = likely_causes(failing, passing)
    assert [g["predicate"] for g in groups] == ["a > 1", "b == z", None]
    assert groups[-1]["tests"] == ["t4"] and "shares no feature" in groups[-1]["statement"]


def test_a_feature_the_passing_pushes_took_too_many_values_of_is_only_compared_by_its_extremes():
    passing = {SLICE: _stats([{"n": i} for i in range(100)])}
    (cause,) = likely_causes([_failing(0, {"n": 500})], passing)
    assert cause["predicate"] == "n > 99"


def test_a_cause_names_only_the_clauses_its_tests_failed_not_every_clause_they_check():
    passing = {SLICE: _stats([{"src_batch_index": 0}])}
    history = {**_failing(0, {"src_batch_index": 1}), "clauses": ["push_cache.history.valid_pushes",
               "push_cache.remote.not_linked", "push_cache.timeout.exceeded"],
               "failed_clauses": ["push_cache.history.valid_pushes"]}
    single = _failing(1, {"src_batch_index": 1})
    (cause,) = likely_causes([history, single], passing)
    assert cause["clauses"] == ["push_cache.history.valid_pushes", "push_cache.data.c1"], cause


def test_no_share_no_feature_cause_holds_a_push_an_earlier_cause_explains():
    """A failure of another class (it returned, its slice not checked) whose push has the first cause's feature,
    while passing pushes of its class have it too: it joins that cause, said as such, never "no feature"."""
    passing = {SLICE: _stats([{"src_batch_index": 0, "n": 1}]),
               RETURNED: _stats([{"src_batch_index": 1, "n": 1}, {"src_batch_index": 0, "n": 1}])}
    failing = [_failing(i, {"src_batch_index": 1, "n": 1}) for i in range(3)]
    failing += [_failing(3, {"src_batch_index": 1, "n": 1}, RETURNED), _failing(4, {"src_batch_index": 0, "n": 1},
                                                                                  RETURNED)]
    groups = likely_causes(failing, passing)
    assert [g["predicate"] for g in groups] == ["src_batch_index > 0", None], groups
    first, rest = groups
    assert first["tests"] == ["t0", "t1", "t2", "t3"] and first["failures"] == 4
    assert first["statement"].startswith("all 3 failing pushes have src_batch_index > 0; no passing push does")
    assert "1 more failing push (returned) has it too" in first["statement"]
    assert rest["tests"] == ["t4"] and rest["statement"].startswith("1 of 5 failing pushes shares no feature")


def _report(failures: int) -> dict:
    diff = "    dst targeted slice tensor 0: 4 of 4 bytes differ, first at offset 0: expected cf eb got 5f 82"
    tests = [{"id": f"conformance_tests/suite/test_data.py::test_clause[push_cache.data.postcondition-{i}]",
              "clauses": ["push_cache.data.postcondition"], "level": "must", "outcome": "failed", "expected": "pass",
              "message": "clause push_cache.data.postcondition [x]\n  call: push_cache(...)\n  wrong\n" + diff
              + "\n" + "detail line\n" * 40, "repro": "x = 1\n" * 200, "hypothesis": None, "params": {},
              "waiver": None, "duration_s": 0.1, "push": None} for i in range(failures)]
    return {"verdict": {"label": "NOT CERTIFIED", "certified": False, "kind": "not_certified", "blocking":
                        ["push_cache.data.postcondition"], "reasons": ["many"], "compatibility": None},
            "summary": {"tests": failures, **{o: 0 for o in ("passed", "failed", "incompatible", "xfailed",
                                                              "xpassed", "skipped", "not_supported", "error")},
                        "failed": failures},
            "clauses": [{"id": "push_cache.data.postcondition", "level": "must", "family": "data", "title": "t",
                         "outcome": "failed", "tests": [t["id"] for t in tests]}],
            "tests": tests, "spec": {"version": "9.0.0", "sha256": "s"}, "backend": {"name": "b", "version": "1"},
            "suite": {"name": "k", "version": "0"}, "run": {"started": "now", "duration_s": 1.0,
                                                            "hypothesis_profile": "certify", "hypothesis_seed": None},
            "expectations": {"path": None, "unmatched": [], "unexpected_passes": []},
            "likely_causes": [], "blocking_details": []}


def test_the_summary_fits_a_pr_comment_and_keeps_each_shown_message_with_its_byte_diff():
    for failures in (3, 30, 300):
        text = to_markdown(_report(failures))
        assert len(text) <= MAX_CHARS <= 65_536, (failures, len(text))
        assert "bytes differ, first at offset 0: expected cf eb got 5f 82" in text
    assert "index.html" in to_markdown(_report(300))


def test_the_seed_is_said_even_when_there_is_none():
    text = to_markdown(_report(1))
    assert "seed none: derandomized" in text and "seed ` `" not in text

"""Build the canonical report (a typed :class:`~.parts.Report`) from the rows the pytest plugin collected."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from typing import Any, cast

from ..spec.levels import Level
from .causes import likely_causes
from .model import (
    BLOCKING_LEVELS,
    BLOCKING_TEST_OUTCOMES,
    CERTIFIED,
    CERTIFIED_DECLARED,
    CERTIFIED_WITH_WAIVERS,
    CLAUSE_OUTCOMES,
    LEVELS,
    NOT_CERTIFIED,
    NOT_CERTIFIED_ERRORS,
    NOT_CERTIFIED_PARTIAL,
    PARTIAL,
    PASSING_TEST_OUTCOMES,
    SCHEMA_VERSION,
    TEST_OUTCOMES,
    WAIVED_TEST_OUTCOMES,
    VerdictKind,
)
from .parts import (
    BlockingDetail,
    ClauseRow,
    ClauseSummary,
    Completeness,
    DomainCoverage,
    LeftOut,
    Report,
    Run,
    Summary,
    TestRow,
    Verdict,
    WaivedTest,
)
from .schema import ReportError, validate_report

_HEADER_SECTIONS = ("suite", "spec", "backend", "environment", "run")
#: what the builder is given: the plugin's rows, clauses and header sections, as loose mappings (it checks the keys
#: it needs and completes the rest; what it returns is typed)
RawPart = Mapping[str, Any]


def jsonable(value: Any) -> Any:
    """A JSON-safe copy of `value` (tuples become lists, numpy scalars numbers, anything else its repr)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((jsonable(v) for v in value), key=repr)
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and getattr(value, "shape", None) == ():
        return jsonable(item())
    return repr(value)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _strictest(levels: Iterable[str]) -> str | None:
    """The level a row takes from its clauses' levels, decided by the one owner (:meth:`Level.strictest`: a
    blocking level first, so {should, may} is may); None where no clause names a known level."""
    known = [Level(level) for level in levels if level in LEVELS]
    return Level.strictest(known).value if known else None


def _require(rows: list[Any], where: str, keys: tuple[str, ...]) -> None:
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise ReportError(f"$.{where}[{i}]: must be an object, not {type(row).__name__}")
        for key in keys:
            if key not in row:
                raise ReportError(f"$.{where}[{i}]: {key!r} is a required property")


def _test_row(row: RawPart, clause_levels: Mapping[str, str]) -> TestRow:
    out: TestRow = jsonable(dict(row))
    clauses = row.get("clauses") or []
    if isinstance(clauses, str):
        clauses = [clauses]
    out["clauses"] = _unique(str(c) for c in clauses)
    if out.get("failed_clauses") is not None:
        out["failed_clauses"] = _unique(str(c) for c in out["failed_clauses"])
    if not out.get("level"):
        out["level"] = _strictest(clause_levels.get(c, "") for c in out["clauses"]) or "must"
    out.setdefault("params", {})
    if out["params"] is None:
        out["params"] = {}
    out.setdefault("expected", "pass")
    out.setdefault("waiver", None)
    out.setdefault("message", None)
    out.setdefault("repro", None)
    out.setdefault("hypothesis", None)
    duration = out.get("duration_s")
    out["duration_s"] = float(duration) if isinstance(duration, int | float) and duration >= 0 else 0.0
    return out


def outcome_for(test: TestRow, clause_id: str) -> str:
    """The outcome a test gives one of the clauses it names: a failing test that says which clauses failed
    (``failed_clauses``: a history checks many clauses and breaks one) passed the others, as far as it ran."""
    failed = test.get("failed_clauses")
    if failed and test["outcome"] in ("failed", "flaky", "incompatible", "xfailed") and clause_id not in failed:
        return "passed"
    return str(test["outcome"])


def clause_outcome(level: str, outcomes: list[str]) -> str:
    """The outcome of a clause from the outcomes of the tests that name it."""
    if not outcomes:
        return "untested"
    seen = set(outcomes)
    if seen & {"failed", "error"}:
        return "incompatible" if level == "should" else "failed"
    if "flaky" in seen:  # failed, then passed when run again: at should level, as a should failure is
        return "incompatible" if level == "should" else "flaky"
    if "incompatible" in seen:
        return "incompatible"
    if "xfailed" in seen:
        return "xfailed"
    if seen & {"passed", "xpassed"}:
        return "passed"
    if seen == {"not_supported"}:
        return "not_supported"
    return "skipped"


def _clause_rows(clauses: Iterable[RawPart], tests: list[TestRow]) -> tuple[list[ClauseRow], list[str]]:
    by_clause: dict[str, list[TestRow]] = {}
    for test in tests:
        for cid in test["clauses"]:
            by_clause.setdefault(cid, []).append(test)
    rows: list[ClauseRow] = []
    for clause in clauses:
        row: ClauseRow = jsonable(dict(clause))
        cid = str(row.get("id", ""))
        named = by_clause.get(cid, [])
        row.setdefault("title", "")
        row.setdefault("family", cid.split(".")[1] if cid.count(".") >= 2 else "other")
        row["tests"] = [t["id"] for t in named]
        row["outcome"] = clause_outcome(str(row.get("level")), [outcome_for(t, cid) for t in named])
        row["covered"] = bool(named)
        rows.append(row)
    known = {r.get("id") for r in rows}
    warnings = [
        f"test {t['id']} names clause {cid}, which is not in spec release's clause list"
        for t in tests
        for cid in t["clauses"]
        if cid not in known
    ]
    warnings += [f"test {t['id']} names no clause" for t in tests if not t["clauses"]]
    if not rows:
        warnings.append("the report lists no clauses, so it cannot certify anything")
    return rows, warnings


def _summary(tests: list[TestRow]) -> Summary:
    summary = {"tests": len(tests)}
    summary.update({outcome: 0 for outcome in TEST_OUTCOMES})
    for test in tests:
        if test.get("outcome") in summary:
            summary[test["outcome"]] += 1
    return cast(Summary, summary)


def _clause_summary(clauses: list[ClauseRow]) -> ClauseSummary:
    summary = {"clauses": len(clauses), "covered": sum(1 for c in clauses if c["covered"])}
    summary.update({outcome: 0 for outcome in CLAUSE_OUTCOMES})
    for clause in clauses:
        if clause["outcome"] in summary:
            summary[clause["outcome"]] += 1
    return cast(ClauseSummary, summary)


def completeness_section(completeness: RawPart | None) -> Completeness:
    """The report's ``completeness``: was this a full run, and if not, why not and what was left out.

    Without information (hand-made rows, reports of kit 0.1) a run counts as full.
    """
    c = jsonable(dict(completeness or {}))
    left_out = [cast(LeftOut, dict(x)) for x in c.get("left_out") or []]
    counts: dict[str, int] = {}
    for x in left_out:
        counts[str(x.get("why", "left out"))] = counts.get(str(x.get("why", "left out")), 0) + 1
    reasons = _unique(str(r) for r in c.get("reasons") or [])
    section: Completeness = {
        "full": bool(c.get("full", not reasons and not left_out)) and not reasons and not left_out,
        "reasons": reasons,
        "selected": c.get("selected"),
        "left_out_count": len(left_out),
        "left_out_counts": counts,
        "left_out": left_out,
        "interrupted": c.get("interrupted"),
        "spec": c.get("spec"),
    }
    if c.get("shard") is not None:
        section["shard"] = c["shard"]
    return section


def waived_tests(tests: list[TestRow]) -> list[WaivedTest]:
    """Every test an expectations entry matched, with the entry's reason and expiry."""
    out: list[WaivedTest] = []
    for t in tests:
        if t.get("expected", "pass") == "pass":
            continue
        w = t.get("waiver") or {}
        out.append({
            "test": t["id"],
            "level": t["level"],
            "clauses": list(t["clauses"]),
            "expected": t["expected"],
            "outcome": t["outcome"],
            "entry": w.get("entry"),
            "match": w.get("match"),
            "reason": w.get("reason"),
            "expires": w.get("expires"),
            "link": w.get("link"),
        })
    return out


def compute_verdict(
    tests: list[TestRow],
    clauses: list[ClauseRow],
    completeness: RawPart | None = None,
    coverage: DomainCoverage | None = None,
) -> Verdict:
    """The verdict (see reports/README.md, "The verdict").

    CERTIFIED only for a full run in which no must/may test failed or errored, every must clause has a
    passing test (or, for CERTIFIED (DECLARED CAPABILITIES), only tests the backend's capabilities exclude) and
    no must test was waived.  A waived must test gives CERTIFIED WITH WAIVERS; a partial run gives PARTIAL or
    NOT CERTIFIED (PARTIAL RUN); a must clause left with no passing test by waivers or skips is blocking.  A full
    run whose pushes left a domain partition or pair of the spec's coverage section unreached (``coverage``: the
    run's ``domain_coverage``) is NOT CERTIFIED: like an untested clause, that part of the domain was not tried.
    """
    full = completeness_section(completeness)["full"]
    # the spec says whether coverage blocks yet (its section's blocks_verdict, carried in domain_coverage)
    unreached = unreached_coverage(coverage) if full and coverage and coverage.get("blocks_verdict") else []
    blocking_tests = [
        t["id"] for t in tests if t["level"] in BLOCKING_LEVELS and t["outcome"] in BLOCKING_TEST_OUTCOMES
    ]
    blocking_set = set(blocking_tests)
    failing = {cid for t in tests if t["id"] in blocking_set for cid in t["clauses"]
               if outcome_for(t, cid) in BLOCKING_TEST_OUTCOMES}
    by_clause: dict[str, list[TestRow]] = {}
    for t in tests:
        for cid in t["clauses"]:
            by_clause.setdefault(cid, []).append(t)
    blocking: list[str] = []
    untested: list[str] = []
    no_passing: list[str] = []  # must clauses whose tests ran into waivers or skips, none passing
    unchecked: list[str] = []  # must clauses whose tests the backend's capabilities exclude, all of them
    for clause in clauses:
        cid = clause["id"]
        if cid in failing:
            blocking.append(cid)
            continue
        if clause["level"] != "must":
            continue
        named = by_clause.get(cid, [])
        if not named:
            if full:
                blocking.append(cid)
                untested.append(cid)
            continue
        outcomes = {outcome_for(t, cid) for t in named}
        if outcomes & PASSING_TEST_OUTCOMES:
            continue
        if outcomes == {"not_supported"}:
            unchecked.append(cid)
        else:
            blocking.append(cid)
            no_passing.append(cid)
    known = {c["id"] for c in clauses}
    blocking += sorted(failing - known)
    should = [c for c in clauses if c["level"] == "should"]
    tested = [c for c in should if c["outcome"] in ("passed", "failed", "flaky", "incompatible", "xfailed")]
    compatibility = (
        round(sum(1 for c in tested if c["outcome"] == "passed") / len(tested), 6) if tested else None
    )
    waived_must = [
        t["id"] for t in tests
        if t["level"] == "must" and t.get("expected", "pass") != "pass" and t["outcome"] in WAIVED_TEST_OUTCOMES
    ]
    # A run that checked no clause at all certifies nothing.
    passes = bool(clauses) and not blocking and not blocking_tests and not unreached
    only_errors = (
        bool(blocking_tests)
        and all(t["outcome"] == "error" for t in tests if t["id"] in blocking_set)
        and not untested and not no_passing
    )
    if not passes:
        kind = VerdictKind.NOT_CERTIFIED
        label = NOT_CERTIFIED_PARTIAL if not full else (NOT_CERTIFIED_ERRORS if only_errors else NOT_CERTIFIED)
    elif not full:
        kind, label = VerdictKind.PARTIAL, PARTIAL
    elif waived_must:
        kind, label = VerdictKind.CERTIFIED_WITH_WAIVERS, CERTIFIED_WITH_WAIVERS
    else:
        kind, label = VerdictKind.CERTIFIED, (CERTIFIED_DECLARED if unchecked else CERTIFIED)

    reasons: list[str] = []
    failed_n = sum(1 for t in tests if t["id"] in blocking_set and t["outcome"] == "failed")
    flaky = [t["id"] for t in tests if t["id"] in blocking_set and t["outcome"] == "flaky"]
    error_n = len(blocking_tests) - failed_n - len(flaky)
    if failed_n:
        reasons.append(f"{failed_n} must/may test(s) failed")
    if flaky:
        reasons.append(f"{len(flaky)} must/may test(s) flaky: failed, then passed when run again (a flaky test blocks "
                       "as a failure does)")
    if error_n:
        reasons.append(f"{error_n} must/may test(s) ended in error")
    if untested:
        reasons.append(f"{len(untested)} must clause(s) untested: no test of this run names them")
    if no_passing:
        shown = ", ".join(no_passing[:5]) + (f" and {len(no_passing) - 5} more" if len(no_passing) > 5 else "")
        reasons.append(f"{len(no_passing)} must clause(s) with no passing test (waived or skipped): {shown}")
    if unreached:
        shown = ", ".join(unreached[:5]) + (f" and {len(unreached) - 5} more" if len(unreached) > 5 else "")
        reasons.append(f"domain coverage: {len(unreached)} partition(s) or pair(s) unreached by any push: {shown}")
    if not full:
        reasons.append("partial run: " + "; ".join(completeness_section(completeness)["reasons"]))
    if waived_must:
        reasons.append(f"{len(waived_must)} must test(s) waived by the expectations file")
    if unchecked:
        reasons.append(f"{len(unchecked)} must clause(s) not checked: the backend does not declare the "
                       "capability they need")
    if not clauses:
        reasons.append("the report lists no clauses")
    return {
        "certified": kind is VerdictKind.CERTIFIED,
        "label": label,
        "kind": kind,
        "partial": not full,
        "unchecked": unchecked,
        "blocking": blocking,
        "blocking_tests": blocking_tests,
        "no_passing": no_passing,
        "waived_must_tests": waived_must,
        "flaky_tests": flaky,
        "compatibility": compatibility,
        "reasons": reasons,
    }


def unreached_coverage(coverage: DomainCoverage | None) -> list[str]:
    """The partitions, then the pairs, a run's ``domain_coverage`` says no push reached (none without one)."""
    if not coverage:
        return []
    return [*(coverage.get("unreached_partitions") or []), *(coverage.get("unreached_pairs") or [])]


def blocking_details(report: Report) -> list[BlockingDetail]:
    """The blocking clauses as a reader meets them: those the first likely cause explains first, then by how many
    of their tests failed, each with its title and its first failure message."""
    by_id = {c["id"]: c for c in report["clauses"]}
    failing: dict[str, list[TestRow]] = {}
    for t in report["tests"]:
        for cid in t["clauses"]:
            if outcome_for(t, cid) in BLOCKING_TEST_OUTCOMES:  # a history that broke one clause passed the rest
                failing.setdefault(cid, []).append(t)
    causes = report.get("likely_causes") or []
    first_cause = set(causes[0]["clauses"]) if causes and causes[0].get("predicate") else set()
    order = {cid: i for i, cid in enumerate(report["verdict"]["blocking"])}
    out: list[BlockingDetail] = []
    for cid in sorted(report["verdict"]["blocking"],
                      key=lambda c: (c not in first_cause, -len(failing.get(c, [])), order[c])):
        clause, tests = by_id.get(cid), failing.get(cid, [])  # no clause: a test names one the spec lacks
        out.append({"id": cid, "title": clause["title"] if clause else None,
                    "level": clause["level"] if clause else None,
                    "outcome": clause["outcome"] if clause else "failed", "failing_tests": len(tests),
                    "first_test": tests[0]["id"] if tests else None,
                    "first_message": next((t.get("message") for t in tests if t.get("message")), None),
                    "deviation": clause.get("deviation") if clause else None})
    return out


def build_report(
    header: RawPart,
    tests: Iterable[RawPart],
    clauses: Iterable[RawPart],
    expectations: RawPart | None = None,
    completeness: RawPart | None = None,
) -> Report:
    """Assemble and validate the canonical report (see docs/architecture.md, section Report).

    ``expectations`` carries ``path``, ``sha256``, ``strict``, ``entries``, ``expired``, ``unmatched`` and
    ``unexpected_passes``; ``completeness`` says whether the run was full (see :func:`completeness_section`).
    """
    clauses = list(clauses)
    tests = list(tests)
    _require(clauses, "clauses", ("id", "level"))
    _require(tests, "tests", ("id", "outcome"))
    expectations = dict(expectations or {})
    levels = {str(c.get("id")): str(c.get("level")) for c in clauses}
    test_rows = [_test_row(row, levels) for row in tests]
    clause_rows, warnings = _clause_rows(clauses, test_rows)

    sections = {section: jsonable(copy.deepcopy(dict(header.get(section) or {}))) for section in _HEADER_SECTIONS}
    run: Run = sections["run"]
    run.setdefault("duration_s", round(sum(t["duration_s"] for t in test_rows), 6))
    run.setdefault(
        "expectations",
        {
            "path": expectations.get("path"),
            "sha256": expectations.get("sha256"),
            "strict": bool(expectations.get("strict", False)),
        },
    )
    xpassed = [t["id"] for t in test_rows if t["outcome"] == "xpassed"]
    complete = completeness_section(completeness)
    # the keys in the order report.json has always had them
    report: Report = {
        "schema_version": SCHEMA_VERSION,
        "suite": sections["suite"],
        "spec": sections["spec"],
        "backend": sections["backend"],
        "environment": sections["environment"],
        "run": run,
        "tests": test_rows,
        "clauses": clause_rows,
        "expectations": {
            "path": expectations.get("path"),
            "sha256": expectations.get("sha256"),
            "strict": bool(expectations.get("strict", False)),
            "entries": jsonable(list(expectations.get("entries") or [])),
            "expired": jsonable(list(expectations.get("expired") or [])),
            "waived": waived_tests(test_rows),
            "unmatched": _unique(str(x) for x in expectations.get("unmatched") or []),
            "unexpected_passes": _unique([str(x) for x in expectations.get("unexpected_passes") or []] + xpassed),
        },
        "completeness": complete,
        "summary": _summary(test_rows),
        "clause_summary": _clause_summary(clause_rows),
        "verdict": compute_verdict(test_rows, clause_rows, complete, run.get("domain_coverage")),
    }
    report["likely_causes"] = likely_causes(test_rows, run.get("passing_push_features") or {})
    report["blocking_details"] = blocking_details(report)
    report["warnings"] = _unique(warnings)
    validate_report(report)
    return report

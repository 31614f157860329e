"""Build the canonical report dict from the rows the pytest plugin collected."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from typing import Any

from .model import (
    BLOCKING_LEVELS,
    CLAUSE_OUTCOMES,
    LEVELS,
    PARTIAL_LABEL,
    SCHEMA_VERSION,
    TEST_OUTCOMES,
    VERDICT_LABELS,
)
from .schema import ReportError, validate_report

_HEADER_SECTIONS = ("suite", "spec", "backend", "environment", "run")


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
    present = set(levels)
    for level in LEVELS:
        if level in present:
            return level
    return None


def _require(rows: list[Any], where: str, keys: tuple[str, ...]) -> None:
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise ReportError(f"$.{where}[{i}]: must be an object, not {type(row).__name__}")
        for key in keys:
            if key not in row:
                raise ReportError(f"$.{where}[{i}]: {key!r} is a required property")


def _test_row(row: Mapping[str, Any], clause_levels: Mapping[str, str]) -> dict[str, Any]:
    out = jsonable(dict(row))
    clauses = row.get("clauses") or []
    if isinstance(clauses, str):
        clauses = [clauses]
    out["clauses"] = _unique(str(c) for c in clauses)
    if not out.get("level"):
        out["level"] = _strictest(clause_levels.get(c, "") for c in out["clauses"]) or "must"
    out.setdefault("params", {})
    if out["params"] is None:
        out["params"] = {}
    out.setdefault("expected", "pass")
    out.setdefault("message", None)
    out.setdefault("repro", None)
    out.setdefault("hypothesis", None)
    duration = out.get("duration_s")
    out["duration_s"] = float(duration) if isinstance(duration, int | float) and duration >= 0 else 0.0
    return out


def clause_outcome(level: str, outcomes: list[str]) -> str:
    """The outcome of a clause from the outcomes of the tests that name it."""
    if not outcomes:
        return "untested"
    seen = set(outcomes)
    if seen & {"failed", "error"}:
        return "incompatible" if level == "should" else "failed"
    if "incompatible" in seen:
        return "incompatible"
    if "xfailed" in seen:
        return "xfailed"
    if seen & {"passed", "xpassed"}:
        return "passed"
    if seen == {"not_supported"}:
        return "not_supported"
    return "skipped"


def _clause_rows(
    clauses: Iterable[Mapping[str, Any]], tests: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    by_clause: dict[str, list[dict[str, Any]]] = {}
    for test in tests:
        for cid in test["clauses"]:
            by_clause.setdefault(cid, []).append(test)
    rows = []
    for clause in clauses:
        row = jsonable(dict(clause))
        cid = str(row.get("id", ""))
        named = by_clause.get(cid, [])
        row.setdefault("title", "")
        row.setdefault("family", cid.split(".")[1] if cid.count(".") >= 2 else "other")
        row["tests"] = [t["id"] for t in named]
        row["outcome"] = clause_outcome(str(row.get("level")), [t["outcome"] for t in named])
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


def _summary(tests: list[dict[str, Any]]) -> dict[str, int]:
    summary = {"tests": len(tests)}
    summary.update({outcome: 0 for outcome in TEST_OUTCOMES})
    for test in tests:
        if test.get("outcome") in summary:
            summary[test["outcome"]] += 1
    return summary


def _clause_summary(clauses: list[dict[str, Any]]) -> dict[str, int]:
    summary = {"clauses": len(clauses), "covered": sum(1 for c in clauses if c["covered"])}
    summary.update({outcome: 0 for outcome in CLAUSE_OUTCOMES})
    for clause in clauses:
        if clause["outcome"] in summary:
            summary[clause["outcome"]] += 1
    return summary


def compute_verdict(tests: list[dict[str, Any]], clauses: list[dict[str, Any]]) -> dict[str, Any]:
    """CERTIFIED iff no must/may test failed or errored and no must clause is untested."""
    blocking_tests = [
        t["id"] for t in tests if t["level"] in BLOCKING_LEVELS and t["outcome"] in ("failed", "error")
    ]
    failing = {cid for t in tests if t["id"] in set(blocking_tests) for cid in t["clauses"]}
    blocking = []
    for clause in clauses:
        if clause["id"] in failing or (clause["level"] == "must" and clause["outcome"] == "untested"):
            blocking.append(clause["id"])
    known = {c["id"] for c in clauses}
    blocking += sorted(failing - known)
    should = [c for c in clauses if c["level"] == "should"]
    tested = [c for c in should if c["outcome"] in ("passed", "failed", "incompatible", "xfailed")]
    compatibility = (
        round(sum(1 for c in tested if c["outcome"] == "passed") / len(tested), 6) if tested else None
    )
    # A run that checked no clause at all certifies nothing.
    certified = bool(clauses) and not blocking and not blocking_tests
    # must clauses none of whose tests ran (a capability the backend does not declare, or skipped)
    unchecked = [c["id"] for c in clauses if c["level"] == "must" and c["outcome"] in ("not_supported", "skipped")]
    return {
        "certified": certified,
        "label": PARTIAL_LABEL if certified and unchecked else VERDICT_LABELS[certified],
        "unchecked": unchecked,
        "blocking": blocking,
        "blocking_tests": blocking_tests,
        "compatibility": compatibility,
    }


def build_report(
    header: Mapping[str, Any],
    tests: Iterable[Mapping[str, Any]],
    clauses: Iterable[Mapping[str, Any]],
    expectations: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble and validate the canonical report (see docs/architecture.md, section Report)."""
    clauses = list(clauses)
    tests = list(tests)
    _require(clauses, "clauses", ("id", "level"))
    _require(tests, "tests", ("id", "outcome"))
    expectations = dict(expectations or {})
    levels = {str(c.get("id")): str(c.get("level")) for c in clauses}
    test_rows = [_test_row(row, levels) for row in tests]
    clause_rows, warnings = _clause_rows(clauses, test_rows)

    report: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
    for section in _HEADER_SECTIONS:
        report[section] = jsonable(copy.deepcopy(dict(header.get(section) or {})))
    run = report["run"]
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
    report["tests"] = test_rows
    report["clauses"] = clause_rows
    report["expectations"] = {
        "unmatched": _unique(str(x) for x in expectations.get("unmatched") or []),
        "unexpected_passes": _unique([str(x) for x in expectations.get("unexpected_passes") or []] + xpassed),
    }
    report["summary"] = _summary(test_rows)
    report["clause_summary"] = _clause_summary(clause_rows)
    report["verdict"] = compute_verdict(test_rows, clause_rows)
    report["warnings"] = _unique(warnings)
    validate_report(report)
    return report

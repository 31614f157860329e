"""Compare two reports, aligned by clause ID and by test ID."""

from __future__ import annotations

from typing import TypedDict

from .parts import ClauseRow, Report, TestRow

#: How bad an outcome is; 2 and above is a failure (a regression when it appears or worsens). A flaky test failed
#: and then passed when run again: it blocks as a failure does, so it weighs as one.
SEVERITY = {"failed": 3, "error": 3, "flaky": 3, "incompatible": 2}
FAILING = 2
#: A failure counts as fixed only when it now passes (not when it is skipped or untested).
PASSING = frozenset({"passed", "xpassed"})
#: the kinds of change, each change in exactly one (the order `report diff` prints them)
BUCKETS = ("newly_failing", "fixed", "added", "removed", "changed")
LABELS = {"newly_failing": "newly failing", "fixed": "fixed", "added": "added", "removed": "removed",
          "changed": "other change"}


class Change(TypedDict):
    """One clause's or test's change of outcome (None: not in that report)."""

    id: str
    before: str | None
    after: str | None


#: the changes of one kind of row, by bucket
Changes = dict[str, list[Change]]


class Side(TypedDict):
    """What a diff says of each of its two reports."""

    verdict: str
    spec: str
    backend: str
    suite: str
    compatibility: float | None


class Diff(TypedDict):
    """``report diff --json``: the two reports, the changes of their clauses and tests, and whether B is worse."""

    before: Side
    after: Side
    clauses: Changes
    tests: Changes
    regression: bool


def _severity(outcome: str | None) -> int:
    return SEVERITY.get(outcome or "", 0)


def _align(before: list[ClauseRow] | list[TestRow], after: list[ClauseRow] | list[TestRow]) -> Changes:
    """Each change once, in the first bucket that fits: newly failing (new or worse, and failing), fixed (failing,
    now passing), added, removed, then any other change of outcome."""
    a = {row["id"]: row["outcome"] for row in before}
    b = {row["id"]: row["outcome"] for row in after}
    out: Changes = {key: [] for key in BUCKETS}
    for key in b:
        was, now = a.get(key), b[key]
        if key in a and was == now:
            continue
        change: Change = {"id": key, "before": was, "after": now}
        if _severity(now) >= FAILING and _severity(now) > _severity(was):
            out["newly_failing"].append(change)
        elif key not in a:
            out["added"].append(change)
        elif _severity(was) >= FAILING and now in PASSING:
            out["fixed"].append(change)
        else:
            out["changed"].append(change)
    out["removed"] = [{"id": key, "before": a[key], "after": None} for key in a if key not in b]
    return out


def _describe(report: Report) -> Side:
    return {
        "verdict": report["verdict"]["label"],
        "spec": report["spec"]["version"],
        "backend": f"{report['backend']['name']} {report['backend'].get('version') or ''}".strip(),
        "suite": report["suite"]["version"],
        "compatibility": report["verdict"]["compatibility"],
    }


def diff_reports(before: Report, after: Report) -> Diff:
    """The differences from `before` (A) to `after` (B); `regression` is true when B is worse."""
    clauses = _align(before["clauses"], after["clauses"])
    tests = _align(before["tests"], after["tests"])
    verdict_regressed = before["verdict"]["certified"] and not after["verdict"]["certified"]
    return {
        "before": _describe(before),
        "after": _describe(after),
        "clauses": clauses,
        "tests": tests,
        "regression": bool(clauses["newly_failing"] or tests["newly_failing"] or verdict_regressed),
    }


def _lines(kind: str, changes: Changes) -> list[str]:
    out = [f"{kind}: " + ", ".join(f"{len(changes[key])} {LABELS[key]}" for key in BUCKETS)]
    for key in BUCKETS:
        for item in changes[key]:
            before = item.get("before") or "-"
            after = item.get("after") or "-"
            out.append(f"  {LABELS[key]:<14} {item['id']}  {before} -> {after}")
    return out


def format_diff(diff: Diff, name_a: str = "A", name_b: str = "B") -> str:
    a, b = diff["before"], diff["after"]
    lines = [
        f"A: {name_a}: {a['verdict']} (backend {a['backend']}, spec {a['spec']}, suite {a['suite']})",
        f"B: {name_b}: {b['verdict']} (backend {b['backend']}, spec {b['spec']}, suite {b['suite']})",
    ]
    if a["verdict"] != b["verdict"]:
        lines.append(f"verdict: {a['verdict']} -> {b['verdict']}")
    lines += _lines("clauses", diff["clauses"])
    lines += _lines("tests", diff["tests"])
    lines.append("result: REGRESSION" if diff["regression"] else "result: no regression")
    return "\n".join(lines) + "\n"

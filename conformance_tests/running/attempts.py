"""A test's attempts when failed tests run again (``certify --reruns N``, pytest-rerunfailures).

pytest-rerunfailures runs a failed test again in the same process (a pytest-xdist worker, or after a worker
crash another one) and marks every phase's report with the attempt it belongs to (``rerun``: 0 for the first).
The rows fold each attempt like a test of its own (rows.py); when the next attempt starts, the finished one is
kept here, and the row shown is settled from all of them:

- a test that failed (or errored) and then passed is ``flaky``: its row is the first failing attempt's (its
  message, reproduction, hypothesis example and push stay the row's);
- any other test is its last attempt's row (one failing on every attempt stays ``failed``);
- either way ``attempts`` lists every attempt's outcome (and message, where it had one), oldest first.

A test that ran once has no ``attempts``: without --reruns a row is exactly what it was before reruns existed.
"""

from __future__ import annotations

from typing import Any

#: outcomes of an attempt that went wrong (pytest-rerunfailures runs such a test again)
FAILING = frozenset({"failed", "error", "incompatible", "flaky"})
#: outcomes of an attempt that passed
PASSING = frozenset({"passed", "xpassed"})
#: what one attempt decides of a row; the rest (id, clauses, level, waiver, duration) is the test's
ATTEMPT_FIELDS = ("outcome", "message", "repro", "hypothesis", "push")


def attempt_index(rep: Any) -> int | None:
    """The attempt a phase's report belongs to (0 for the first), or None when failed tests are not re-run."""
    index = getattr(rep, "rerun", None)
    return index if isinstance(index, int) and not isinstance(index, bool) else None


def snapshot(row: dict[str, Any]) -> dict[str, Any]:
    """What the row's current attempt decided."""
    return {key: row.get(key) for key in ATTEMPT_FIELDS}


def clear(row: dict[str, Any]) -> None:
    """Make the row ready for its next attempt (what the last one decided is kept by the caller)."""
    for key in ATTEMPT_FIELDS:
        row[key] = None


def listed(attempt: dict[str, Any]) -> dict[str, Any]:
    """An attempt as the report lists it: its outcome, and its message where it had one."""
    out: dict[str, Any] = {"outcome": attempt["outcome"]}
    if attempt.get("message") is not None:
        out["message"] = attempt["message"]
    return out


def settled(row: dict[str, Any], earlier: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The row as the report shows it, from its earlier attempts and its current one (see the module's text)."""
    if not earlier:
        return row
    tries = [a for a in [*earlier, snapshot(row)] if a["outcome"] is not None]
    if not tries:
        return row
    last = tries[-1]
    first_failing = next((a for a in tries if a["outcome"] in FAILING), None)
    if last["outcome"] in PASSING and first_failing is not None:
        base, outcome = first_failing, "flaky"
    else:
        base, outcome = last, last["outcome"]
    return {**row, **base, "outcome": outcome, "attempts": [listed(a) for a in tries]}

"""One report row per test, assembled from pytest's test reports.

The row is built where the reports arrive, not where the test runs: in a serial run both are the same
process; under pytest-xdist the tests run in workers and only their reports reach the controller, which
writes the kit's report.  So everything a row needs travels inside the report, as one user property
(:data:`PROPERTY`) holding plain JSON data: the test's static facts (``meta``), what this phase decided
(``result``) and, on teardown, what the test did to the backend (``counts``).  A report that carries no such
property is one pytest-xdist made up for a worker that died mid-test; it becomes an ``error`` row.
"""

from __future__ import annotations

import json
from typing import Any

from ..judging.push_features import merge_stats
from ..spec.levels import BLOCKING_LEVELS
from .attempts import attempt_index, clear, settled, snapshot

#: the user property that carries a phase's row data
PROPERTY = "push_cache_row"
#: outcomes of a test whose last push a check judged wrong (its features go to the likely-cause analysis)
JUDGED = ("failed", "incompatible")


def plain(value: Any) -> Any:
    """``value`` as JSON data (pytest-xdist serializes user properties; dates and the like become text), every
    string writable as UTF-8 (a lone surrogate a backend handed over becomes its escape)."""
    return printable(json.loads(json.dumps(value, default=str)))


def printable(value: Any) -> Any:
    """``value`` with every string made writable as UTF-8: lone surrogates become ``\\udcXX`` escapes."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable(v) for v in value]
    return value


def phase_outcome(rep: Any, level: str, message: str | None, setup_error: bool,
                  flaky: bool = False) -> tuple[str | None, str | None]:
    """(outcome, message) this phase decides for the row, or (None, None) when it decides nothing; ``flaky``: the
    call failed, and passed when hypothesis ran its failing example again (at every level: the level decides
    later whether it blocks)."""
    wasxfail = getattr(rep, "wasxfail", None)
    if rep.when == "call" and rep.failed and setup_error:
        return "error", f"setup error (not a verdict): {message or ''}"
    if rep.when == "call" and rep.failed and flaky and wasxfail is None:
        return "flaky", message
    if rep.when == "call" and rep.failed and level not in BLOCKING_LEVELS and wasxfail is None:
        return "incompatible", message
    if rep.when == "setup":
        if rep.failed:
            return "error", message
        if rep.skipped:
            if wasxfail is not None:
                return "xfailed", wasxfail
            reason = skip_reason(rep)
            return skip_outcome(reason), reason
        return None, None
    if rep.when == "call":
        if rep.passed:
            if wasxfail is not None:
                return "xpassed", f"unexpected pass ({wasxfail})"
            return "passed", None
        if rep.failed:
            return "failed", message
        if rep.skipped:
            if wasxfail is not None:
                return "xfailed", f"{wasxfail}\n{message or ''}".strip()
            reason = skip_reason(rep)
            return skip_outcome(reason), reason
    if rep.when == "teardown" and rep.failed:
        return "error", message
    return None, None


def skip_outcome(reason: str) -> str:
    return "not_supported" if reason.startswith("not supported") else "skipped"


def skip_reason(rep: Any) -> str:
    if isinstance(rep.longrepr, tuple) and len(rep.longrepr) == 3:
        reason = str(rep.longrepr[2])
        return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
    return str(rep.longrepr or "")


def carried(rep: Any) -> dict[str, Any] | None:
    for name, value in getattr(rep, "user_properties", None) or []:
        if name == PROPERTY:
            return dict(value)
    return None


def new_row(nodeid: str, meta: dict[str, Any] | None) -> dict[str, Any]:
    meta = meta or {}
    return {
        "id": nodeid,
        "clauses": list(meta.get("clauses") or []),
        "level": meta.get("level", "must"),
        "params": meta.get("params") or {},
        "outcome": None,
        "expected": meta.get("expected", "pass"),
        "waiver": meta.get("waiver"),
        "message": None,
        "repro": None,
        "hypothesis": None,
        "push": None,
        "duration_s": 0.0,
    }


#: per-test counters a teardown report carries, summed over the run (a history counter stays 0 elsewhere)
HISTORY_COUNTS = ("histories", "history_steps", "history_pushes")


class Rows:
    """The rows of one run, in the order their tests first reported, and the run's backend counters."""

    def __init__(self) -> None:
        self.by_id: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        self.push_calls = 0
        self.restarts = 0  # backend processes started after a loss (isolated runs), in every worker
        #: the pytest-xdist workers whose reports came in (each started a backend process of its own)
        self.workers: set[str] = set()
        #: per class of push (returned, raised) and feature, the values the pushes of the passing tests took
        self.passing_push_features: dict[str, dict[str, Any]] = {}
        self.layouts: set[str] = set()
        self.coverage: set[str] = set()  # the domain partitions and pairs the run's pushes reached
        #: what the stateful suite did: histories run, their steps and their pushes
        self.history_counts: dict[str, int] = dict.fromkeys(HISTORY_COUNTS, 0)
        self.unexpected_passes: list[str] = []
        #: tests whose process died before the test said which clauses it checks (the run cannot be full)
        self.without_clauses: list[str] = []
        #: under certify --reruns: each test's finished attempts, oldest first, and the attempt now folding
        self.attempts: dict[str, list[dict[str, Any]]] = {}
        self.attempt_of: dict[str, int] = {}

    def row(self, nodeid: str) -> dict[str, Any]:
        """The test's row as the report shows it (a re-run test's settled from its attempts: attempts.py)."""
        return settled(self.by_id[nodeid], self.attempts.get(nodeid))

    def finished(self) -> list[dict[str, Any]]:
        rows = [self.row(n) for n in self.order]
        return [r for r in rows if r["outcome"] is not None]

    def add(self, rep: Any) -> dict[str, Any]:
        """Fold one phase's report into its row; returns the row."""
        data = carried(rep)
        worker = getattr(getattr(getattr(rep, "node", None), "gateway", None), "id", None)
        if isinstance(worker, str):
            self.workers.add(worker)
        row = self.by_id.get(rep.nodeid)
        if row is None:
            row = new_row(rep.nodeid, (data or {}).get("meta"))
            self.by_id[rep.nodeid] = row
            self.order.append(rep.nodeid)
        self._next_attempt(row, rep, (data or {}).get("meta"))
        row["duration_s"] += float(getattr(rep, "duration", 0.0) or 0.0)
        if data is None:
            # pytest-xdist's report for a test whose worker died: the test never finished
            row["outcome"] = "error"
            row["message"] = f"the test process died: {getattr(rep, 'longreprtext', '') or rep.longrepr}"[:8000]
            if not row["clauses"]:
                self.without_clauses.append(rep.nodeid)
            return row
        result = data.get("result") or {}
        outcome = result.get("outcome")
        if outcome is not None and (rep.when != "teardown" or row["outcome"] in (None, "passed")):
            row["outcome"], row["message"] = outcome, result.get("message")
            if outcome == "xpassed":
                self.unexpected_passes.append(rep.nodeid)
        for key in ("repro", "hypothesis"):
            if row[key] is None and result.get(key) is not None:
                row[key] = result[key]
        if result.get("failed_clauses") and outcome is not None and row["outcome"] == outcome:
            row["failed_clauses"] = list(result["failed_clauses"])
        counts = data.get("counts")
        if counts:
            self.push_calls += int(counts.get("push_calls", 0))
            self.restarts += int(counts.get("restarts", 0))
            self.layouts.update(counts.get("layouts") or [])
            self.coverage.update(counts.get("coverage") or [])
            for key in HISTORY_COUNTS:
                self.history_counts[key] += int(counts.get(key, 0))
            # the likely-cause analysis sets the push a failure judged against every push of a passing test
            if row["outcome"] == "passed":
                for cls, stats in (counts.get("push_features") or {}).items():
                    merge_stats(self.passing_push_features.setdefault(cls, {}), stats)
            elif row["outcome"] in JUDGED and counts.get("last_push"):
                row["push"] = counts["last_push"]
        return row

    def _next_attempt(self, row: dict[str, Any], rep: Any, meta: dict[str, Any] | None) -> None:
        """Where a report starts the test's next attempt (certify --reruns), keep what the last one decided and
        fold the new one into a clear row."""
        index = attempt_index(rep)
        if index is None:
            return
        nodeid = rep.nodeid
        last = self.attempt_of.setdefault(nodeid, index)
        if index == last:
            return
        self.attempt_of[nodeid] = index
        if row["outcome"] is not None:
            self.attempts.setdefault(nodeid, []).append(snapshot(row))
        clear(row)
        if meta and not row["clauses"]:
            # the last attempt's process died before it said what the test checks; this one says it
            row.update({k: v for k, v in new_row(nodeid, meta).items() if k in ("clauses", "level", "params",
                                                                                  "expected", "waiver")})
            if nodeid in self.without_clauses:
                self.without_clauses.remove(nodeid)

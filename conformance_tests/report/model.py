"""Vocabulary shared by the report modules: levels, test outcomes, clause outcomes."""

from __future__ import annotations

SCHEMA_VERSION = 1

LEVELS = ("must", "should", "may")

#: Outcomes of one test, in the order the summaries show them.
TEST_OUTCOMES = (
    "passed",
    "failed",
    "incompatible",
    "xfailed",
    "xpassed",
    "skipped",
    "not_supported",
    "error",
)

#: Outcomes of one clause, from the worst to the least informative.
CLAUSE_OUTCOMES = (
    "failed",
    "incompatible",
    "xfailed",
    "passed",
    "not_supported",
    "skipped",
    "untested",
)

#: Test outcomes that are violations of the clause the test checks.
FAILING_TEST_OUTCOMES = frozenset({"failed", "error", "incompatible"})

#: Test levels whose failures block certification (a `may` test checks only the envelope).
BLOCKING_LEVELS = frozenset({"must", "may"})

EXPECTED = ("pass", "xfail", "skip")

VERDICT_LABELS = {True: "CERTIFIED", False: "NOT CERTIFIED"}
#: the label of a certified run in which some must clauses could not be checked (capability not declared)
PARTIAL_LABEL = "CERTIFIED (PARTIAL)"

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

#: Verdict labels (``verdict.label``); each belongs to one kind (``verdict.kind``).
CERTIFIED = "CERTIFIED"
#: certified, but some must clauses could not be checked: the backend does not declare the capability
CERTIFIED_DECLARED = "CERTIFIED (DECLARED CAPABILITIES)"
CERTIFIED_WITH_WAIVERS = "CERTIFIED WITH WAIVERS"
PARTIAL = "PARTIAL"
NOT_CERTIFIED = "NOT CERTIFIED"
NOT_CERTIFIED_ERRORS = "NOT CERTIFIED (ERRORS)"
NOT_CERTIFIED_PARTIAL = "NOT CERTIFIED (PARTIAL RUN)"
#: written by kit 0.1 for what is now CERTIFIED_DECLARED; still accepted when reading old reports
LEGACY_PARTIAL_LABEL = "CERTIFIED (PARTIAL)"

VERDICT_KINDS = ("certified", "certified_with_waivers", "partial", "not_certified")
LABEL_KIND = {
    CERTIFIED: "certified",
    CERTIFIED_DECLARED: "certified",
    LEGACY_PARTIAL_LABEL: "certified",
    CERTIFIED_WITH_WAIVERS: "certified_with_waivers",
    PARTIAL: "partial",
    NOT_CERTIFIED: "not_certified",
    NOT_CERTIFIED_ERRORS: "not_certified",
    NOT_CERTIFIED_PARTIAL: "not_certified",
}

VERDICT_LABELS = {True: CERTIFIED, False: NOT_CERTIFIED}
#: kept for callers of kit 0.1
PARTIAL_LABEL = CERTIFIED_DECLARED

#: outcomes that count as "this test passed" when asking whether a must clause has a passing test
PASSING_TEST_OUTCOMES = frozenset({"passed", "xpassed"})
#: outcomes of a test whose waiver took effect (expected xfail or skip)
WAIVED_TEST_OUTCOMES = frozenset({"xfailed", "skipped"})

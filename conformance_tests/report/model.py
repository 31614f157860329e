"""Vocabulary shared by the report modules: test outcomes, clause outcomes, verdict labels (the levels are the
spec's: :mod:`conformance_tests.spec.levels`)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

from ..spec.levels import BLOCKING_LEVELS, LEVELS  # noqa: F401 - the report modules' levels are the spec's

SCHEMA_VERSION = 1

#: Outcomes of one test, in the order the summaries show them.
TEST_OUTCOMES = (
    "passed",
    "failed",
    "flaky",
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
    "flaky",
    "incompatible",
    "xfailed",
    "passed",
    "not_supported",
    "skipped",
    "untested",
)

EXPECTED = ("pass", "xfail", "skip")

if TYPE_CHECKING:
    from .parts import Run


class VerdictKind(StrEnum):
    """``verdict.kind``: what a verdict label means for whoever acts on it (the exit code, the badge's colour,
    the pages' shade); a label says more (why it is not certified), a kind is what code decides on."""

    CERTIFIED = "certified"
    CERTIFIED_WITH_WAIVERS = "certified_with_waivers"
    PARTIAL = "partial"
    NOT_CERTIFIED = "not_certified"


#: Verdict labels (``verdict.label``); each belongs to one kind (``verdict.kind``).
CERTIFIED = "CERTIFIED"
#: certified, but some must clauses could not be checked: the backend does not declare the capability
CERTIFIED_DECLARED = "CERTIFIED (DECLARED CAPABILITIES)"
CERTIFIED_WITH_WAIVERS = "CERTIFIED WITH WAIVERS"
PARTIAL = "PARTIAL"
NOT_CERTIFIED = "NOT CERTIFIED"
NOT_CERTIFIED_ERRORS = "NOT CERTIFIED (ERRORS)"
NOT_CERTIFIED_PARTIAL = "NOT CERTIFIED (PARTIAL RUN)"

LABEL_KIND: dict[str, VerdictKind] = {
    CERTIFIED: VerdictKind.CERTIFIED,
    CERTIFIED_DECLARED: VerdictKind.CERTIFIED,
    CERTIFIED_WITH_WAIVERS: VerdictKind.CERTIFIED_WITH_WAIVERS,
    PARTIAL: VerdictKind.PARTIAL,
    NOT_CERTIFIED: VerdictKind.NOT_CERTIFIED,
    NOT_CERTIFIED_ERRORS: VerdictKind.NOT_CERTIFIED,
    NOT_CERTIFIED_PARTIAL: VerdictKind.NOT_CERTIFIED,
}

#: outcomes of a must or may test that block certification: a violation, a test that could not run properly, and
#: a test that failed and then passed when run again (a certification is not a lottery)
BLOCKING_TEST_OUTCOMES = ("failed", "error", "flaky")
#: outcomes of a test that found the backend wrong, at any level (a should-level one does not block)
FAILING_TEST_OUTCOMES = ("failed", "error", "flaky", "incompatible")

#: outcomes that count as "this test passed" when asking whether a must clause has a passing test
PASSING_TEST_OUTCOMES = frozenset({"passed", "xpassed"})
#: outcomes of a test whose waiver took effect (expected xfail or skip)
WAIVED_TEST_OUTCOMES = frozenset({"xfailed", "skipped"})


def seed_text(run: Run) -> str:
    """The hypothesis seed as a reader needs it: the number, or why there is none."""
    seed = run.get("hypothesis_seed")
    if seed is not None:
        return str(seed)
    return "none: derandomized (each stream seeded from its clause ID and key)" if run.get(
        "hypothesis_profile") in ("certify", "quick") else "none recorded"

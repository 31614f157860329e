"""A test row without a level takes one from its clauses, decided by the one owner of levels
(:meth:`Level.strictest`): the report builder must not order levels on its own (issue 32: it once said should for
{should, may}, so a failed row checking a may clause did not block the verdict)."""

from __future__ import annotations

from itertools import combinations

import pytest

from conformance_tests.report.builder import _strictest
from conformance_tests.spec.levels import Level

from .conftest import clause, make_report, row

SHOULD_ID, MAY_ID = "push_cache.data.vendor_order", "push_cache.data.envelope"


@pytest.mark.parametrize("levels", [set(c) for n in (1, 2, 3) for c in combinations(Level, n)])
def test_the_builder_and_the_levels_agree(levels: set[Level]) -> None:
    got = _strictest(lv.value for lv in levels)
    assert got == Level.strictest(levels).value, f"_strictest({sorted(levels)}) = {got}"


def test_a_failed_row_over_a_should_and_a_may_clause_blocks_the_verdict() -> None:
    failed = row(SHOULD_ID, "both", "failed", "")
    failed["clauses"] = [SHOULD_ID, MAY_ID]
    del failed["level"]
    report = make_report([failed], [clause(SHOULD_ID, "should"), clause(MAY_ID, "may")])
    assert report["tests"][0]["level"] == "may", report["tests"][0]
    assert report["verdict"]["certified"] is False, report["verdict"]

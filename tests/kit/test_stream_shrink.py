"""``--shrink-time`` bounds the shrinking of a clause's drawn examples as it bounds a history's: 0 reports the first
failing example as it was drawn (the mutants' runs and the vendor-mode tests ask which clauses fail, not how small
their examples get), a positive bound lets hypothesis shrink it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from conformance_tests.procedures.streams import run_stream
from conformance_tests.running import profiles


@pytest.fixture(autouse=True)
def _certify_profile():
    """Certify's profile for each test, the profile before it restored after."""
    previous = settings.default
    settings.load_profile(profiles.DEFAULT)
    yield
    settings.register_profile("_restore", previous)
    settings.load_profile("_restore")


def _failing_stream(shrink_s: float) -> list[int]:
    """The length of each example a stream ran until it reported its failure (a list of three or more items
    fails)."""
    seen: list[int] = []

    def body(example: Any) -> None:
        seen.append(len(example))
        assert len(example) < 3, example

    run: Any = SimpleNamespace(shrink_s=shrink_s)
    with pytest.raises(AssertionError):
        run_stream(run, "push_cache.data.postcondition", "layouts", 40,
                   st.lists(st.integers(), min_size=0, max_size=40), body)
    return seen


def test_no_shrink_time_reports_the_failure_as_drawn() -> None:
    seen = _failing_stream(0)
    first = next(i for i, n in enumerate(seen) if n >= 3)
    # the failing example, then its one replay as hypothesis reports it: no shrinking in between
    assert len(seen) <= first + 2 and all(n >= 3 for n in seen[first:]), seen


def test_a_shrink_time_lets_the_failure_shrink() -> None:
    seen = _failing_stream(30)
    first = next(i for i, n in enumerate(seen) if n >= 3)
    assert len(seen) > first + 2 and seen[-1] == 3, seen  # shrunk to the smallest failing list

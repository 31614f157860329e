"""Generation depends on the test, the profile, the seed and the hypothesis version alone: not on which modules
happen to be imported (hypothesis would otherwise mix their source's constants into its draws)."""

from __future__ import annotations

import importlib
import sys

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from conformance_tests.running import reproducible

#: where each test's new module's constants lie (apart, so one test's module cannot stand for another's)
PINNED, UNPINNED, TWICE, SPAN = 914_000_000_000, 915_000_000_000, 916_000_000_000, 7919 * 200


def draws() -> list[int]:
    """Two hundred derandomized draws of an unbounded integer (any constant is a permitted value)."""
    got: list[int] = []

    @seed(20261201)
    @settings(max_examples=200, database=None, derandomize=True)
    @given(st.integers())
    def collect(n: int) -> None:
        got.append(n)

    collect()
    return got


def import_module_with_constants(where, name: str, base: int) -> None:
    """A new local module whose source holds many distinct integers from `base` on, as a backend's or a test's
    module might."""
    values = ", ".join(str(base + 7919 * i) for i in range(200))
    (where / f"{name}.py").write_text(f"VALUES = ({values})\n")
    sys.path.insert(0, str(where))
    try:
        importlib.import_module(name)
    finally:
        sys.path.remove(str(where))


@pytest.fixture
def unpinned(monkeypatch):
    """Hypothesis as it comes: the kit's pin undone for one test (it proves the pinned test can fail)."""
    from hypothesis.internal.conjecture import providers

    reproducible.pin_generation()
    monkeypatch.setattr(providers, "_get_local_constants", providers._get_local_constants._kit_original)
    providers.CONSTANTS_CACHE.cache.clear()
    yield
    providers.CONSTANTS_CACHE.cache.clear()


def test_importing_a_module_does_not_change_what_is_drawn(tmp_path):
    reproducible.pin_generation()
    before = draws()
    import_module_with_constants(tmp_path, "kit_repro_pinned_constants", PINNED)
    after = draws()
    assert after == before
    assert not any(PINNED <= n < PINNED + SPAN for n in after)


def test_without_the_pin_it_would(tmp_path, unpinned):
    before = draws()
    import_module_with_constants(tmp_path, "kit_repro_unpinned_constants", UNPINNED)
    after = draws()
    assert not any(UNPINNED <= n < UNPINNED + SPAN for n in before)
    assert any(UNPINNED <= n < UNPINNED + SPAN for n in after), "the new module's constants are drawn"
    assert after != before


def test_pinning_twice_keeps_one_empty_pool(tmp_path):
    from hypothesis.internal.conjecture import providers

    reproducible.pin_generation()
    pinned = providers._get_local_constants
    reproducible.pin_generation()
    import_module_with_constants(tmp_path, "kit_repro_twice_constants", TWICE)
    assert providers._get_local_constants is pinned
    assert not providers._get_local_constants().integers

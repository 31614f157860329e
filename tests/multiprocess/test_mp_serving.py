"""The server's "open" finds what a selector names through the key kinds' table and never pins a cache that is
dead or that a deallocation is retiring, whichever kind names it (``serving._live``, used by the CacheKey path and
the live-and-synced path alike). A race the sequence tests cannot stage: here the engine is a stand-in."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from reference_impl.multiprocess.control import PinTable
from reference_impl.multiprocess.serving import ControlServing, _selector

CACHE_ID, MODEL, REQ, BATCH = 3, 7, 5, 1


def _engine(entry: SimpleNamespace) -> SimpleNamespace:
    """The lookups the key kinds make, each finding ``entry`` under the ids the selectors below carry."""
    return SimpleNamespace(
        lookup=lambda cache_id: entry if cache_id == CACHE_ID else None,
        lookup_by_key=lambda req_id, model_id: None,
        lookup_blocks=lambda model_id: entry if model_id == MODEL else None,
        lookup_cache_key=lambda key: (entry, BATCH) if key == (REQ, MODEL, 0) else None,
    )


@pytest.mark.parametrize("selector", [CACHE_ID, ["id", CACHE_ID], ["key", REQ, MODEL, 0], ["blocks", MODEL]])
def test_open_finds_the_named_cache_but_not_a_dead_or_retiring_one(selector: object) -> None:
    serving = ControlServing()
    serving.pins = PinTable()
    entry = SimpleNamespace(cache_id=CACHE_ID, alive=True)
    kind, ids = _selector(selector)
    found = serving._live(kind, _engine(entry), ids)
    assert found is not None and found[0] is entry, f"{selector!r}: the live cache was not found"
    assert found[1] == (BATCH if kind.live_only else None), f"{selector!r}: batch {found[1]}"
    with serving.pins.retire(CACHE_ID):  # no pins to revoke: the body runs at once, the cache marked dying
        assert serving._live(kind, _engine(entry), ids) is None, f"{selector!r}: a retiring cache was found"
    entry.alive = False
    assert serving._live(kind, _engine(entry), ids) is None, f"{selector!r}: a dead cache was found"


@pytest.mark.parametrize("selector", [["id"], ["key", REQ, MODEL], ["blocks", MODEL, 0], ["nope", 1], [], "id",
                                      ["id", "3"], ["id", True]])
def test_a_malformed_selector_is_refused(selector: object) -> None:
    with pytest.raises(ValueError, match="not a cache selector"):
        _selector(selector)

"""The coverage dimensions of kind ``counts``: how many of a thing exist when a push is made (caches on its
destination node, links its source node made, addresses registered on its destination node, pushes running at
once), in range classes over the dimension's [min, max] and, where the spec names a clause for it, one past max.

The kit's procedures know the counts when they push (procedures/counts.py); they record :func:`count_keys`.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..spec import Spec
from ..spec.model import CoverageDimension
from .universe import PAST, RANGE_CLASSES, keys_of

KIND = "counts"


def count_partitions(dim: CoverageDimension) -> tuple[str, ...]:
    return RANGE_CLASSES + ((PAST,) if dim.params.get("past") else ())


def count_classes(dim: CoverageDimension, value: int) -> list[str]:
    """The range classes ``value`` falls in: minimum (min), interior, maximum (max), past (above max, where the
    dimension has a past clause); none below min."""
    lo, hi = int(dim.params["min"]), int(dim.params["max"])
    if value > hi:
        return [PAST] if dim.params.get("past") else []
    out = []
    if value == lo:
        out.append("minimum")
    if lo < value < hi:
        out.append("interior")
    if value == hi:
        out.append("maximum")
    return out


def count_dimensions(spec: Spec) -> dict[str, CoverageDimension]:
    cov = spec.coverage
    return {n: d for n, d in cov.dimensions.items() if d.kind == KIND} if cov is not None else {}


def count_keys(spec: Spec, counts: Mapping[str, int]) -> set[str]:
    """The partition (and pair) keys a push reached, given what was counted when it was made: ``counts`` maps a
    dimension's ``of`` to its number (what a push does not count it leaves out)."""
    cov = spec.coverage
    if cov is None:
        return set()
    facts = {name: count_classes(dim, counts[str(dim.params["of"])])
             for name, dim in count_dimensions(spec).items() if str(dim.params["of"]) in counts}
    return keys_of(facts, cov.pairs)

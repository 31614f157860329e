"""The coverage dimensions of kind ``counts``: how many of a thing exist when a transfer is made (caches on the
node its key names, links its calling node made, addresses registered on the node its key names, pushes running
at once), in range classes over the dimension's [min, max] and, where the spec names a clause for it, one past max.

The kit's procedures know the counts when they transfer (procedures/counts.py); they record
:func:`conformance_tests.coverage.measure.count_keys`.
"""

from __future__ import annotations

from ..spec import Spec
from ..spec.model import CoverageDimension

KIND = "counts"
#: the range classes of a count, in the order the report lists them (the batch indices' names, universe.py)
CLASSES = ("minimum", "interior", "maximum")
PAST = "past"


def count_partitions(dim: CoverageDimension) -> tuple[str, ...]:
    return CLASSES + ((PAST,) if dim.params.get("past") else ())


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

"""What a judgement found different, as records: where in memory each difference is, which cache it is in, and
its text for people.  The judge sorts differences by these fields (a wrong targeted slice, a stray write, a
changed guard band...), never by the words of their text, so a message can be reworded without changing a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Where(Enum):
    """Where in memory a difference is (what a judgement compared)."""

    TARGETED = "targeted"  # inside the slices the push targets
    OUTSIDE = "outside"  # in the destination, outside the targeted slices
    DESTINATION = "destination"  # the destination compared whole (the targeted slices not told apart)
    ENVELOPE = "envelope"  # a destination byte neither its previous value nor the pushed one
    UNCHANGED = "unchanged"  # a cache that must keep its bytes (the source included)
    GUARD = "guard"  # a guard band around a tensor
    FREED = "freed"  # the memory of a freed cache
    CALL = "call"  # not memory: what the call returned, or arguments that describe no transfer


@dataclass(frozen=True)
class Difference:
    """One difference: ``where`` it is, its ``text`` (the line a failure message shows), the ``cache`` it is in
    (None for a guard band, freed memory or the call), and ``shape``: the two sides do not even have the same
    tensors or sizes (nothing in them can be placed byte by byte)."""

    where: Where
    text: str
    cache: str | None = None
    shape: bool = False

    def __str__(self) -> str:
        return self.text


def texts(differences: list[Difference]) -> list[str]:
    """The differences' lines, as a failure message shows them."""
    return [d.text for d in differences]

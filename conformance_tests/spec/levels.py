"""The one owner of the clause levels: their order, which of them block a certification, and the strictest of
several.

The order is the documentation's (must, should, may: how strongly a clause binds a backend); ``blocking`` says
whether a failure stops a certification (``must`` and ``may`` do: a ``may`` clause checks an envelope that every
backend must stay inside; a ``should`` failure is reported as incompatible). The strictest level of a test that
checks several clauses is a blocking one first, then the lower rank.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Level(enum.StrEnum):
    """A clause's level; its value is the name the spec and the reports spell (it compares equal to it)."""

    MUST = "must"
    SHOULD = "should"
    MAY = "may"

    @property
    def rank(self) -> int:
        """0 for must, 1 for should, 2 for may: a clause of rank r draws the spec's data of rank <= r."""
        return list(Level).index(self)

    @property
    def blocking(self) -> bool:
        return self is not Level.SHOULD

    @classmethod
    def strictest(cls, levels: Iterable[Level]) -> Level:
        """The level a test takes from the clauses it checks (must when it checks none)."""
        return min(levels, key=lambda lv: (not lv.blocking, lv.rank), default=cls.MUST)


#: the level names in the documentation's order (what the schema's enum and the reports spell)
LEVELS: tuple[str, ...] = tuple(level.value for level in Level)
#: the names of the levels whose failures block a certification
BLOCKING_LEVELS: frozenset[str] = frozenset(level.value for level in Level if level.blocking)

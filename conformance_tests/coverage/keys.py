"""How a partition and a pair are written: ``dimension=value`` and ``a=x & b=y``, plain strings that cross process
boundaries as data and union over workers and shards; and the class names more than one dimension kind uses."""

from __future__ import annotations

#: the range classes of a batch index, in the order the report lists them (``past`` only with its clause)
RANGE_CLASSES = ("minimum", "interior", "maximum")
PAST = "past"
#: the two states of a parameter that has a default
GIVEN, OMITTED = "given", "omitted"


def key(dimension: str, value: str) -> str:
    return f"{dimension}={value}"


def pair_key(a: str, b: str) -> str:
    return f"{a} & {b}"

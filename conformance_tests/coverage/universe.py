"""Every partition and pair a certify run must reach, derived from the spec alone.

A partition is written ``dimension=value``, a pair ``a=x & b=y``: the keys the measurement records and the
report lists (plain strings, so that they cross process boundaries as data and union over workers and shards).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import product

from ..spec import Signature, Spec
from ..spec.model import CoverageDimension

#: the range classes of a batch index, in the order the report lists them (``past`` only with its clause)
RANGE_CLASSES = ("minimum", "interior", "maximum")
PAST = "past"
#: the two states of a parameter that has a default
GIVEN, OMITTED = "given", "omitted"


def key(dimension: str, value: str) -> str:
    return f"{dimension}={value}"


def pair_key(a: str, b: str) -> str:
    return f"{a} & {b}"


@dataclass(frozen=True)
class Universe:
    partitions: Mapping[str, tuple[str, ...]]  # dimension -> its partitions' values
    pairs: tuple[tuple[str, str], ...]  # the dimensions paired
    blocks_verdict: bool = False  # the spec's: a full run leaving one unreached is NOT CERTIFIED

    def partition_keys(self) -> list[str]:
        return [key(d, v) for d, values in self.partitions.items() for v in values]

    def pair_keys(self) -> list[str]:
        return [pair_key(key(a, x), key(b, y)) for a, b in self.pairs
                for x, y in product(self.partitions[a], self.partitions[b])]


def partitions_of(spec: Spec, signature: Signature, dim: CoverageDimension) -> tuple[str, ...]:
    p = dim.params
    if dim.kind == "members":
        members = spec.types.enums[str(p["type"])].members
        if p.get("sizes") == "documented":
            return tuple(n for n, m in members.items() if isinstance(m.size, int) and m.size_source != "vendor")
        return tuple(members)
    if dim.kind == "call_forms":
        return tuple(str(f) for f in p["forms"])
    if dim.kind == "defaults":
        return tuple(f"{q.name}:{state}" for q in signature.declared if q.has_default and not q.required
                     for state in (GIVEN, OMITTED))
    if dim.kind == "range_classes":
        return RANGE_CLASSES + ((PAST,) if p.get("past") else ())
    if dim.kind == "relations":
        return tuple(str(r["name"]) for r in p["relations"])
    raise ValueError(f"coverage dimension {dim.name}: unknown kind {dim.kind!r}")  # the schema names every kind


def universe(spec: Spec, signature: Signature) -> Universe | None:
    """The partitions and pairs of ``spec``'s coverage section for the release whose signature is given (None:
    the spec asks for none)."""
    cov = spec.coverage
    if cov is None:
        return None
    parts = {name: partitions_of(spec, signature, dim) for name, dim in cov.dimensions.items()}
    return Universe(parts, cov.pairs, cov.blocks_verdict)


def keys_of(facts: Mapping[str, Iterable[str]], pairs: Iterable[tuple[str, str]]) -> set[str]:
    """The partition and pair keys one event reached: ``facts`` maps a dimension to the values it took."""
    out = {key(d, v) for d, values in facts.items() for v in values}
    for a, b in pairs:
        for x, y in product(facts.get(a, ()), facts.get(b, ())):
            out.add(pair_key(key(a, x), key(b, y)))
    return out

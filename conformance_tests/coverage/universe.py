"""Every partition and pair a certify run must reach, derived from the spec alone.

A partition is written ``dimension=value``, a pair ``a=x & b=y``: the keys the measurement records and the
report lists (plain strings, so that they cross process boundaries as data and union over workers and shards).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import product
from typing import Any

from ..backend import capability_supported
from ..spec import Signature, Spec
from ..spec.model import CoverageDimension
from . import counts, durations, rules, setup_inputs
from .keys import GIVEN, OMITTED, PAST, RANGE_CLASSES, key, pair_key


@dataclass(frozen=True)
class Universe:
    partitions: Mapping[str, tuple[str, ...]]  # dimension -> its partitions' values (those the backend can reach)
    pairs: tuple[tuple[str, str], ...]  # the dimensions paired
    blocks_verdict: bool = False  # the spec's: a full run leaving one unreached is NOT CERTIFIED
    excluded: tuple[str, ...] = ()  # partition keys the backend's capabilities exclude (their pairs are left out)

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
        return tuple(f"{name}:{state}" for name in defaulted(signature, dim) for state in (GIVEN, OMITTED))
    if dim.kind == "range_classes":
        return RANGE_CLASSES + ((PAST,) if p.get("past") else ())
    if dim.kind == "relations":
        return tuple(str(r["name"]) for r in p["relations"])
    if dim.kind in setup_inputs.KINDS:
        return setup_inputs.partitions(spec, signature, dim)
    if dim.kind == counts.KIND:
        return counts.count_partitions(dim)
    if dim.kind == rules.KIND:
        return rules.rule_partitions(spec)
    if dim.kind == durations.KIND:
        return durations.partitions(spec)
    raise ValueError(f"coverage dimension {dim.name}: unknown kind {dim.kind!r}")  # the schema names every kind


def defaulted(signature: Signature, dim: CoverageDimension) -> tuple[str, ...]:
    """The parameters of a ``defaults`` dimension: those the release gives a default (a keyword of ``**kwargs``
    whose default the spec states among them), less the dimension's ``given`` (whose default makes no valid
    transfer)."""
    kept = set(dim.params.get("given") or ())
    return tuple(name for name in signature.defaulted if name not in kept)


def declared(dim: CoverageDimension, value: str, caps: Mapping[str, Any]) -> bool:
    """Whether a backend with ``caps`` can reach the partition ``value`` of ``dim`` (its ``requires``)."""
    req = dim.params.get("requires")
    if not setup_inputs.declared(dim, value, caps):
        return False
    if not req:
        return True
    head = str(req["capability"])
    if req.get("per_partition"):
        if head not in caps:
            return value in (req.get("default") or ())
        return capability_supported(caps, f"{head}.{value}")
    return capability_supported(caps, head)


def universe(spec: Spec, signature: Signature, caps: Mapping[str, Any] | None = None,
             release: str | None = None) -> Universe | None:
    """The partitions and pairs of ``spec``'s coverage section for the release whose signature is given, less
    those ``caps`` exclude (None: every one; the result None: the spec asks for none).  ``release``: the
    selected release, whose clauses the generate_rules kind reads (None: every clause)."""
    cov = spec.coverage
    if cov is None:
        return None
    scoped = spec.for_release(release) if release is not None else spec
    parts: dict[str, tuple[str, ...]] = {}
    excluded: list[str] = []
    for name, dim in cov.dimensions.items():
        values = partitions_of(scoped, signature, dim)
        parts[name] = tuple(v for v in values if caps is None or declared(dim, v, caps)
                            and (dim.kind != rules.KIND or rules.rule_declared(scoped, v, caps)))
        excluded += [key(name, v) for v in values if v not in parts[name]]
    return Universe(parts, cov.pairs, cov.blocks_verdict, tuple(excluded))


def keys_of(facts: Mapping[str, Iterable[str]], pairs: Iterable[tuple[str, str]]) -> set[str]:
    """The partition and pair keys one event reached: ``facts`` maps a dimension to the values it took."""
    out = {key(d, v) for d, values in facts.items() for v in values}
    for a, b in pairs:
        for x, y in product(facts.get(a, ()), facts.get(b, ())):
            out.add(pair_key(key(a, x), key(b, y)))
    return out

"""What one push, or one pair of pushes run at once, reached of the spec's coverage dimensions.

Facts are read from what the kit did (the call as made, the caches it was made over), never from the backend's
answer: a push that raised reached its partitions as much as one that returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from ..inputs.values import ABSENT
from ..spec import Spec
from ..spec.model import CoverageDimension
from . import setup_inputs
from .counts import count_classes, count_dimensions
from .rules import KIND as RULES
from .universe import GIVEN, OMITTED, PAST, defaulted, key, keys_of

#: the facts a relation states about two pushes, in the spec's words
RELATION_FACTS = ("source_node", "destination_node", "destination_cache")


def _field_of(spec: Spec, enum: str) -> str | None:
    """The CacheDesc field typed by ``enum``: the attribute of a cache that takes the enum's members."""
    record = spec.types.records.get("CacheDesc")
    if record is None:
        return None
    return next((name for name, f in record.fields.items() if f.type == enum), None)


def _range_class(value: Any, batch: int, past: bool) -> list[str]:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return []
    if value >= batch:
        return [PAST] if past else []
    out = []
    if value == 0:
        out.append("minimum")
    if value == batch - 1:
        out.append("maximum")
    if 0 < value < batch - 1:
        out.append("interior")
    return out


def _push_facts(spec: Spec, signature: Any, dim: CoverageDimension, call: Any, sides: Mapping[str, Any]
                ) -> list[str]:
    p = dim.params
    if dim.kind == "members":
        side, attr = sides.get(str(p["side"])), _field_of(spec, str(p["type"]))
        return [str(getattr(side, attr))] if side is not None and attr is not None else []
    if dim.kind == "call_forms":
        return ["positional" if call.positional else "keywords"]
    if dim.kind == "defaults":
        given = {name for name, v in call.values.items() if v.obj is not ABSENT}
        return [f"{name}:{GIVEN if name in given else OMITTED}" for name in defaulted(signature, dim)]
    if dim.kind == "range_classes":
        side = sides.get(str(p["side"]))
        if side is None:
            return []
        return _range_class(call.raw().get(str(p["argument"]), 0), side.batch, bool(p.get("past")))
    if dim.kind in setup_inputs.KINDS:
        return setup_inputs.facts(spec, signature, dim, call, sides)
    return []  # relations: a fact of two pushes (relation_keys); budget_fractions: of a delay (durations)


def push_facts(spec: Spec, signature: Any, call: Any, src: Any, dst: Any) -> dict[str, list[str]]:
    """Per dimension, the partitions one push reached: ``call`` a testbed Call, ``src``/``dst`` its caches'
    CacheInfo (``dst`` None where the key names no cache the kit knows)."""
    cov = spec.coverage
    if cov is None:
        return {}
    sides = {"src": src, "dst": dst}
    return {name: _push_facts(spec, signature, dim, call, sides) for name, dim in cov.dimensions.items()}


def push_keys(spec: Spec, signature: Any, call: Any, src: Any, dst: Any) -> set[str]:
    cov = spec.coverage
    return keys_of(push_facts(spec, signature, call, src, dst), cov.pairs) if cov is not None else set()


def relation_of(relations: Sequence[Mapping[str, Any]], a: Mapping[str, str], b: Mapping[str, str]) -> str | None:
    """The first relation whose stated facts hold of two pushes (``a``, ``b``: the names of their source node,
    destination node and destination cache, keyed as RELATION_FACTS)."""
    got = {f: "same" if a[f] == b[f] else "different" for f in RELATION_FACTS}
    for rel in relations:
        if all(rel[f] == got[f] for f in RELATION_FACTS if f in rel):
            return str(rel["name"])
    return None


def relation_keys(spec: Spec, relation: str, facts: Sequence[Mapping[str, list[str]]]) -> set[str]:
    """The keys one pair of concurrent pushes reached: its relation (in every dimension of kind relations),
    paired with what each of the two pushes reached (``facts``: their push_facts)."""
    cov = spec.coverage
    if cov is None:
        return set()
    merged: dict[str, list[str]] = {}
    for f in facts:
        for d, values in f.items():
            merged.setdefault(d, []).extend(v for v in values if v not in merged.get(d, []))
    for name, dim in cov.dimensions.items():
        if dim.kind == "relations":
            merged[name] = [relation]
    return keys_of(merged, cov.pairs)


def relations(spec: Spec) -> list[Mapping[str, Any]]:
    """The relations of the spec's relations dimensions, in its order."""
    cov = spec.coverage
    if cov is None:
        return []
    return [r for dim in cov.dimensions.values() if dim.kind == "relations" for r in dim.params["relations"]]


def group_keys(spec: Spec, signature: Any, pushes: Sequence[tuple[Any, Any, Any, Mapping[str, str]]]) -> set[str]:
    """Every partition and pair the pushes of one concurrent group reached: each push alone, and each two of them
    together in their relation.  ``pushes``: (call, src, dst, facts) per push, ``facts`` its RELATION_FACTS names."""
    cov = spec.coverage
    if cov is None:
        return set()
    facts = [push_facts(spec, signature, call, src, dst) for call, src, dst, _ in pushes]
    out: set[str] = set()
    for f in facts:
        out |= keys_of(f, cov.pairs)
    rels = relations(spec)
    for i, j in combinations(range(len(pushes)), 2):
        rel = relation_of(rels, pushes[i][3], pushes[j][3])
        if rel is not None:
            out |= relation_keys(spec, rel, [facts[i], facts[j]])
    return out


def count_keys(spec: Spec, counts: Mapping[str, int]) -> set[str]:
    """The partition (and pair) keys of the counts dimensions a push reached, given what was counted when it was
    made: ``counts`` maps a dimension's ``of`` to its number (what a push does not count it leaves out)."""
    cov = spec.coverage
    if cov is None:
        return set()
    facts = {name: count_classes(dim, counts[str(dim.params["of"])])
             for name, dim in count_dimensions(spec).items() if str(dim.params["of"]) in counts}
    return keys_of(facts, cov.pairs)


def rule_keys(spec: Spec, rules: Sequence[str]) -> set[str]:
    """The generate_rules partitions a generated invalid input reached: the rules that broke it."""
    cov = spec.coverage
    if cov is None:
        return set()
    return {key(name, r) for name, dim in cov.dimensions.items() if dim.kind == RULES for r in rules}

"""Concurrency as a domain: how the pushes of one concurrent step relate (the spec's coverage relations), and
what of the coverage dimensions the step reached."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import TYPE_CHECKING

from ...coverage import relation_keys, relation_of
from ...coverage.measure import push_facts, relations
from ...coverage.universe import keys_of
from ...spec import Signature, Spec
from ...testbed import Call

if TYPE_CHECKING:
    from .pushes import Plan


def names(plan: Plan) -> dict[str, str]:
    """The facts a relation states, of one push: its source node, destination node and destination cache."""
    return {"source_node": plan.client.name, "destination_node": plan.server.name,
            "destination_cache": plan.dst.name if plan.dst is not None else f"id {plan.cache_id}"}


def step_keys(spec: Spec, signature: Signature, plans: Sequence[Plan], calls: Sequence[Call]) -> set[str]:
    """Every partition and pair one concurrent step reached: each push alone, and each two of them together."""
    facts = [push_facts(spec, signature, call, plan.src.info, plan.dst.info if plan.dst else None)
             for plan, call in zip(plans, calls, strict=True)]
    pairs = spec.coverage.pairs if spec.coverage is not None else ()
    out: set[str] = set()
    for f in facts:
        out |= keys_of(f, pairs)
    rels = relations(spec)
    for i, j in combinations(range(len(plans)), 2):
        rel = relation_of(rels, names(plans[i]), names(plans[j]))
        if rel is not None:
            out |= relation_keys(spec, rel, [facts[i], facts[j]])
    return out

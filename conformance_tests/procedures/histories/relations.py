"""Concurrency as a domain in the stateful suite: what of the coverage dimensions one concurrent step reached."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...coverage.measure import group_keys
from ...spec import Signature, Spec
from ...testbed.testbed import Call

if TYPE_CHECKING:
    from .pushes import Plan


def names(plan: Plan) -> dict[str, str]:
    """The facts a relation states, of one push: its source node, destination node and destination cache."""
    return {"source_node": plan.client.name, "destination_node": plan.server.name,
            "destination_cache": plan.dst.name if plan.dst is not None else f"id {plan.cache_id}"}


def step_keys(spec: Spec, signature: Signature, plans: Sequence[Plan], calls: Sequence[Call]) -> set[str]:
    """Every partition and pair one concurrent step reached: each push alone, and each two of them together."""
    return group_keys(spec, signature, [(call, plan.src.info, plan.dst.info if plan.dst else None, names(plan))
                                        for plan, call in zip(plans, calls, strict=True)])

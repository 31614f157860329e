"""A history's push broken by one generate rule of a must or may clause (the machine's ``push_broken`` rule), on a
side the rule names, valid in every other respect, judged by that clause's expect; then valid pushes."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from ...inputs import violations
from ...spec import Clause
from .planning import layout_of
from .pushes import judge_push

if TYPE_CHECKING:
    from .machine import HistoryMachine


def push_broken(m: HistoryMachine, data: Any, clause: Clause, rule_name: str) -> None:
    """A push broken by ``rule_name`` of ``clause``: over a valid plan of equal tensor counts, the side it breaks
    made anew (a generate rule breaks a layout, and the broken layout needs caches of its own)."""
    label = m.label(f"broken by {rule_name} ({clause.id})")
    m.bed.rec.comment(f"push broken by {rule_name} ({clause.id})")
    plan = m.planning.valid_plan(data, same_tensors=True)  # a generate rule breaks a layout of equal tensor counts
    if plan is None or plan.src.num_tensors < violations.RULES[rule_name].min_tensors or plan.dst is None:
        return
    gen = clause.generate
    sides = violations.applicable_sides(rule_name, list(gen.sides) if gen and gen.sides else None)
    side = data.draw(st.sampled_from(sides), label="side")
    base = layout_of(plan)
    broken = violations.RULES[rule_name].apply(data.draw, base, side)
    src, dst = plan.src, plan.dst
    if broken.src != base.src:
        made = m.making.make(data, plan.client, broken.src.desc().with_(register=None), accessible=True)
        if made is None:
            return
        src = made
    if broken.dst != base.dst:
        made = m.making.make(data, plan.server, broken.dst.desc().with_(register=None), accessible=True)
        if made is None:
            return
        dst = made
    if m.world.visibility(plan.link, dst) != "valid":
        m.making.unlink(plan.client, plan.server)
        m.making.link(plan.client, plan.server)
    bad = replace(plan, src=src, dst=dst, cache_id=dst.cache_id, tnpl=broken.tnpl, src_range=broken.src_range,
                  dst_range=broken.dst_range, src_batch=broken.src_batch_index, dst_batch=broken.dst_batch_index,
                  size=broken.size, style="keywords", notes=broken.notes)
    outcome = judge_push(m.h, m.bed, m.world, bad, clause, clause.expect, label)
    m.recover(data, plan.link, label, outcome)

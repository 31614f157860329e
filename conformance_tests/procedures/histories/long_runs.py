"""A long run: many pushes over one link, each judged on its destination, every other byte checked at the end of
each run of :data:`REWRITE_EVERY` pushes (the source rewritten between runs), and keys naming ids the server never
had."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from . import draws
from .pushes import STYLES, Plan, judge_push, loop_line, still

if TYPE_CHECKING:
    from .machine import HistoryMachine

#: pushes of a long run's pair between two rewrites of its source (a source rewritten between pushes)
REWRITE_EVERY = 16


def long_run(m: HistoryMachine, data: Any, plans: list[Plan], count: int, label: str) -> None:
    """``count`` valid pushes over one link, each judged: over each pair of ``plans`` in turn (the first drawn,
    then one of every DataType), a pair's in runs of :data:`REWRITE_EVERY` with its source rewritten between
    them (every batch entry changed), each run in the next calling form of :data:`.pushes.STYLES` (the first
    in the drawn one), so that every DataType of the tour is pushed in every form the signature allows whatever
    the draws (coverage: call_form x data_type by construction); after the first run, keys naming ids the
    server never had (:func:`.draws.unknown_ids`), judged by the clause of ``unknown_cache``."""
    for k, plan in enumerate(plans):
        todo, runs = count // len(plans) + (k < count % len(plans)), 0
        while todo > 0:
            if runs:
                m.bed.rec.comment(f"{plan.src.name} rewritten between pushes")
                m.making.rewrite(data, plan.src)
            n = min(REWRITE_EVERY, todo)
            form = STYLES[(STYLES.index(plan.style) + runs) % len(STYLES)]
            pushes_in_a_row(m, replace(plan, style=form), n, f"{label}, long run over pair {k + 1} of {len(plans)}, run {runs + 1}")
            todo, runs = todo - n, runs + 1
            if k == 0 and runs == 1:
                unknown_keys(m, plan, label)

def pushes_in_a_row(m: HistoryMachine, plan: Plan, count: int, label: str) -> None:
    """``count`` pushes of ``plan``, each judged, the batch entries stepping so that every push changes the
    destination; the script says them as one loop.  Each push is judged on its destination (exactly, and its
    guard bands); every other byte on every node, the source included, once the run ends: a stray write
    persists until then, since nothing else writes (a push that changed its source also makes the next push
    land wrong bytes), and reading every cache of every node after each of a thousand pushes would cost the
    run more than all its pushes."""
    rec = m.bed.rec
    start = len(rec.lines)
    src_b, dst_b = plan.src.batch, plan.dst.batch if plan.dst is not None else 1
    done = 0
    m.bed.focus = frozenset([plan.dst.name] if plan.dst is not None else [])
    try:
        for i in range(count):
            mark = len(rec.lines)
            m.judge_valid(replace(plan, src_batch=i % src_b, dst_batch=(i + 1) % dst_b),
                            f"{label}, push {i + 1} of {count}")
            del rec.lines[mark:]
            done += 1
    finally:
        m.bed.focus = None
        if done:
            rec.lines[start:start] = loop_line(m.h, m.bed, plan, done, (src_b, dst_b))
    still(m.h, m.bed, f"{label}, after its {count} pushes")

def unknown_keys(m: HistoryMachine, plan: Plan, label: str) -> None:
    """Pushes over ``plan``'s link whose keys name ids its server never had, each judged by the clause of
    ``unknown_cache``: ids agreeing with the destination's in their low bits at every common field width, and
    the domain's ends."""
    if "unknown_cache" not in m.h.situations or plan.dst is None:
        return
    used = m.world.ids_on(plan.server.index)
    for cache_id in draws.unknown_ids(m.h.hist.cache_id, plan.dst.cache_id, used):
        judge_push(m.h, m.bed, m.world, replace(plan, dst=None, cache_id=cache_id),
                   m.h.situations["unknown_cache"], None, f"{label}, long run: unknown_cache")


"""A mover's own transfer in a history (a pull of one batch entry, a move of block lists): planned valid in every
respect, called in its calling form and judged by a clause (the history clause, or a situation's), then the link's
recovery: valid transfers over the same link, judged by the clause of what came before, and over another."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from ...inputs.values import Value
from ...spec import Clause
from ..calls import FAULT_BOUND_FACTOR
from . import blocks, pulls
from .blocks import BlocksMove
from .movers import Mover
from .pulls import Pull
from .pushes import judge_transfer

if TYPE_CHECKING:
    from .machine import HistoryMachine

Transfer = Pull | BlocksMove


def between(m: HistoryMachine, data: Any, mover: Mover, client: Any, server: Any, src: Any, dst: Any
            ) -> Transfer | None:
    """The arguments of a valid transfer of ``mover`` from ``src`` into ``dst`` (:mod:`.blocks`, :mod:`.pulls`)."""
    if mover.op.lists:
        return blocks.move_between(m, data, client, server, src, dst, mover)
    return pulls.pull_between(m, data, client, server, src, dst, mover)


def valid(m: HistoryMachine, data: Any, mover: Mover, *, link: tuple[int, int] | None = None,
          keep_link: bool = False, max_layers: int | None = None) -> Transfer | None:
    """A transfer valid in every respect (:func:`.blocks.plan_move`, :func:`.pulls.plan_pull`), over ``link``
    where given, of at most ``max_layers`` layers where given."""
    plan = blocks.plan_move if mover.op.lists else pulls.plan_pull
    return plan(m, data, mover, link=link, keep_link=keep_link, max_layers=max_layers)


def layers(t: Transfer) -> int:
    """How many layers ``t`` moves (a layer's timeout is what a refusal may take, each)."""
    if t.layer_range is not None:
        return len(range(*t.layer_range))
    return t.src.num_tensors // t.tnpl if t.tnpl > 0 else 0


def judged(m: HistoryMachine, t: Transfer, mover: Mover, clause: Clause | None, label: str, *,
           key: Value | None = None, known: bool = True, wait_s: float = 0.0, settle_s: float = 0.0) -> Any:
    """Make ``t`` (its key replaced by ``key``; ``known``: False where that key names no cache of the server) and
    judge it by ``clause`` (None: the history clause); under a fault that waits ``wait_s``, its refusal in time;
    a write may land up to ``settle_s`` after it began."""
    __tracebackhide__ = True
    call = blocks.call_of(m, t, mover, key) if isinstance(t, BlocksMove) else pulls.call_of(m, t, mover, key)
    dst = t.dst if known or t.pulls else None
    return judge_transfer(m.h, m.bed, m.world, t.client, t.server, t.src, dst, call, mover.op,
                          f"{label}: {t.describe()}", clause=clause, bound_extra=FAULT_BOUND_FACTOR * wait_s,
                          in_time=wait_s > 0, settle_s=settle_s)


def recover(m: HistoryMachine, data: Any, mover: Mover, link: tuple[int, int], label: str, raised: bool,
            under_fault: bool = False) -> None:
    """After a refusal, a timeout or a fault (``raised``: the transfer raised; ``under_fault``: a fault injected for
    it made it raise), a valid transfer over the same link, judged by the clause of what came before it
    (``after_timeout`` over a link the fault left faulted, as it is; ``after_refusal``), else by the history clause;
    none over a link that does not see the caches drawn, or that is faulted where no clause says what it must do
    then, or over which a transfer its clause lets succeed could have timed out, with no fault to decide it
    (``undecided``: whether the link is faulted is timing there, and so would be the clause, and a verdict); then
    one over another link.  The draws are the same whatever the outcome was (a budget of 1 ms leaves it to
    timing)."""
    w, h = m.world, m.h
    state = w.links.get(link)
    if state is not None and w.nodes[link[0]].alive and w.nodes[link[1]].alive:
        t = valid(m, data, mover, link=link, keep_link=True)
        if t is not None:
            seen = w.visibility(link, t.src if t.pulls else t.dst) == "valid"
            name = ("after_timeout" if state.faulted and "after_timeout" in h.situations else
                    "after_refusal" if raised and not state.faulted and "after_refusal" in h.situations else None)
            # not made again here: what a relink makes goes to the history's bundles, which must not turn on timing
            if seen and (name is not None or not state.faulted) and (under_fault or not state.undecided):
                judged(m, t, mover, h.situations[name] if name else None,
                       f"{label}, then a valid {mover.api} over the same link" + (f" ({name})" if name else ""))
    others = sorted(p for p in w.usable_links() if p != link)
    if others:
        t = valid(m, data, mover, link=data.draw(st.sampled_from(others), label="another link"))
        if t is not None:
            judged(m, t, mover, None, f"{label}, then a valid {mover.api} over another link")


def in_situation(m: HistoryMachine, data: Any, mover: Mover, t: Transfer | None, name: str, *,
                 key: Value | None = None, known: bool = True, wait_s: float = 0.0, clear: bool = False,
                 settle_s: float = 0.0, what: str | None = None) -> bool:
    """``t`` judged by the clause of situation ``name`` (a refusal under a fault that waits ``wait_s`` must come in
    time; ``clear``: the client's fault is cleared after it; ``settle_s``: a late write's room; ``what``: its
    label, default the situation's name), then the link's recovery; False when there is no ``t``."""
    if t is None:
        return False
    outcome = judged(m, t, mover, m.h.situations[name], m.label(what or name), key=key, known=known,
                     wait_s=wait_s, settle_s=settle_s)
    if clear:
        m.bed.inject_fault(t.client, {"kind": "clear"})
    recover(m, data, mover, t.link, m.label(name), outcome.exc is not None, under_fault=clear or wait_s > 0)
    return True


def wait_left(m: HistoryMachine) -> int:
    """What the history's injected faults may still wait (ms)."""
    return max(0, m.h.stream.wait_ms - m.world.waited_ms)

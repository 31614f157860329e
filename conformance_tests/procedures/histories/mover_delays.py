"""Delays in a mover's history: its own transfer slowed by a delay injected on its client, within
llm.SyncKvCacheWaitTime in all (drawn over the spec's classes) or past it at the first layer, and the budget of the
node a history's opening makes its faulted transfers from (a dropped link, the delays), so that they fit what the
stream may wait."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from ...spec.model import DelayClass
from .delays import beyond_per_layer_ms, draw_within, exceeded_ms, inject_delay, roomiest_link, within_ms
from .mover_transfers import in_situation, layers, valid, wait_left
from .movers import Mover
from .pushes import HistoryRun

if TYPE_CHECKING:
    from .machine import HistoryMachine

#: the situations a mover's opening makes under a fault that costs waiting, from its third node
DROPS = frozenset({"dropped_link", "after_timeout"})
DELAYS = ("delay_within_budget", "delay_exceeded")
#: the layers a delay within the budget is made over: one, so that the delay is the same whether a backend delays
#: each layer's transfer or the call's one transfer (the reference's pull_cache moves all its layers in one), and
#: no timer's granularity per layer, over dozens of layers, can outgrow what separates the delay from the budget
#: and excuse a backend that times out early (judged then by the overtime clause)
DELAYED_LAYERS = 1


def faulting_timeout(h: HistoryRun) -> int | None:
    """The llm.SyncKvCacheWaitTime of a mover run's third node, where its situations hold a link that stops carrying
    data or a delay: the largest budget whose opening (:func:`opening_wait_ms`) costs no more than the stream may
    wait (the opening's faulted transfers go from it: :func:`opening_situations`); None: no such situation or
    wait."""
    if not (DROPS | set(DELAYS)) & set(h.situations) or h.stream.wait_ms <= 0:
        return None
    bounds = h.hist.sync_kv_timeout_ms
    budget = max(bounds.min, h.stream.wait_ms // h.dom.layers[1])
    while budget > bounds.min and opening_wait_ms(h, budget) > h.stream.wait_ms:
        budget -= 1
    return budget


def opening_wait_ms(h: HistoryRun, budget_ms: int) -> int:
    """The most a mover's opening waits on its faulted transfers from a node of ``budget_ms``: a dropped link
    refused at one timeout per layer of the domain's most, a delay within the budget, a delay past it."""
    names, delays = set(h.situations), h.hist.delays
    return ((budget_ms * h.dom.layers[1] if DROPS & names else 0)
            + (within_ms(delays, budget_ms) if "delay_within_budget" in names else 0)
            + (exceeded_ms(delays, budget_ms) if "delay_exceeded" in names else 0))


def delayed(m: HistoryMachine, data: Any, mover: Mover, name: str, *, within: DelayClass | None = None,
             edge: tuple[int, int] | None = None) -> bool:
    """A valid transfer the client's injected delay slows, then the fault cleared: within llm.SyncKvCacheWaitTime
    in all (``delay_within_budget``: its length drawn over the whole interval below the budget, of class
    ``within`` or one drawn among those that fit), or past it at the first layer (``delay_exceeded``).  ``edge``:
    the opening's link, from the node :func:`faulting_timeout` gave a budget; elsewhere the link whose client's
    budget leaves a delay the most room within what the stream may still wait, or any link.  A within-budget delay
    costs what the nearest class may, whatever class it is (what the history draws next must not turn on the
    class, which the opening takes from the history's turn)."""
    w, delays = m.world, m.h.hist.delays
    links = w.usable_links()
    left = wait_left(m)
    if edge is not None:
        if edge not in links:
            return False
        link = edge
    elif not links:
        return False
    elif name == "delay_within_budget" and not data.draw(st.booleans(), label="any link"):
        link = roomiest_link(m, links, left)
    else:
        link = data.draw(st.sampled_from(links), label="delayed link")
    t = valid(m, data, mover, link=link, max_layers=DELAYED_LAYERS if name == "delay_within_budget" else None)
    if t is None:
        return False
    budget, n = t.client.timeout_ms, max(1, layers(t))
    if name == "delay_within_budget":
        cost = within_ms(delays, budget)
        if cost > left:
            return False
        drawn = draw_within(data.draw, delays, budget, cost, within)
        if drawn is None:
            return False
        per_layer = drawn.total_ms / n
    else:
        per_layer, cost = beyond_per_layer_ms(delays, budget), exceeded_ms(delays, budget)
        if cost > left:
            return False
    w.waited_ms += cost
    wait_s, settle_s, what = inject_delay(m, t.client, name, per_layer, n, budget)
    return in_situation(m, data, mover, t, name, wait_s=wait_s, clear=True, what=what, settle_s=settle_s)

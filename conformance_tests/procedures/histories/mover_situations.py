"""The situations of a run whose operation is a mover (a pull of one batch entry, a move of block lists): the
run's own transfer, valid in every respect but the one the situation names, judged by the clause of that
operation's spec that declares it (``history:``), then valid transfers over the same link and another, as a push
in push_cache's situations (:mod:`.machine`) is followed.

A serving system meets these in the middle of its work: a link that stops carrying data mid-transfer, a transfer
slowed within its budget or past it, a peer that dies, a key naming no cache of the peer, a link dropped and not made again, and a block read (pushed from, or
pulled into) after its cache was released.  A situation a mover cannot be in (the other side's cache freed: the
remote table's staleness, which no page of the family specifies) is refused where a spec declares it
(:func:`buildable`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import MultipleResults, multiple, precondition, rule

from ...coverage.durations import delay_keys, fraction_class
from ...inputs.values import Value
from ...spec import Clause
from ...spec.model import DelayClass
from ..calls import FAULT_BOUND_FACTOR, SETTLE_S
from . import blocks, draws, pulls
from .blocks import BlocksMove
from .delays import beyond_per_layer_ms, draw_within, edge_class, exceeded_ms, fraction, within_ms
from .movers import Mover, pairs
from .pulls import Pull
from .pushes import HistoryRun, judge_transfer, still

if TYPE_CHECKING:
    from .machine import HistoryMachine

Transfer = Pull | BlocksMove
Builder = Callable[["HistoryMachine", Any, Mover], bool]
#: situation (schema enum history_situation) -> how a step makes the run's own transfer in it; False: it cannot now
MOVER_SITUATIONS: dict[str, Builder] = {}


def mover_situation(*names: str) -> Callable[[Builder], Builder]:
    def deco(fn: Builder) -> Builder:
        for name in names:
            MOVER_SITUATIONS[name] = fn
        return fn
    return deco


def local_freed(mover: Mover) -> str:
    """The situation of a transfer whose local cache was freed: a push reads its source, a pull writes its
    destination."""
    return "freed_destination" if mover.op.pulls else "freed_source"


def buildable(name: str, mover: Mover) -> bool:
    """Whether a history of ``mover`` can make its transfer in situation ``name``."""
    if name in ("freed_source", "freed_destination"):
        return name == local_freed(mover)
    return name in MOVER_SITUATIONS


# ---- a transfer: planned, called and judged ------------------------------------------------------------------


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


# ---- the situations --------------------------------------------------------------------------------------------


def _wait_left(m: HistoryMachine) -> int:
    return max(0, m.h.stream.wait_ms - m.world.waited_ms)


#: the situations a mover's opening makes under a fault that costs waiting, from its third node
DROPS = frozenset({"dropped_link", "after_timeout"})
DELAYS = ("delay_within_budget", "delay_exceeded")
#: the most layers a delay within the budget is spread over: each layer's wait adds a transfer's own overhead
#: (a timer's granularity), which over dozens of layers can outgrow what separates the delay from the budget and
#: excuse a backend that times out early (judged then by the overtime clause)
DELAYED_LAYERS = 4


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


@mover_situation("dropped_link")
def _dropped(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    """The client's link to the server stops carrying data mid-transfer: the transfer must be refused in time
    (one timeout per layer), and the link carry data again once the cause is gone.  Over the link from the node
    whose budget is least (what the stream may wait must pay for the refusal)."""
    w = m.world
    links = w.usable_links()
    if not links:
        return False
    t = valid(m, data, mover, link=min(links, key=lambda p: (w.nodes[p[0]].timeout_ms, p)))
    if t is None:
        return False
    cost = t.client.timeout_ms * max(1, layers(t))
    if cost > _wait_left(m):
        return False
    m.world.waited_ms += cost
    m.bed.inject_fault(t.client, {"kind": "drop_link", "peer": t.server.cluster_id})
    return in_situation(m, data, mover, t, "dropped_link", wait_s=cost / 1000, clear=True)


@mover_situation("after_timeout")
def _after_timeout(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    """A transfer over a link that stopped carrying data (dropped_link's clause), then valid ones over it."""
    return "dropped_link" in m.h.situations and _dropped(m, data, mover)


def _delayed(m: HistoryMachine, data: Any, mover: Mover, name: str, *, within: DelayClass | None = None,
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
    left = _wait_left(m)
    if edge is not None:
        if edge not in links:
            return False
        link = edge
    elif not links:
        return False
    elif name == "delay_within_budget" and not data.draw(st.booleans(), label="any link"):
        link = max(links, key=lambda p: (min(w.nodes[p[0]].timeout_ms, 2 * left), -p[0], -p[1]))
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
    m.bed.inject_fault(t.client, {"kind": "delay", "seconds": per_layer / 1000})
    delay_s = per_layer * n / 1000
    share = fraction(per_layer * n, budget)
    m.h.run.counters.coverage |= delay_keys(m.h.run.spec, share)
    what = f"{name}: a {fraction_class(m.h.run.spec, share)} delay, {share:.3f} of {budget} ms"
    return in_situation(m, data, mover, t, name, wait_s=delay_s + budget / 1000, clear=True, what=what,
                        settle_s=min(delay_s, (budget + per_layer) / 1000) + SETTLE_S)


@mover_situation("delay_within_budget")
def _delay_within(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    return _delayed(m, data, mover, "delay_within_budget")


@mover_situation("delay_exceeded")
def _delay_exceeded(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    return _delayed(m, data, mover, "delay_exceeded")


@mover_situation("dead_peer")
def _dead_peer(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    """The server dies for good (nothing of it is observed again): a transfer with it is refused in time."""
    if len(m.world.alive()) < 3:
        return False
    t = valid(m, data, mover)
    if t is None:
        return False
    m.bed.inject_fault(t.server, {"kind": "kill_node"})
    t.server.alive = False
    return in_situation(m, data, mover, t, "dead_peer", wait_s=t.client.timeout_ms * max(1, layers(t)) / 1000)


@mover_situation("unknown_cache")
def _unknown(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    """A key naming no cache the server ever had (a model_id no blocks cache of it was bound to, a cache id it
    never handed out: over the whole domain), the transfer valid in every other respect."""
    t = valid(m, data, mover)
    if t is None:
        return False
    server = t.server
    if isinstance(t, BlocksMove):
        used = m.world.model_ids_on(server.index)
        model_id = data.draw(draws.in_domain(m.h.hist.cache_id, sorted(used)).filter(lambda c: c not in used),
                             label="unknown model_id")
        key = blocks.key_of(m, server, model_id)
    else:
        used = m.world.ids_on(server.index)
        cache_id = data.draw(draws.in_domain(m.h.hist.cache_id, sorted(used)).filter(lambda c: c not in used),
                             label="unknown cache_id")
        key = pulls.key_of(m, server, cache_id, 0)
    return in_situation(m, data, mover, t, "unknown_cache", key=key, known=False)


@mover_situation("after_refusal")
def _after_refusal(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    """A transfer refused for a key naming no cache (unknown_cache's clause), then valid ones over its link."""
    return "unknown_cache" in m.h.situations and _unknown(m, data, mover)


def _unlinked(m: HistoryMachine, data: Any, mover: Mover, name: str, nodes: list[tuple[int, int]]) -> bool:
    found = pairs(m, mover.op, nodes)
    if not found:
        return False
    p, src, dst = data.draw(st.sampled_from(found), label="transfer")
    w = m.world
    return in_situation(m, data, mover, between(m, data, mover, w.nodes[p[0]], w.nodes[p[1]], src, dst), name)


@mover_situation("never_linked")
def _never(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    """With a node this one never linked with."""
    return _unlinked(m, data, mover, "never_linked", m.world.never_linked())


@mover_situation("unlinked")
def _unlinked_since(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    """With a node this one unlinked from since it linked."""
    return _unlinked(m, data, mover, "unlinked", m.world.relinkable())


@mover_situation("freed_source", "freed_destination")
def _freed_local(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    """A valid transfer, then its local cache freed (deallocate_cache or deallocate_blocks_cache; unregister_cache
    for a registered one) and the same transfer again: a block read from, or written into, memory its cache
    released."""
    t = valid(m, data, mover)
    if t is None:
        return False
    judged(m, t, mover, None, m.label(f"valid {mover.api}, before its local cache is freed"))
    cache = t.dst if t.pulls else t.src
    if cache.freed or (cache.registered and not m.making.can_unregister):
        return True
    m.bed.free(cache.name, registered=cache.registered)
    cache.freed = True
    still(m.h, m.bed, m.label(f"free {cache.name}"))
    return in_situation(m, data, mover, t, local_freed(mover))


# ---- what a history reaches by construction -------------------------------------------------------------------


def opening_situations(m: HistoryMachine, data: Any, mover: Mover) -> None:
    """Every history of a mover run makes its own transfer once in each situation it judges, after its opening
    moves: a link that stops carrying data, a delay within the budget (of the class the history's turn gives it:
    every class in any run of as many histories) and one past it (these from the third node, whose budget
    :func:`faulting_timeout` set, linked to the first now), a key naming no cache, the local cache freed, a node
    never linked, that third link unlinked, and last a dead peer (the history goes on with the nodes left); each
    followed by its recovery."""
    h, w = m.h, m.world
    label = m.label("open")
    faulting = faulting_timeout(h) is not None and len(w.nodes) > 2
    if faulting:
        m.making.link(w.nodes[2], w.nodes[0])
    edge = (2, 0) if faulting else None
    steps: list[tuple[str, Callable[[], bool]]] = [
        ("dropped_link", lambda: _dropped(m, data, mover)),
        ("delay_within_budget", lambda: _delayed(m, data, mover, "delay_within_budget", edge=edge,
                                                 within=edge_class(h.hist.delays, m.index))),
        ("delay_exceeded", lambda: _delayed(m, data, mover, "delay_exceeded", edge=edge)),
        ("unknown_cache", lambda: _unknown(m, data, mover)),
        (local_freed(mover), lambda: _freed_local(m, data, mover)),
        ("never_linked", lambda: _never(m, data, mover)),
        ("unlinked", lambda: _unlink_then(m, data, mover)),
        ("dead_peer", lambda: _dead_peer(m, data, mover)),
    ]
    for name, make in steps:
        if name in h.situations:
            m.bed.rec.comment(f"{label}: {mover.api} in situation {name}")
            make()


def _unlink_then(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    """The link between the last nodes unlinked (where the history has more than one: the opening's first link
    stays; not the newest, which a relink after a timeout could make any of), then a transfer over a pair unlinked
    since it was linked."""
    w = m.world
    links = w.usable_links()
    if len(links) > 1 and not w.relinkable():
        newest = max(links)
        m.making.unlink(w.nodes[newest[0]], w.nodes[newest[1]])
        still(m.h, m.bed, m.label(f"unlink {w.nodes[newest[0]].name} -> {w.nodes[newest[1]].name}"))
    return _unlinked_since(m, data, mover)


# ---- the rules -------------------------------------------------------------------------------------------------


def situation_rules(h: HistoryRun, made: Any, mover: Mover, rule_name: Callable[[str], str]
                    ) -> dict[str, Callable[..., MultipleResults[Any]]]:
    """A rule per situation the run judges, each making ``mover``'s transfer in it (a valid one where it cannot
    arise now); a situation no history of ``mover`` can be in is refused, naming its clause."""
    out = {}
    for name, clause in h.situations.items():
        if not buildable(name, mover):
            raise ValueError(f"{clause.id}: declares history situation {name!r}, which a history of {mover.api} "
                             f"({mover.op.unit} by {mover.op.direction}) cannot be in (it can: "
                             f"{', '.join(n for n in MOVER_SITUATIONS if buildable(n, mover))})")
        out[rule_name(name)] = _rule(name, made, mover, rule_name(name))
    return out


def _rule(name: str, made: Any, mover: Mover, rule_id: str) -> Callable[..., MultipleResults[Any]]:
    def step(self: HistoryMachine, data: Any) -> MultipleResults[Any]:
        moment = self.world.clock
        self.step(f"{mover.api}: {name}")
        if not MOVER_SITUATIONS[name](self, data, mover):
            t = valid(self, data, mover)  # that situation cannot arise now: a valid transfer instead
            if t is not None:
                judged(self, t, mover, None, self.label(f"valid {mover.api}, in place of {name}"))
        return multiple(*self.made_since(moment))
    step.__name__ = step.__qualname__ = rule_id
    step.__doc__ = f"A {mover.api} in situation {name}."
    return precondition(lambda self: bool(self.world.usable_links()))(rule(target=made, data=st.data())(step))

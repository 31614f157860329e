"""The situations of a run whose operation is a mover (a pull of one batch entry, a move of block lists): the
run's own transfer, valid in every respect but the one the situation names, judged by the clause of that
operation's spec that declares it (``history:``), then valid transfers over the same link and another, as a push
in push_cache's situations (:mod:`.machine`) is followed.

A serving system meets these in the middle of its work: a link that stops carrying data mid-transfer, a transfer
slowed within its budget or past it (:mod:`.mover_delays`), a peer that dies, a key naming no cache of the peer, a
link dropped and not made again, a block read (pushed from, or pulled into) after its cache was released, and a
transfer whose cache on the peer was released after the link's table was synced.  A situation a mover cannot be in
(push_cache's own: a destination closed to remote access, a cache made after the link, pushes at once) is refused
where a spec declares it (:func:`buildable`).  How each transfer is planned, judged and followed:
:mod:`.mover_transfers`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import MultipleResults, multiple, precondition, rule

from . import blocks, draws, pulls
from .blocks import BlocksMove
from .delays import edge_class
from .mover_delays import DELAYS, delayed, faulting_timeout
from .mover_transfers import between, in_situation, judged, layers, valid, wait_left
from .movers import Mover, pairs
from .pushes import HistoryRun, still

if TYPE_CHECKING:
    from .machine import HistoryMachine

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


def remote_freed(mover: Mover) -> str:
    """The situation of a transfer whose cache on the server (the one its key names) was freed: a pull reads its
    source there, a push of blocks writes its destination there."""
    return "freed_source" if mover.op.pulls else "freed_destination"


def buildable(name: str, mover: Mover) -> bool:
    """Whether a history of ``mover`` can make its transfer in situation ``name``."""
    return name in MOVER_SITUATIONS


# ---- the situations --------------------------------------------------------------------------------------------


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
    if cost > wait_left(m):
        return False
    m.world.waited_ms += cost
    m.bed.inject_fault(t.client, {"kind": "drop_link", "peer": t.server.cluster_id})
    return in_situation(m, data, mover, t, "dropped_link", wait_s=cost / 1000, clear=True)


@mover_situation("after_timeout")
def _after_timeout(m: HistoryMachine, data: Any, mover: Mover) -> bool:
    """A transfer over a link that stopped carrying data (dropped_link's clause), then valid ones over it."""
    return "dropped_link" in m.h.situations and _dropped(m, data, mover)


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


def _freed_cache(m: HistoryMachine, data: Any, mover: Mover, name: str) -> bool:
    """A valid transfer, then the cache situation ``name`` names freed (deallocate_cache or
    deallocate_blocks_cache; unregister_cache for a registered one) and the same transfer again: on the client, a
    block read from, or written into, memory its cache released; on the server (the cache the key names, after a
    transfer over the link synced its table), a pull reading, or a push of blocks writing, memory the peer
    released (its clause says what a stale table may do)."""
    t = valid(m, data, mover)
    if t is None:
        return False
    local = name == local_freed(mover)
    side = "local" if local else "server's"
    judged(m, t, mover, None, m.label(f"valid {mover.api}, before its {side} cache is freed"))
    cache = (t.dst if t.pulls else t.src) if local else (t.src if t.pulls else t.dst)
    if cache.freed or (cache.registered and not m.making.can_unregister):
        return True
    m.bed.free(cache.name, registered=cache.registered)
    cache.freed = True
    still(m.h, m.bed, m.label(f"free {cache.name}"))
    return in_situation(m, data, mover, t, name)


# the situations whose builder takes the situation's name: a delay within or past the budget (:mod:`.mover_delays`),
# and the transfer's source or destination freed by its node (a push's source and a pull's destination on this
# node, the others on the server)
for _name in DELAYS:
    MOVER_SITUATIONS[_name] = partial(delayed, name=_name)
for _name in ("freed_source", "freed_destination"):
    MOVER_SITUATIONS[_name] = partial(_freed_cache, name=_name)


# ---- what a history reaches by construction -------------------------------------------------------------------


def opening_situations(m: HistoryMachine, data: Any, mover: Mover) -> None:
    """Every history of a mover run makes its own transfer once in each situation it judges, after its opening
    moves: a link that stops carrying data, a delay within the budget (of the class the history's turn gives it:
    every class in any run of as many histories) and one past it (these from the third node, whose budget
    :func:`faulting_timeout` set, linked to the first now), a key naming no cache, the local cache freed, a node
    never linked, that third link unlinked, the server's cache freed, and last a dead peer (the history goes on
    with the nodes left); each followed by its recovery."""
    h, w = m.h, m.world
    label = m.label("open")
    faulting = faulting_timeout(h) is not None and len(w.nodes) > 2
    if faulting:
        m.making.link(w.nodes[2], w.nodes[0])
    edge = (2, 0) if faulting else None
    steps: list[tuple[str, Callable[[], bool]]] = [
        ("dropped_link", lambda: _dropped(m, data, mover)),
        ("delay_within_budget", lambda: delayed(m, data, mover, "delay_within_budget", edge=edge,
                                                 within=edge_class(h.hist.delays, m.index))),
        ("delay_exceeded", lambda: delayed(m, data, mover, "delay_exceeded", edge=edge)),
        ("unknown_cache", lambda: _unknown(m, data, mover)),
        (local_freed(mover), lambda: _freed_cache(m, data, mover, local_freed(mover))),
        ("never_linked", lambda: _never(m, data, mover)),
        ("unlinked", lambda: _unlink_then(m, data, mover)),
        # after the unlinked pair is found (the server's cache it frees could be the one that pair needs)
        (remote_freed(mover), lambda: _freed_cache(m, data, mover, remote_freed(mover))),
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

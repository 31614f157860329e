"""The family's operations on the other unit in one history (``generation.histories.alongside``): a serving system
keeps contiguous caches and paged blocks caches on the same nodes and moves both over the same links, so a run of
batch entries moves block lists beside its own transfers, and a run of block lists moves batch entries.  Each such
operation goes between caches of its own kind (:meth:`.making.Making.make`'s ``blocks``), which the history makes
beside the run's: a pair before the opening's link, moved by each of them after the run's own opening transfers, and
at any step after by a rule of its own (``with_<method>``).  Their transfers are judged by the run's history clause,
and every judgement reads every live cache of both kinds, so what one kind's transfer does to the other's caches is
seen at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hypothesis.stateful import Bundle, MultipleResults

from . import draws
from .blocks import blocks_rule, opening_moves
from .movers import Mover, callable_on
from .pulls import opening_pulls, pull_rule
from .world import CacheState, NodeState

if TYPE_CHECKING:
    from .machine import HistoryMachine

#: what an opening made for the operations alongside: for each kind of cache (True: blocks caches) the movers of
#: that kind the backend has and the pair made for them (None: no room)
Beside = list[tuple[bool, list[Mover], tuple[CacheState, CacheState] | None]]


def rules(movers: tuple[Mover, ...], made: Bundle[Any]) -> dict[str, Callable[..., MultipleResults[Any]]]:
    """A rule per operation alongside (:func:`.movers.alongside_movers`), named ``with_<method>`` (sorting after
    the run's own rules: a shrink moves towards the first rules, and a history must shrink to the run's own
    transfers first)."""
    out = {}
    for mover in movers:
        rule_of = blocks_rule if mover.op.lists else pull_rule
        out[f"with_{mover.api}"] = rule_of(made, mover, f"with_{mover.api}")
    return out


def make_pairs(m: HistoryMachine, data: Any, movers: tuple[Mover, ...], client: NodeState,
               server: NodeState) -> Beside:
    """Before the opening's link: for each kind of cache the operations alongside move (those the backend has), a
    source of a drawn layout on ``client`` and a destination made for it on ``server``.  A stream of real models'
    caches makes none (its caches fill its byte budget)."""
    h = m.h
    if h.stream.layouts != "drawn":
        return []
    usable = [v for v in movers if callable_on(m, v)]
    out: Beside = []
    for kind in dict.fromkeys(v.op.lists for v in usable):
        desc, tnpl = draws.fresh_desc(data.draw, h.run.spec, h.dom, h.stream, h.max_bytes)
        pair = m.making.make_pair(data, client, server, desc, tnpl, blocks=kind)
        out.append((kind, [v for v in usable if v.op.lists == kind], pair))
    return out


def opening(m: HistoryMachine, data: Any, beside: Beside, label: str) -> None:
    """After the run's own opening transfers: each pair :func:`make_pairs` made moved by each operation of its kind,
    by its direction (a push from the client's cache into the server's, a pull the other way)."""
    for kind, movers, pair in beside:
        if pair is not None:
            (opening_moves if kind else opening_pulls)(m, data, movers, [pair], f"{label}, alongside")

"""The operations a history moves data with besides push_cache's situations: the run's own (a pull of a batch entry,
a move of block lists) and its companion, the family's operation the spec's ``generation.histories.companion``
names (a serving system pushes and pulls over the same links, between the same caches).  Each is a
:class:`Mover`: what its spec's ``operation`` section says of it, the method it calls and the parameters that
method takes; a companion's transfers are judged like the run's own, by the run's history clause."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, MultipleResults, precondition, rule

from ...backend import capability_supported
from ...spec import Signature, load_spec, operation_spec_path, specified_operations
from ...spec.model import Operation
from .planning import MAX_LIVE_CACHES
from .pushes import HistoryRun
from .world import CacheState, NodeState

if TYPE_CHECKING:
    from .machine import HistoryMachine


#: the capability a backend declares to have blocks caches (what a move of block lists goes between)
BLOCKS_CACHE = "blocks_cache"


@dataclass(frozen=True)
class Mover:
    """An operation a history moves data with: its spec's ``operation``, the method it calls and the signature it
    is called by."""

    op: Operation
    api: str
    signature: Signature  # the release's it is called in (what a call passes, and in which calling forms)


def own(h: HistoryRun) -> Mover:
    """The run's own operation."""
    return Mover(h.run.spec.operation, h.run.spec.api, h.run.signature)


def _specified(h: HistoryRun, name: str, field: str) -> Mover:
    """The family operation ``name`` as a mover, from its own spec (its latest release's signature); ``field``:
    the spec's field that names it (what a refusal says)."""
    if name not in specified_operations():
        raise ValueError(f"{h.run.spec.api}: generation.histories.{field} names {name!r}, which has no spec file "
                         f"(operations with one: {', '.join(specified_operations())})")
    spec = load_spec(operation_spec_path(name))
    return Mover(spec.operation, name, spec.signature_for(spec.releases[-1]))


def companion(h: HistoryRun) -> Mover | None:
    """The operation the spec's histories mix in (``generation.histories.companion``; None: none), from its own
    spec (its latest release's signature).  It must move the run's unit the other way: the history's caches are made
    for the run's unit, and a companion in the same direction would add nothing the run's own step does not."""
    name = h.hist.companion
    if name is None:
        return None
    found = _specified(h, name, "companion")
    mine, theirs = h.run.spec.operation, found.op
    if (theirs.unit, theirs.direction) != (mine.unit, "pull" if mine.direction == "push" else "push"):
        raise ValueError(f"{h.run.spec.api}: generation.histories.companion {name!r} moves {theirs.unit} by "
                         f"{theirs.direction}; a companion moves the run's unit ({mine.unit}) the other way")
    return found


def alongside_movers(h: HistoryRun) -> tuple[Mover, ...]:
    """The operations the spec's histories mix in on the other unit (``generation.histories.alongside``), each from
    its own spec.  Each must move a unit other than the run's: its transfers go between caches of its own kind
    (blocks caches for block lists, contiguous ones for batch entries), which the history makes beside the run's on
    the same nodes; one moving the run's unit is the companion's part."""
    found = tuple(_specified(h, name, "alongside") for name in h.hist.alongside)
    for v in found:
        if v.op.unit == h.run.spec.operation.unit:
            raise ValueError(f"{h.run.spec.api}: generation.histories.alongside names {v.api!r}, which moves the "
                             f"run's own unit ({v.op.unit}); an operation alongside moves the other one")
    return found


def callable_on(m: HistoryMachine, mover: Mover) -> bool:
    """Whether the backend's nodes have the mover's method, and blocks caches where it moves block lists (a
    companion is moved only where they do); asked once per history (a rule's precondition asks at every step, and
    an isolated backend answers over its pipe)."""
    if not m.world.nodes:
        return False
    known: dict[str, bool] = m.__dict__.setdefault("callable_methods", {})
    if mover.api not in known:
        manager = m.bed.nodes[m.world.nodes[0].name].cache_manager
        known[mover.api] = (callable(getattr(manager, mover.api, None))
                            and (not mover.op.lists or capability_supported(m.h.run.caps, BLOCKS_CACHE)))
    return known[mover.api]


def pairs(m: HistoryMachine, op: Operation, links: list[tuple[int, int]] | None = None
          ) -> list[tuple[tuple[int, int], CacheState, CacheState]]:
    """(link, source, destination) a valid transfer of ``op`` could go between over a usable link (client ->
    server), or over ``links`` (pairs of nodes, linked or not): a push's source on the client, a pull's on the
    server; the server's cache open to remote access; both of the kind ``op`` moves (blocks caches for block
    lists)."""
    w = m.world
    out = []
    # in the order of the nodes, not of the links' making: a link made again (after a timeout a budget of 1 ms
    # leaves to timing) would move in a list a draw indexes
    for link in sorted(w.usable_links() if links is None else links):
        src_node, dst_node = (link[1], link[0]) if op.pulls else link
        srcs, dsts = list(w.sources(src_node, blocks=op.lists)), w.live(dst_node, blocks=op.lists)
        out += [(link, s, d) for s in srcs for d in dsts
                if d is not s and m.planning.tnpls(s, d, open_=s if op.pulls else d)]
    return out


def choose_pair(m: HistoryMachine, data: Any, mover: Mover, what: str, *, dst_accessible: bool | None,
                link: tuple[int, int] | None = None, keep_link: bool = False
                ) -> tuple[NodeState, NodeState, CacheState, CacheState] | None:
    """(client, server, source, destination) of a transfer of ``mover`` valid in every respect: between existing
    caches, into a destination made for an existing source, or from a new source into a new destination (a pull's
    source on the server, a push's on the client; ``dst_accessible``: how the new destination is made); a link
    that does not see the server's cache yet, or over which a transfer that could time out went (``at_risk``), is
    made again first (as a valid push's). ``link``: over that link only; ``keep_link``: between the caches there
    are, the link left as it is (the caller says whether it sees them: what a link must do after a timeout may be
    the point).  What is drawn never turns on an earlier transfer's outcome, which a budget of 1 ms leaves to
    timing (hypothesis replays a history's choices and must meet the same draws): nor does whether the link is
    made again, which adds to the history's bundles.  ``what`` labels the draws."""
    w, op = m.world, mover.op
    links = sorted(p for p in w.usable_links() if link is None or p == link)
    if not links:
        return None
    found = pairs(m, op, links)
    if keep_link:
        if not found:
            return None
        p, src, dst = data.draw(st.sampled_from(found), label=what)
        return w.nodes[p[0]], w.nodes[p[1]], src, dst
    src_end = 1 if op.pulls else 0
    sources = [(p, s) for p in links for s in w.sources(p[src_end], blocks=op.lists)]
    crowded = len(w.live()) >= MAX_LIVE_CACHES and found
    ways = ((["existing"] * 3 if found else []) + (["new destination"] if sources and not crowded else [])
            + (["new source"] if not crowded else []))
    way = data.draw(st.sampled_from(ways), label=f"{what} between")
    if way != "existing":
        made = m.planning.new_pair(data, links, sources, way, src_end=src_end, dst_accessible=dst_accessible,
                                   blocks=op.lists)
        if made is None:
            return None
        p, src, dst = made
        found = [(p, src, dst)] if m.planning.tnpls(src, dst, open_=src if op.pulls else dst) else []
    if not found:
        return None
    p, src, dst = data.draw(st.sampled_from(found), label=what)
    client, server = w.nodes[p[0]], w.nodes[p[1]]
    if w.visibility(p, src if op.pulls else dst) != "valid" or w.links[p].at_risk:
        m.making.unlink(client, server)
        m.making.link(client, server)
    return client, server, src, dst


def opening_pairs(m: HistoryMachine, movers: list[Mover], made: list[tuple[CacheState, CacheState] | None]
                  ) -> Iterator[tuple[Mover, int, NodeState, NodeState, CacheState, CacheState]]:
    """(mover, pair number, client, server, source, destination) for each mover the backend has, in order, over each
    pair the opening made (a cache on the client, one on the server, both before the link), by its direction."""
    client, server = m.world.nodes[0], m.world.nodes[1]
    for mover in (v for v in movers if callable_on(m, v)):
        for i, pair in enumerate(p for p in made if p is not None):
            mine, theirs = pair
            src, dst = (theirs, mine) if mover.op.pulls else (mine, theirs)
            if src.live and dst.live:
                yield mover, i + 1, client, server, src, dst


def mover_rule(step: Callable[..., MultipleResults[Any]], made: Bundle[Any], mover: Mover,
               name: str) -> Callable[..., MultipleResults[Any]]:
    """``step`` as a machine rule named ``name`` (what it made goes to ``made``), taken where a link is usable and
    the backend has the mover's method."""
    # named before hypothesis wraps it: the name is the rule's in a printed history
    step.__name__ = step.__qualname__ = name
    return precondition(lambda self: bool(self.world.usable_links()) and callable_on(self, mover))(
        rule(target=made, data=st.data())(step))

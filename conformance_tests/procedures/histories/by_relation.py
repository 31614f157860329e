"""Concurrency as a domain of the stateful suite: a concurrent step draws its pushes by relation (the spec's
coverage ``relations``: source node, destination node and destination cache the same or different), building on
the history's live nodes the caches and links the relation needs, as relation_topology lays them out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from ...coverage.measure import relation_of, relations
from ...spec import CacheSpec
from ..relation_topology import PushSlot
from . import draws
from .concurrent import run_together
from .world import CacheState, NodeState

if TYPE_CHECKING:
    from .machine import HistoryMachine

#: the nodes a step's pushes are laid over: every relation holds between two pushes over three (a fan needs a
#: third node), so a history that pushes in every relation has three at least, whatever its turn
NODES = ("n0", "n1", "n2")


def layout(relation: Mapping[str, Any], rels: Sequence[Mapping[str, Any]]) -> list[PushSlot]:
    """Two pushes in ``relation`` over the fewest of :data:`NODES`: push 0 from n0 into n1, push 1 the first
    whose facts the measurement (coverage.measure.relation_of, over ``rels``: the spec's) classifies as
    ``relation``; on one cache, each push writes its own batch entry."""
    first = PushSlot("n0", "n1", "src0", "dst0", 0)
    for client in NODES:
        for server in NODES:
            for dst, entry in (("dst1", 0), ("dst0", 1)):
                if client == server or (dst == "dst0" and server != first.server):
                    continue
                facts = [{"source_node": p.client, "destination_node": p.server, "destination_cache": p.dst}
                         for p in (first, PushSlot(client, server, "src1", dst, entry))]
                if relation_of(rels, facts[0], facts[1]) == relation["name"]:
                    return [first, PushSlot(client, server, "src1", dst, entry)]
    raise ValueError(f"relation {relation.get('name')!r}: no two pushes over {len(NODES)} nodes hold it")


def node_names(laid: list[PushSlot]) -> list[str]:
    return list(dict.fromkeys(n for p in laid for n in (p.client, p.server)))


def spec_of(cache: CacheState, *, batch: int | None = None) -> CacheSpec:
    shape = tuple(cache.info.shape)
    return CacheSpec(cache.num_tensors, (batch, *shape[1:]) if batch is not None else shape, cache.info.data_type,
                     cache.info.placement)


def drawn_relation(m: HistoryMachine, data: Any) -> bool:
    """A concurrent step of a relation drawn among those the history's live nodes can hold."""
    rels = relations(m.h.run.spec)
    fit = [r for r in rels if len(node_names(layout(r, rels))) <= len(m.world.alive())]
    if not fit:
        return False
    return push_in_relation(m, data, data.draw(st.sampled_from(fit), label="relation"))


def push_in_relation(m: HistoryMachine, data: Any, relation: Mapping[str, Any]) -> bool:
    """Two pushes at once in ``relation``: fresh sources and destinations on live nodes placed as the relation
    states (on one cache, each push writes its own batch entry), made before their links (relinked where a link
    is older, or a timeout left it faulted); False when the nodes or their memory cannot hold them."""
    h, w = m.h, m.world
    laid = layout(relation, relations(h.run.spec))
    names = node_names(laid)
    alive = w.alive()
    if len(alive) < len(names):
        return False
    picked: list[NodeState] = data.draw(st.permutations(alive), label="relation nodes")[:len(names)]
    node = dict(zip(names, picked, strict=True))
    made: dict[str, CacheState] = {}
    for slot in laid:
        client, server = node[slot.client], node[slot.server]
        if slot.dst in made:  # one destination cache: a source like the first on this push's client
            first = made[laid[0].src]
            src = m.making.make(data, client, spec_of(first), accessible=True, layers_of=first.layers_of)
        else:
            desc, tnpl = draws.fresh_desc(data.draw, h.run.spec, h.dom, h.stream, h.max_bytes)
            src = m.making.make(data, client, desc, accessible=True, layers_of=tnpl)
            if src is not None:
                mirror = draws.mirror_desc(data.draw, src, tnpl, h.dom, h.stream)
                shared = sum(1 for s in laid if s.dst == slot.dst)
                dst = m.making.make(data, server, replace(mirror, shape=(max(shared, mirror.shape[0]),
                                                                          *mirror.shape[1:])),
                                    accessible=True, layers_of=tnpl)
                if dst is None:
                    return False
                made[slot.dst] = dst
        if src is None:
            return False
        made[slot.src] = src
    for client, server in dict.fromkeys((node[s.client], node[s.server]) for s in laid):
        link = w.links.get((client.index, server.index))
        if link is not None and (link.at_risk or any(w.visibility((client.index, server.index), made[s.dst])
                                                     != "valid" for s in laid if node[s.server] is server)):
            m.making.unlink(client, server)
            link = None
        if link is None:
            m.making.link(client, server)
    one_cache = len({s.dst for s in laid}) < len(laid)
    plans = []
    for slot in laid:
        plan = m.planning.plan(data, node[slot.client], node[slot.server], made[slot.src], made[slot.dst])
        if plan is None:
            return False
        plans.append(replace(plan, style="keywords", dst_batch=slot.dst_batch if one_cache else plan.dst_batch))
    return run_together(m, plans, m.label(f"concurrent, {relation['name']}"))

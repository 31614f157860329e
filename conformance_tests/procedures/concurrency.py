"""The ``concurrent`` procedure: several threads push at once, one test per relation of the spec's coverage (same
or different source node, destination node, destination cache: procedures/relation_topology.py builds the
cluster); each push is judged exactly as if it had been the only one (on one cache, over the entries the others
wrote)."""

from __future__ import annotations

from ..coverage.measure import group_keys, relations
from ..inputs.values import Deferred, Value
from ..judging.judge import fail
from ..running.context import RunContext
from ..spec import CacheSpec, Clause
from ..testbed.testbed import CacheInfo, Call
from .at_once import judge_each, others_into_own, push_at_once
from .common import per_call_bound, require
from .histories.bed import HistoryBed
from .histories.world import NodeState
from .registry import Item, procedure
from .relation_topology import PushSlot, node_names, pushes_for, slots

#: the relation of the spec's first concurrent test, where the spec names no relations
DISTINCT_CACHES = {"name": "check", "source_node": "same", "destination_node": "same", "destination_cache": "different"}


def _relation_items(run: RunContext, clause: Clause) -> list[Item]:
    """One test per relation and per destination placement the backend declares (the spec's coverage pairs the
    relation with the memory its writers meet in)."""
    declared = set(run.caps.get("placements") or ["DEVICE"])
    table = run.spec.types.enums.get("Placement")
    places = [p for p in (table.members if table else ()) if p in declared] or [clause.scenario.dst.placement]
    rels = relations(run.spec) or [DISTINCT_CACHES]
    return [Item(f"{r['name']}-{p}", (r, p)) for r in rels for p in places]


def _max_nodes(run: RunContext) -> int:
    hist = run.spec.generation.histories if run.spec.generation is not None else None
    return hist.nodes.max if hist is not None else 2


@procedure("concurrent", _relation_items)
def run_concurrent(run: RunContext, clause: Clause, item: Item) -> None:
    require(run, clause.requires)
    relation, placement = item.data
    n = pushes_for(relation, clause.procedure.threads, clause.scenario.dst.shape[0], _max_nodes(run))
    plan = slots(relation, n)
    bed = HistoryBed(run, label=f"concurrent ({item.key})")
    try:
        _run(run, clause, bed, plan, clause.scenario.dst.with_(placement=placement))
    finally:
        bed.close()


def _nodes(run: RunContext, clause: Clause, names: list[str], plan: list[PushSlot]) -> list[NodeState]:
    """The relation's nodes: a push's source node as the scenario's local node, a destination as its remote."""
    scen = clause.scenario
    servers = {p.server for p in plan}
    out = []
    for i, name in enumerate(names):
        spec = scen.remote if name in servers else scen.local
        out.append(NodeState(i, name, i + 1, spec.role, 0, dict(spec.options)))
    return out


def _run(run: RunContext, clause: Clause, bed: HistoryBed, plan: list[PushSlot], dst_desc: CacheSpec) -> None:
    scen = clause.scenario
    nodes = {n.name: n for n in _nodes(run, clause, node_names(plan), plan)}
    bed.open_nodes(list(nodes.values()))
    caches: dict[str, CacheInfo] = {}
    for p in plan:
        if p.src not in caches:
            caches[p.src] = bed.make_cache(p.src, p.client, scen.src)
            bed.fill_random(caches[p.src])
        if p.dst not in caches:
            caches[p.dst] = bed.make_cache(p.dst, p.server, dst_desc, guard=True)
            bed.fill_sentinel(caches[p.dst])
    for link in dict.fromkeys((p.client, p.server) for p in plan):
        bed.link_nodes(nodes[link[0]], nodes[link[1]])
    calls = [_call(bed, nodes[p.server], caches[p.src], caches[p.dst], p, k) for k, p in enumerate(plan)]
    pushes = [bed.aimed(p.client, p.server, caches[p.src], caches[p.dst], c) for p, c in zip(plan, calls, strict=True)]
    n = len(plan)
    outcomes, hung = push_at_once(bed, pushes, per_call_bound(run))
    assert not hung, f"clause {clause.id}: concurrent pushes {hung} did not return (hang)"
    run.counters.push_calls += n
    run.counters.coverage |= group_keys(run.spec, run.signature, [
        (c, caches[p.src], caches[p.dst], {"source_node": p.client, "destination_node": p.server,
                                           "destination_cache": p.dst}) for p, c in zip(plan, calls, strict=True)])
    returned = [j for j, out in enumerate(outcomes) if out.exc is None]
    # each push over the entries the other pushes into its cache wrote (disjoint); the other destinations are
    # judged by their own pushes
    models = [others_into_own(bed, pushes, returned, i, bed.before) for i in range(n)]
    excused = [frozenset(q.dst for q in plan if q.dst != p.dst) for p in plan]
    for judged in judge_each(bed, pushes, outcomes, [clause.expect] * n, models, excused):
        i = judged.index
        if judged.problem:
            fail(clause.id, f"thread {i}", calls[i], judged.problem)
        if judged.problems:
            fail(clause.id, f"thread {i}", calls[i], f"destination {plan[i].dst} is wrong after concurrent pushes",
                 judged.problems)


#: the pushes of a plan at once, each judged (procedures/counts.py runs it for its pushes_at_once counts)
run_plan = _run


def _call(bed: HistoryBed, server: NodeState, src: CacheInfo, dst: CacheInfo, p: PushSlot, k: int) -> Call:
    """Push ``k`` by keyword, the parameters with defaults left to them: into ``dst``'s entry ``p.dst_batch``."""
    key = Value(Deferred(bed.api.CacheKeyByIdAndIndex, [server.cluster_id, dst.cache.cache_id, p.dst_batch]),
                f"api.CacheKeyByIdAndIndex({server.cluster_id}, {dst.name}.cache_id, {p.dst_batch})")
    batch = k % src.batch
    return Call({"dst_cache_key": key, "src_cache": Value(src.cache, src.name),
                 "src_batch_index": Value(batch, repr(batch))}, bed.run.spec.api)

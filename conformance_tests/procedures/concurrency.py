"""The ``concurrent`` procedure: several threads make the spec's transfer at once, one test per relation of the
spec's coverage (same or different source node, destination node, destination cache: procedures/relation_topology.py
builds the cluster; a push is made by its source node, a pull by its destination node); each transfer is judged
exactly as if it had been the only one (on one cache, over the entries the others wrote)."""

from __future__ import annotations

from ..coverage.measure import group_keys, relations
from ..inputs.values import Value
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
from .transfer_keys import key_of_cache, one_entry_each

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


def _caller(run: RunContext, p: PushSlot) -> str:
    """The node that makes slot ``p``'s transfer: a push's source node, a pull's destination node."""
    return p.server if run.spec.operation.pulls else p.client


def _keyed(run: RunContext, p: PushSlot) -> str:
    """The node whose cache the key of slot ``p``'s transfer names: a push's destination node, a pull's source."""
    return p.client if run.spec.operation.pulls else p.server


def _nodes(run: RunContext, clause: Clause, names: list[str], plan: list[PushSlot]) -> list[NodeState]:
    """The relation's nodes: a node that makes a transfer as the scenario's local node, one a key names as its
    remote."""
    scen = clause.scenario
    keyed = {_keyed(run, p) for p in plan}
    out = []
    for i, name in enumerate(names):
        spec = scen.remote if name in keyed else scen.local
        out.append(NodeState(i, name, i + 1, spec.role, 0, dict(spec.options)))
    return out


def _run(run: RunContext, clause: Clause, bed: HistoryBed, plan: list[PushSlot], dst_desc: CacheSpec) -> None:
    scen = clause.scenario
    nodes = {n.name: n for n in _nodes(run, clause, node_names(plan), plan)}
    bed.open_nodes(list(nodes.values()))
    caches: dict[str, CacheInfo] = {}
    model_ids: dict[str, int] = {}  # a keyed blocks cache's model id (its BlocksCacheKey), by cache name
    for p in plan:
        for name, node, desc, fill in ((p.src, p.client, scen.src, bed.fill_random),
                                       (p.dst, p.server, dst_desc, bed.fill_sentinel)):
            if name in caches:
                continue
            keyed = node == _keyed(run, p) and desc.blocks
            if keyed:
                model_ids[name] = len(model_ids)
            desc = desc.with_(model_id=model_ids[name] if keyed else None)
            caches[name] = bed.make_cache(name, node, desc, guard=name == p.dst)
            fill(caches[name])
    for link in dict.fromkeys((_caller(run, p), _keyed(run, p)) for p in plan):
        bed.link_nodes(nodes[link[0]], nodes[link[1]])
    calls = [_call(bed, nodes[_keyed(run, p)], caches[p.src], caches[p.dst], p, k, model_ids)
             for k, p in enumerate(plan)]
    pushes = [bed.aimed(_caller(run, p), _keyed(run, p), caches[p.src], caches[p.dst], c)
              for p, c in zip(plan, calls, strict=True)]
    n = len(plan)
    outcomes, hung = push_at_once(bed, pushes, per_call_bound(run))
    assert not hung, f"clause {clause.id}: concurrent transfers {hung} did not return (hang)"
    run.counters.push_calls += n
    run.counters.coverage |= group_keys(run.spec, run.signature, [
        (c, caches[p.src], caches[p.dst], {"source_node": p.client, "destination_node": p.server,
                                           "destination_cache": p.dst}) for p, c in zip(plan, calls, strict=True)])
    returned = [j for j, out in enumerate(outcomes) if out.exc is None]
    # each transfer over the entries the others into its cache wrote (disjoint); the other destinations are
    # judged by their own transfers
    models = [others_into_own(bed, pushes, returned, i, bed.before) for i in range(n)]
    excused = [frozenset(q.dst for q in plan if q.dst != p.dst) for p in plan]
    for judged in judge_each(bed, pushes, outcomes, [clause.expect] * n, models, excused):
        i = judged.index
        if judged.problem:
            fail(clause.id, f"thread {i}", calls[i], judged.problem)
        if judged.problems:
            fail(clause.id, f"thread {i}", calls[i], f"destination {plan[i].dst} is wrong after concurrent "
                 "transfers", judged.problems)


#: the pushes of a plan at once, each judged (procedures/counts.py runs it for its pushes_at_once counts)
run_plan = _run


def _call(bed: HistoryBed, keyed_node: NodeState, src: CacheInfo, dst: CacheInfo, p: PushSlot, k: int,
          model_ids: dict[str, int]) -> Call:
    """Transfer ``k`` by keyword, the parameters with defaults left to them: entry (block) ``k % batch`` of ``src``
    into entry ``p.dst_batch`` of ``dst``; the key names the cache on ``keyed_node`` (a push's destination, a
    pull's source): its BlocksCacheKey, else that entry of it by id and index."""
    op = bed.run.spec.operation
    keyed, local = (src, dst) if op.pulls else (dst, src)
    src_entry = k % src.batch
    keyed_entry = src_entry if op.pulls else p.dst_batch
    key = key_of_cache(bed.api, keyed_node.cluster_id, keyed, model_ids.get(keyed.name), keyed_entry)
    values = {op.key: key, op.cache: Value(local.cache, local.name), **one_entry_each(op, src_entry, p.dst_batch)}
    return Call(values, bed.run.spec.api, key=op.key, key_entries=op.key_entries)

"""Coverage by construction of the spec's ``counts`` dimensions: in every run, one test per dimension builds the
minimum, an interior count and the maximum of what it counts and makes the run's transfer at each, judged by the
clause its ``covered_by`` names (and, where it has one, a test of its ``past`` clause goes one past max).  The
caches counted are the ones a key names (on the server: a push's destination, a pull's source); the transfer is
the spec's operation (``operation``: its key, its local cache, batch entries or block lists):

- caches_per_node: caches made one after another on the server; a transfer with the first made at the minimum,
  with the last made at an interior count, with the last and the first at the maximum;
- links_per_node: the client linked to one server after another; a transfer with the newest server each time,
  and with every server once it holds the maximum;
- registered_addresses: registered caches on the server adding up to the count (a transfer with the newest, and
  at the maximum with the first too); past: one more registration above max, which may be refused (nothing
  written) or accepted (then its transfer is judged by the past clause);
- pushes_at_once: that many threads pushing at once into caches of their own (concurrency.py judges each).

Every transfer is judged exactly (its expect), every other cache and guard band unchanged; the count is recorded
with the transfer as the coverage's keys (coverage/counts.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..coverage.counts import count_dimensions
from ..coverage.measure import count_keys
from ..inputs.values import Value
from ..judging.judge import fail, judge
from ..judging.observation import Observation
from ..running.context import RunContext
from ..spec import Clause
from ..spec.model import CoverageDimension
from ..testbed.errors import HarnessError
from ..testbed.testbed import CacheInfo, Call, Outcome
from . import concurrency
from .common import per_call_bound, require
from .histories.bed import HistoryBed
from .histories.world import NodeState
from .registry import GENERATED, Item, Procedure, procedure
from .relation_topology import slots
from .transfer_keys import key_of_cache, one_entry_each


@dataclass(frozen=True)
class CountItem:
    dimension: str
    of: str
    low: int
    high: int
    past: bool  # the test of the dimension's past clause: up to max, then one past it


def count_items(run: RunContext, clause: Clause) -> list[Item]:
    """One item per counts dimension whose ``covered_by`` names ``clause``, one per dimension whose ``past`` does."""
    out = []
    for name, dim in count_dimensions(run.spec).items():
        p = dim.params
        for past, field in ((False, "covered_by"), (True, "past")):
            if p.get(field) == clause.id:
                data = CountItem(name, str(p["of"]), int(p["min"]), int(p["max"]), past)
                out.append(Item(f"counts-{name}" + ("-past" if past else ""), data, generated="counts"))
    return out


def interior(low: int, high: int, step: int = 1) -> int:
    """A count strictly between ``low`` and ``high`` (a multiple of ``step`` above ``low``), or ``low`` when none
    fits."""
    mid = low + ((high - low) // 2) // step * step
    return mid if low < mid < high else low


class CountsBed:
    """A cluster for one counts test: node ``n0`` (the client, the scenario's local node: the cache the call passes)
    and ``n1``... (servers, its remote node: the caches the key names), transfers judged one by one and recorded with
    their counts."""

    def __init__(self, run: RunContext, clause: Clause, item: Item, servers: int) -> None:
        self.run, self.clause, self.item = run, clause, item
        self.op = run.spec.operation
        self.bed = HistoryBed(run, label=f"counts ({item.key})")
        scen = clause.scenario
        self.nodes = [NodeState(0, "n0", 1, scen.local.role, 0, dict(scen.local.options))] + [
            NodeState(i, f"n{i}", i + 1, scen.remote.role, 0, dict(scen.remote.options)) for i in range(1, servers + 1)]
        self.bed.open_nodes(self.nodes)
        self.locals: dict[int, CacheInfo] = {}
        self.model_ids: dict[str, int] = {}  # a keyed blocks cache's model id, by cache name
        self.links = 0
        self.transfers = 0

    def close(self) -> None:
        self.bed.close()

    def link(self, server: int) -> None:
        self.bed.link_nodes(self.nodes[0], self.nodes[server])
        self.links += 1

    def relink(self, server: int) -> None:
        """A fresh link to ``server``: a link syncs the server's cache table once, at its first transfer (facts
        §1.3 link-time check), so the caches made since the last transfer are seen only over a new link."""
        if self.links:
            self.bed.unlink_nodes(self.nodes[0], self.nodes[server])
            self.links -= 1
        self.link(server)

    def local(self, num_tensors: int) -> CacheInfo:
        """The cache of ``num_tensors`` tensors on n0 the call passes (one per tensor count, allocated): a push's
        source, random bytes; a pull's destination, sentinel bytes (each pull's bytes judged from then on)."""
        if num_tensors not in self.locals:
            scen = self.clause.scenario
            desc = (scen.dst if self.op.pulls else scen.src).with_(num_tensors=num_tensors, register=False,
                                                                   model_id=None)
            info = self.bed.make_cache(f"l{num_tensors}", "n0", desc)
            (self.bed.fill_sentinel if self.op.pulls else self.bed.fill_random)(info)
            self.locals[num_tensors] = info
        return self.locals[num_tensors]

    def keyed(self, server: int, num_tensors: int | None = None, *, register: bool = False) -> CacheInfo:
        """A new cache on ``server`` a key names: a push's destination (sentinel bytes), a pull's source (random
        bytes); a blocks cache is bound to a model id of its own (its BlocksCacheKey)."""
        scen, name = self.clause.scenario, self.bed.new_name()
        desc = scen.src if self.op.pulls else scen.dst
        if desc.blocks:
            desc = desc.with_(model_id=len(self.model_ids))
            self.model_ids[name] = len(self.model_ids)
        desc = desc.with_(num_tensors=num_tensors if num_tensors is not None else desc.num_tensors,
                          register=register or None)
        info = self.bed.make_cache(name, self.nodes[server].name, desc, guard=register)
        (self.bed.fill_random if self.op.pulls else self.bed.fill_sentinel)(info)
        return info

    def key(self, server: NodeState, keyed: CacheInfo, entry: int) -> Value:
        """The key naming ``keyed`` on ``server``: its BlocksCacheKey (a blocks cache), else entry ``entry`` of it by
        id and index."""
        return key_of_cache(self.bed.api, server.cluster_id, keyed, self.model_ids.get(keyed.name), entry)

    def transfer(self, keyed: CacheInfo, counts: dict[str, int], what: str) -> None:
        """The run's transfer between entry (block) ``transfers % batch`` of ``keyed`` and entry 0 of the local
        cache of its tensor count, judged by the clause's expect; the judged bytes are what its destination holds
        from then on."""
        bed, op = self.bed, self.op
        server = next(n for n in self.nodes if n.name == keyed.node_name)
        local = self.local(keyed.num_tensors)
        entry = self.transfers % keyed.batch
        self.transfers += 1
        src, dst = (keyed, local) if op.pulls else (local, keyed)
        src_entry, dst_entry = (entry, 0) if op.pulls else (0, entry)
        values = {op.key: self.key(server, keyed, entry), op.cache: Value(local.cache, local.name),
                  **one_entry_each(op, src_entry, dst_entry)}
        call = Call(values, self.run.spec.api, key=op.key, key_entries=op.key_entries)
        bed.rec.comment(f"{what}: {counts}")
        self.run.counters.coverage |= count_keys(self.run.spec, counts)
        push = bed.aimed("n0", server.name, src, dst, call)
        outcome = bed.push(push, bound=per_call_bound(self.run))
        obs = judge(bed, push, outcome, self.clause.expect, self.clause.id, f"{self.item.key}, {what} ({counts})")
        if outcome.exc is None:
            bed.before[dst.name] = obs.expected_dst()


def _caches(cb: CountsBed, it: CountItem) -> None:
    made: list[CacheInfo] = []
    for target in dict.fromkeys((it.low, interior(it.low, it.high), it.high)):
        while len(made) < target:
            made.append(cb.keyed(1))
        cb.relink(1)
        cb.transfer(made[-1], {it.of: len(made)}, f"the last made of {len(made)} caches")
    cb.transfer(made[0], {it.of: len(made)}, f"the first made of {len(made)} caches")


def _links(cb: CountsBed, it: CountItem) -> None:
    dsts = [cb.keyed(s) for s in range(1, it.high + 1)]
    for target in dict.fromkeys((it.low, interior(it.low, it.high), it.high)):
        while cb.links < target:
            cb.link(cb.links + 1)
        cb.transfer(dsts[cb.links - 1], {it.of: cb.links}, f"with the newest of {cb.links} servers")
    for dst in dsts[:-1]:
        cb.transfer(dst, {it.of: cb.links}, "with every server")


def _addresses(cb: CountsBed, it: CountItem) -> None:
    """Registered caches adding up to each count (a transfer moves whole layers: each cache moved holds a multiple
    of the default tensors per layer; what is left over is registered as a cache of its own, moved nothing)."""
    tnpl = max(1, cb.bed.default_tnpl)
    total = 0
    pushed: list[CacheInfo] = []
    for target in dict.fromkeys((it.low, interior(it.low, it.high, tnpl), it.high)):
        size = (target - total) // tnpl * tnpl
        pushed.append(cb.keyed(1, size, register=True))
        total += size
        if target > total:
            cb.keyed(1, target - total, register=True)
            total = target
        cb.relink(1)
        cb.transfer(pushed[-1], {it.of: total}, f"the newest of {total} addresses")
    cb.transfer(pushed[0], {it.of: total}, f"the first of {total} addresses")
    if it.past:
        _past_addresses(cb, it, total, tnpl)


def _past_addresses(cb: CountsBed, it: CountItem, total: int, tnpl: int) -> None:
    """One registration past max: refused (then nothing may have changed) or accepted (then its transfer is
    judged)."""
    count = {it.of: total + tnpl}
    cb.run.counters.coverage |= count_keys(cb.run.spec, count)
    try:
        extra = cb.keyed(1, tnpl, register=True)
    except HarnessError as exc:
        if not isinstance(exc.__cause__, getattr(cb.bed.api, "LLMException", ())):
            raise
        cb.bed.rec.comment(f"refused past the limit: {exc}")
        problems = Observation(cb.bed, None, Outcome(exc.__cause__, 0.0)).unchanged()
        if problems:
            fail(cb.clause.id, cb.item.key, None, "register_cache past the limit was refused, but memory changed",
                 problems)
        return
    cb.relink(1)
    cb.transfer(extra, count, "past the limit")


BUILDERS = {"caches_per_node": (_caches, lambda it: 1), "links_per_node": (_links, lambda it: it.high),
            "registered_addresses": (_addresses, lambda it: 1)}


def _at_once(run: RunContext, clause: Clause, it: CountItem) -> None:
    """``n`` threads at once from one node into caches of their own on one peer, for n = min, interior, max."""
    relation = concurrency.DISTINCT_CACHES
    for n in dict.fromkeys((it.low, interior(it.low, it.high), it.high)):
        bed = HistoryBed(run, label=f"counts ({it.dimension}: {n} at once)")
        try:
            run.counters.coverage |= count_keys(run.spec, {it.of: n})
            concurrency.run_plan(run, clause, bed, slots(relation, n), clause.scenario.dst)
        finally:
            bed.close()


def run_counts(run: RunContext, clause: Clause, item: Item) -> None:
    __tracebackhide__ = True
    require(run, clause.requires)
    it: CountItem = item.data
    dim: CoverageDimension = count_dimensions(run.spec)[it.dimension]
    if dim.params.get("requires"):
        require(run, [str(dim.params["requires"]["capability"])])
    if it.of == "pushes_at_once":
        _at_once(run, clause, it)
        return
    build, servers = BUILDERS[it.of]
    cb = CountsBed(run, clause, item, servers(it))
    try:
        build(cb, it)
    finally:
        cb.close()


GENERATED["counts"] = Procedure(count_items, run_counts)


@procedure("counts", lambda run, clause: [])
def run_counts_clause(run: RunContext, clause: Clause, item: Item) -> None:
    """A counts clause's tests are its coverage dimensions' items (GENERATED["counts"]); it lists none itself."""
    raise AssertionError(f"clause {clause.id}: the counts procedure lists no items of its own, got {item!r}")

"""The history machine (a hypothesis ``RuleBasedStateMachine``): its rules are the operations the backend
protocol offers, in any order the protocol allows — link, unlink, allocate, register (at uneven offsets), free,
rewrite, inject faults and push (valid, in every situation the spec declares, broken by a generate rule of any
clause, repeated, from several threads at once) — and its model is the kit's oracle (:mod:`.world`, the
testbed's snapshots).  Each push is judged by the clause of its situation; after every other step every byte
the kit can see must be as the history left it.  A failure shrinks to a minimal history.

The situation builders are bound to the names of the schema's ``history_situation`` enum (:data:`SITUATIONS`;
a self-test compares the two), as procedures are to the ``procedure`` enum.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from ... import strategies, violations
from ...judging import effect_problems, fail, outcome_problem
from ...observation import Observation
from ...spec import CacheSpec, Clause
from ...testbed import Outcome
from ..calls import FAULT_BOUND_FACTOR, SETTLE_S, raised_in_time
from ..common import per_call_bound
from . import draws
from .bed import HistoryBed
from .pushes import (
    STYLES,
    HistoryRun,
    Plan,
    call_for,
    clause_envelope,
    expect_success,
    judge_push,
    loop_line,
    observed,
    overtime,
    still,
)
from .world import CacheState, LinkState, NodeState, World

#: how long the threads of a concurrent step wait for each other at the start line
BARRIER_S = 10
#: margins around sync_kv_timeout that keep a delayed push clear of it on either side
WITHIN, BEYOND = 0.5, 1.5
#: the situation a configuration stream reaches by construction at its budget's edge (HistoryMachine.open)
EDGE_DELAY = "delay_within_budget"
#: and the timeout it reaches after it, from the node waiting least
EDGE_TIMEOUT = "delay_exceeded"
#: live caches from which a valid push prefers the caches there are to new ones (each check reads them all)
MAX_LIVE_CACHES = 8
#: pushes of a long run's pair between two rewrites of its source (a source rewritten between pushes)
REWRITE_EVERY = 16
#: nodes a history with a long run has at least (its client linked to every other node: to more than one)
LONG_RUN_NODES = 3

Builder = Callable[["HistoryMachine", Any], bool]
#: situation (schema enum history_situation) -> how a step makes a push in it; False when it cannot now
SITUATIONS: dict[str, Builder] = {}


def situation(*names: str) -> Callable[[Builder], Builder]:
    def deco(fn: Builder) -> Builder:
        for name in names:
            SITUATIONS[name] = fn
        return fn
    return deco


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


class HistoryMachine(RuleBasedStateMachine):
    """One history per instance; :func:`machine_for` binds it to a stream's :class:`HistoryRun`."""

    h: HistoryRun

    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        self.bed = HistoryBed(self.h.run, label=f"history ({self.h.stream.name})")
        self.h.run.counters.histories += 1
        self.steps = 0
        self.can_unregister = False
        self.fills = 0
        #: the situations a push is drawn in, and the (clause, rule) pairs a broken push is drawn from
        self.situations = [n for n in SITUATIONS if n in self.h.situations]
        self.broken = {f"{c.id}: {r}": (c, r) for c, r in self.h.invalid}

    def teardown(self) -> None:
        self.bed.close()
        self.bed.forget()  # hypothesis keeps some machines: none may keep a history's bytes or its cluster
        self.world.caches.clear()

    # ---- helpers -----------------------------------------------------------------------------------------

    def label(self, what: str) -> str:
        return f"history step {self.steps} ({what})"

    def step(self, what: str) -> str:
        self.steps += 1
        self.h.run.counters.history_steps += 1
        self.bed.rec.comment(f"step {self.steps}: {what}")
        return self.label(what)

    def live_bytes(self) -> int:
        return sum(c.info.nbytes * c.num_tensors for c in self.world.live())

    def room_for(self, desc: CacheSpec) -> bool:
        budget = self.h.stream.bytes
        size = self.h.dom.itemsize.get(desc.data_type, 1) * math.prod(desc.shape) * desc.num_tensors
        return budget is None or self.live_bytes() + size <= budget

    def make(self, data: Any, node: NodeState, desc: CacheSpec, *, accessible: bool | None = None,
             layers_of: int = 0, registered: bool | None = None) -> CacheState | None:
        """A new cache on ``node``: allocated, or registered raw memory at uneven offsets (open to remote access
        or not, unless ``accessible`` says), filled with drawn contents."""
        h, bed = self.h, self.bed
        if not self.room_for(desc) or not node.alive:
            return None
        name = bed.new_name()
        register = h.dom.can_register and (registered if registered is not None
                                            else data.draw(st.booleans(), label=f"{name} registered"))
        if register:
            gaps, order = draws.registration(data.draw, h.hist, desc.num_tensors)
            if accessible is None:
                accessible = data.draw(st.sampled_from([True, True, True, False]), label=f"{name} remote_accessible")
            info = bed.register_at(name, node, desc, gaps, order, accessible)
        else:
            accessible = True
            allocated = bed.allocate(name, node, desc)
            if allocated is None:
                return None
            info = allocated
        code, shift = draws.content_code(data.draw, h.run.spec, desc, info.nbytes, self.filled())
        bed.fill_with(info, code)
        cache = CacheState(info, node.index, self.world.tick(), register, accessible,
                           int(getattr(info.cache, "cache_id", 0)), layers_of, shift)
        self.world.caches.append(cache)
        return cache

    def filled(self) -> int:
        """How many caches this history has filled, this one included (each fill's bytes differ from all others)."""
        self.fills += 1
        return self.fills

    def rewrite(self, data: Any, cache: CacheState) -> None:
        """New contents for ``cache`` (a source rewritten between pushes): its special patterns shifted, so that
        every batch entry of every tensor changes."""
        info = cache.info
        desc = CacheSpec(cache.num_tensors, tuple(info.shape), info.data_type, info.placement)
        code, cache.shift = draws.content_code(data.draw, self.h.run.spec, desc, info.nbytes, self.filled(),
                                               after=cache.shift)
        self.bed.fill_with(info, code)

    def make_pair(self, data: Any, client: NodeState, server: NodeState, desc: CacheSpec, tnpl: int, *,
                  registered: bool | None = None) -> tuple[CacheState, CacheState] | None:
        """A source of ``desc`` on ``client`` and a destination made for it on ``server``."""
        h = self.h
        src = self.make(data, client, desc, accessible=True, layers_of=tnpl, registered=registered)
        if src is None:
            return None
        dst = self.make(data, server, draws.mirror_desc(data.draw, src, tnpl, h.dom, h.stream), accessible=True,
                        layers_of=tnpl, registered=registered)
        return (src, dst) if dst is not None else None

    def link(self, client: NodeState, server: NodeState) -> None:
        self.bed.link_nodes(client, server)
        self.world.links[(client.index, server.index)] = LinkState(self.world.tick())
        self.world.ever_linked.add((client.index, server.index))

    def unlink(self, client: NodeState, server: NodeState) -> None:
        self.bed.unlink_nodes(client, server)
        del self.world.links[(client.index, server.index)]

    def tnpls(self, src: CacheState, dst: CacheState) -> list[int]:
        """tensor_num_per_layer values a valid push from ``src`` into ``dst`` may take (none: not a pair)."""
        a, b = src.info, dst.info
        if (a.data_type != b.data_type or a.stride != b.stride or (a.placement, b.placement) not in self.h.dom.transfers
                or not dst.remote_accessible):
            return []
        options = divisors(a.num_tensors) if self.h.has_tnpl else [self.h.run.default_tnpl]
        return [t for t in options if a.num_tensors % t == 0 and b.num_tensors % t == 0]

    def args(self, data: Any, src: CacheState, dst: CacheState, tnpls: list[int], *,
             min_layers: int = 1) -> tuple[int, tuple[int, int] | None] | None:
        """tensor_num_per_layer and the layer range (the same on both sides, as documented; the default only
        where both caches have as many layers) of a valid push, with at least ``min_layers`` layers; a real
        model's cache is pushed by its own layers (K and V)."""
        options = [t for t in tnpls if min(src.num_tensors, dst.num_tensors) // t >= min_layers]
        if self.h.stream.layouts == "models" and src.layers_of in options:
            options = [src.layers_of]
        if not options:
            return None
        tnpl = data.draw(st.sampled_from(options), label="tensor_num_per_layer")
        ls, ld = src.num_tensors // tnpl, dst.num_tensors // tnpl
        if ls == ld and (self.h.stream.layouts == "models" or data.draw(st.booleans(), label="default ranges")):
            return tnpl, None  # a real model's entry is pushed whole: every layer
        top = min(ls, ld)
        start = data.draw(st.integers(0, top - min_layers), label="range start")
        return tnpl, (start, data.draw(st.integers(start + min_layers, top), label="range stop"))

    def plan(self, data: Any, client: NodeState, server: NodeState, src: CacheState, dst: CacheState, *,
             cache_id: int | None = None, min_layers: int = 1) -> Plan | None:
        tnpls = self.tnpls(src, dst)
        got = self.args(data, src, dst, tnpls, min_layers=min_layers) if tnpls else None
        if got is None:
            return None
        tnpl, rng = got
        style = data.draw(st.sampled_from(STYLES), label="calling form")
        return Plan(client, server, src, dst, dst.cache_id if cache_id is None else cache_id, tnpl, rng, rng,
                    data.draw(st.integers(0, src.batch - 1), label="src_batch_index"),
                    data.draw(st.integers(0, dst.batch - 1), label="dst batch_index"), style)

    def pairs(self, links: list[tuple[int, int]], *, freed_src: bool = False,
              freed_dst: bool = False) -> list[tuple[tuple[int, int], CacheState, CacheState]]:
        """(link, source, destination) a push could go over; freed caches where asked."""
        w = self.world
        out = []
        for link in links:
            client, server = w.nodes[link[0]], w.nodes[link[1]]
            srcs = ([c for c in w.freed(client.index) if c.remote_accessible] if freed_src
                    else list(w.sources(client.index)))
            dsts = w.freed(server.index) if freed_dst else w.live(server.index)
            out += [(link, s, d) for s in srcs for d in dsts if self.tnpls(s, d)]
        return out

    def valid_plan(self, data: Any, *, min_layers: int = 1, link: tuple[int, int] | None = None,
                   same_tensors: bool = False) -> Plan | None:
        """A push valid in every respect over a usable link: between existing caches, or into a destination made
        for an existing source, or from a new source into a new destination; a link that does not see the
        destination yet is made again first (the documentation asks for memory before the link).
        ``same_tensors``: source and destination hold as many tensors (what a generate rule starts from)."""
        w, h = self.world, self.h
        links = [link] if link is not None else w.usable_links()
        links = [p for p in links if p in w.links and w.nodes[p[0]].alive and w.nodes[p[1]].alive]
        if not links:
            return None
        found = [f for f in self.pairs(links) if not same_tensors or f[1].num_tensors == f[2].num_tensors]
        sources = [(p, s) for p in links for s in w.sources(p[0])]
        crowded = len(w.live()) >= MAX_LIVE_CACHES and found
        ways = ((["existing"] * 3 if found else []) + (["new destination"] if sources and not crowded else [])
                + (["new source"] if not crowded else []))
        way = data.draw(st.sampled_from(ways), label="push between")
        if way != "existing":
            if way == "new source":
                p = data.draw(st.sampled_from(links), label="link")
                desc, hint = draws.fresh_desc(data.draw, h.run.spec, h.dom, h.stream, h.max_bytes)
                made = self.make(data, w.nodes[p[0]], desc, accessible=True, layers_of=hint)
                if made is None:
                    return None
                src = made
            else:
                p, src = data.draw(st.sampled_from(sources), label="source")
            tnpl = data.draw(st.sampled_from(divisors(src.num_tensors) if h.has_tnpl else [h.run.default_tnpl]),
                             label="layers of")
            dst = self.make(data, w.nodes[p[1]], draws.mirror_desc(data.draw, src, tnpl, h.dom, h.stream,
                                                                   same_tensors=same_tensors), accessible=True,
                            layers_of=src.layers_of)
            if dst is None:
                return None
            found = [(p, src, dst)] if self.tnpls(src, dst) else []
        if not found:
            return None
        p, src, dst = data.draw(st.sampled_from(found), label="push")
        client, server = w.nodes[p[0]], w.nodes[p[1]]
        if w.visibility(p, dst) != "valid":
            self.unlink(client, server)
            self.link(client, server)
        return self.plan(data, client, server, src, dst, min_layers=min_layers)

    def push_valid(self, plan: Plan, label: str) -> None:
        judge_push(self.h, self.bed, self.world, plan, self.h.situations["valid"], None, label)

    def recover(self, data: Any, link: tuple[int, int], label: str) -> None:
        """After a refusal, a timeout or a fault: valid pushes land exactly, over the same link and another."""
        if "valid" not in self.h.situations:
            return
        w = self.world
        if link in w.links and w.nodes[link[0]].alive and w.nodes[link[1]].alive:
            plan = self.valid_plan(data, link=link)
            if plan is not None:
                self.push_valid(plan, f"{label}, then a valid push over the same link")
        others = [p for p in w.usable_links() if p != link]
        if others:
            other = data.draw(st.sampled_from(others), label="another link")
            plan = self.valid_plan(data, link=other)
            if plan is not None:
                self.push_valid(plan, f"{label}, then a valid push over another link")

    def can(self, name: str) -> bool:
        return name in self.h.situations

    def judged(self, data: Any, plan: Plan | None, name: str) -> bool:
        """Push ``plan`` in situation ``name``, judged by its clause, then recover; False when there is no plan."""
        if plan is None:
            return False
        judge_push(self.h, self.bed, self.world, plan, self.h.situations[name], None, self.label(name))
        self.recover(data, plan.link, self.label(name))
        return True

    # ---- rules: the protocol's operations ------------------------------------------------------------

    @initialize(data=st.data())
    def open(self, data: Any) -> None:
        """The cluster, its first sources and destinations (memory before the link, as documented), the link.  A
        stream with a long run links the client to every other node too and pushes over its first link (the
        oldest of several from one node), a real models' stream pushes the models at the domain's edges: what a
        history reaches by construction, whatever else it draws."""
        h, w = self.h, self.world
        label = self.step("open")
        # a stream that names the within-budget delay among its few situations (the configuration stream) starts
        # with one at the top of its timeout ladder (a wait of half its budget, on a node whose
        # llm.SyncKvCacheWaitTime is twice the budget), then a push beyond the domain's least timeout from the
        # second node, followed by valid pushes over that link.  A long run's client waits twice the budget too:
        # over real transports a push can take a millisecond, and a run of a thousand must not time out by chance
        # (a timeout changes what the history draws next, and hypothesis could not replay it)
        edge_delay = h.stream.situations is not None and EDGE_DELAY in h.stream.situations and self.can(EDGE_DELAY)
        top = draws.timeout_ladder(h.hist.sync_kv_timeout_ms, h.stream.wait_ms)[0]
        first_timeouts = (top, h.hist.sync_kv_timeout_ms.min) if edge_delay else (top,) if h.long_run else ()
        w.nodes = data.draw(draws.nodes(h.hist, h.roles, h.stream, LONG_RUN_NODES if h.long_run else 0,
                                        first_timeouts), label="nodes")
        self.bed.open_nodes(w.nodes)
        self.can_unregister = callable(getattr(self.bed.nodes[w.nodes[0].name].cache_manager, "unregister_cache",
                                               None))
        client, server = w.nodes[0], w.nodes[1]
        edges = draws.edge_models(h.hist, h.dom, h.max_bytes) if h.stream.layouts == "models" else []
        firsts: list[tuple[CacheSpec, int, bool | None]]
        if edges:
            firsts = [(*draws.model_desc(data.draw, m, h.dom), True) for m in edges]
        else:
            firsts = [(*draws.fresh_desc(data.draw, h.run.spec, h.dom, h.stream, h.max_bytes), None)]
            if h.long_run:  # a pair of every DataType of the domain, each batch entry holding its special patterns
                firsts += [(*draws.tour_desc(data.draw, h.run.spec, h.dom, t), True) for t in h.dom.data_types]
        pairs = [self.make_pair(data, client, server, desc, tnpl, registered=reg) for desc, tnpl, reg in firsts]
        self.link(client, server)
        if h.long_run:  # the long run's link is the oldest of several from its client
            for other in w.nodes[2:]:
                self.link(client, other)
        still(h, self.bed, label)
        if edge_delay:
            _delayed(self, data, EDGE_DELAY, edge=(client.index, server.index))
            if self.can(EDGE_TIMEOUT):
                self.link(server, client)
                _delayed(self, data, EDGE_TIMEOUT, edge=(server.index, client.index))
        if not self.can("valid") or not (h.long_run or edges):
            return
        plans = [p for p in (self.plan(data, client, server, *pair) for pair in pairs if pair) if p is not None]
        if h.long_run:
            self.long_run(data, plans, h.long_run, label)
            return
        for i, plan in enumerate(plans):
            self.push_valid(plan, f"{label}, a model at the domain's edges, {i + 1} of {len(plans)}")

    def long_run(self, data: Any, plans: list[Plan], count: int, label: str) -> None:
        """``count`` valid pushes over one link, each judged: over each pair of ``plans`` in turn (the first drawn,
        then one of every DataType), a pair's in runs of :data:`REWRITE_EVERY` with its source rewritten between
        them (every batch entry changed); after the first run, keys naming ids the server never had
        (:func:`.draws.unknown_ids`), judged by the clause of ``unknown_cache``."""
        for k, plan in enumerate(plans):
            todo, runs = count // len(plans) + (k < count % len(plans)), 0
            while todo > 0:
                if runs:
                    self.bed.rec.comment(f"{plan.src.name} rewritten between pushes")
                    self.rewrite(data, plan.src)
                n = min(REWRITE_EVERY, todo)
                self.pushes_in_a_row(plan, n, f"{label}, long run over pair {k + 1} of {len(plans)}, run {runs + 1}")
                todo, runs = todo - n, runs + 1
                if k == 0 and runs == 1:
                    self.unknown_keys(plan, label)

    def pushes_in_a_row(self, plan: Plan, count: int, label: str) -> None:
        """``count`` pushes of ``plan``, each judged, the batch entries stepping so that every push changes the
        destination; the script says them as one loop.  Each push is judged on its destination (exactly, and its
        guard bands); every other byte on every node, the source included, once the run ends: a stray write
        persists until then, since nothing else writes (a push that changed its source also makes the next push
        land wrong bytes), and reading every cache of every node after each of a thousand pushes would cost the
        run more than all its pushes."""
        rec = self.bed.rec
        start = len(rec.lines)
        src_b, dst_b = plan.src.batch, plan.dst.batch if plan.dst is not None else 1
        done = 0
        self.bed.focus = frozenset([plan.dst.name] if plan.dst is not None else [])
        try:
            for i in range(count):
                mark = len(rec.lines)
                self.push_valid(replace(plan, src_batch=i % src_b, dst_batch=(i + 1) % dst_b),
                                f"{label}, push {i + 1} of {count}")
                del rec.lines[mark:]
                done += 1
        finally:
            self.bed.focus = None
            if done:
                rec.lines[start:start] = loop_line(self.h, self.bed, plan, done, (src_b, dst_b))
        still(self.h, self.bed, f"{label}, after its {count} pushes")

    def unknown_keys(self, plan: Plan, label: str) -> None:
        """Pushes over ``plan``'s link whose keys name ids its server never had, each judged by the clause of
        ``unknown_cache``: ids agreeing with the destination's in their low bits at every common field width, and
        the domain's ends."""
        if "unknown_cache" not in self.h.situations or plan.dst is None:
            return
        used = self.world.ids_on(plan.server.index)
        for cache_id in draws.unknown_ids(self.h.hist.cache_id, plan.dst.cache_id, used):
            judge_push(self.h, self.bed, self.world, replace(plan, dst=None, cache_id=cache_id),
                       self.h.situations["unknown_cache"], None, f"{label}, long run: unknown_cache")

    @precondition(lambda self: bool(self.world.unlinked_pairs() or self.world.usable_links()))
    @rule(data=st.data())
    def topology(self, data: Any) -> None:
        """Link two nodes (again, in either direction, from one node to several, into one from several), or
        unlink them."""
        w = self.world
        ops = (["link"] if w.unlinked_pairs() else []) + (["unlink"] if w.usable_links() else [])
        op = data.draw(st.sampled_from(ops), label="topology")
        a, b = data.draw(st.sampled_from(w.unlinked_pairs() if op == "link" else w.usable_links()), label=op)
        label = self.step(f"{op} {w.nodes[a].name} -> {w.nodes[b].name}")
        (self.link if op == "link" else self.unlink)(w.nodes[a], w.nodes[b])
        still(self.h, self.bed, label)
        self.then_push(data)

    def freeable(self) -> list[CacheState]:
        return [c for c in self.world.live() if self.world.nodes[c.node].alive
                and (not c.registered or self.can_unregister)]

    def freed_again(self) -> list[CacheState]:
        return [c for c in self.world.freed() if not c.registered and self.world.nodes[c.node].alive]

    def rewritable(self) -> list[CacheState]:
        return [c for c in self.world.live() if self.world.nodes[c.node].alive]

    @rule(data=st.data())
    def lifecycle(self, data: Any) -> None:
        """A cache made on any live node (drawn fresh, or shaped for a cache elsewhere so that pushes pair;
        allocated, or registered at uneven offsets), freed (deallocate_cache, unregister_cache), freed again (a
        documented no-op), or rewritten (a source rewritten between pushes)."""
        ops = (["make"] + (["free"] if self.freeable() else []) + (["free again"] if self.freed_again() else [])
               + (["rewrite"] if self.rewritable() else []))
        op = data.draw(st.sampled_from(ops), label="lifecycle")
        if op == "make":
            self.make_cache(data)
            self.then_push(data)
            return
        cache = data.draw(st.sampled_from({"free": self.freeable, "free again": self.freed_again,
                                           "rewrite": self.rewritable}[op]()), label=op)
        label = self.step(f"{op} {cache.name}")
        if op == "free":
            self.bed.free(cache.name, registered=cache.registered)
            cache.freed = True
        elif op == "free again":
            self.bed.deallocate_again(cache.name, cache.info.cache, cache.info.node_name)
        else:
            self.rewrite(data, cache)
        still(self.h, self.bed, label)
        self.then_push(data)

    def make_cache(self, data: Any) -> None:
        h, w = self.h, self.world
        node = data.draw(st.sampled_from(w.alive()), label="node")
        label = self.step(f"a cache on {node.name}")
        others = [c for c in w.live() if w.nodes[c.node].alive]
        if others and data.draw(st.booleans(), label="for an existing cache"):
            like = data.draw(st.sampled_from(others), label="like")
            tnpl = data.draw(st.sampled_from(divisors(like.num_tensors)), label="layers of")
            desc = draws.mirror_desc(data.draw, like, tnpl, h.dom, h.stream)
            hint = like.layers_of
        else:
            desc, hint = draws.fresh_desc(data.draw, h.run.spec, h.dom, h.stream, h.max_bytes)
        self.make(data, node, desc, layers_of=hint)
        still(h, self.bed, label)

    def then_push(self, data: Any) -> None:
        """After another operation, most often a push."""
        if self.world.usable_links() and data.draw(st.sampled_from([True, True, False]), label="then a push"):
            self.push_in_situation(data)

    def push_in_situation(self, data: Any) -> None:
        """A push in a situation the spec declares, valid in every other respect; after a refusal, a timeout or
        a fault, valid pushes over the same link and another."""
        if not self.situations:
            return
        name = data.draw(st.sampled_from(self.situations), label="situation")
        self.bed.rec.comment(f"push: {name}")
        if not SITUATIONS[name](self, data) and self.can("valid"):
            plan = self.valid_plan(data)  # that situation cannot arise now: a valid push instead
            if plan is not None:
                self.push_valid(plan, self.label(f"valid, in place of {name}"))

    @precondition(lambda self: bool(self.world.usable_links()))
    @rule(data=st.data())
    def push(self, data: Any) -> None:
        """A push in a situation the spec declares (valid included), then one broken by a generate rule of a must
        or may clause."""
        self.step("push")
        self.push_in_situation(data)
        if self.broken and self.world.usable_links():
            key = data.draw(st.sampled_from(list(self.broken)), label="broken by")
            self.push_broken(data, *self.broken[key])

    def push_broken(self, data: Any, clause: Clause, rule_name: str) -> None:
        """A push broken by one generate rule of a clause, on a side the rule names, valid in every other respect:
        judged by that clause's expect; then valid pushes."""
        h = self.h
        label = self.label(f"broken by {rule_name} ({clause.id})")
        self.bed.rec.comment(f"push broken by {rule_name} ({clause.id})")
        plan = self.valid_plan(data, same_tensors=True)  # a generate rule breaks a layout of equal tensor counts
        if plan is None or plan.src.num_tensors < violations.RULES[rule_name].min_tensors or plan.dst is None:
            return
        gen = clause.generate
        sides = violations.applicable_sides(rule_name, list(gen.sides) if gen and gen.sides else None)
        side = data.draw(st.sampled_from(sides), label="side")
        base = self.layout_of(plan)
        broken = violations.RULES[rule_name].apply(data.draw, base, side)
        src, dst = plan.src, plan.dst
        if broken.src != base.src:
            made = self.make(data, plan.client, broken.src.desc().with_(register=None), accessible=True)
            if made is None:
                return
            src = made
        if broken.dst != base.dst:
            made = self.make(data, plan.server, broken.dst.desc().with_(register=None), accessible=True)
            if made is None:
                return
            dst = made
        if self.world.visibility(plan.link, dst) != "valid":
            self.unlink(plan.client, plan.server)
            self.link(plan.client, plan.server)
        bad = replace(plan, src=src, dst=dst, cache_id=dst.cache_id, tnpl=broken.tnpl, src_range=broken.src_range,
                      dst_range=broken.dst_range, src_batch=broken.src_batch_index, dst_batch=broken.dst_batch_index,
                      size=broken.size, style="keywords", notes=broken.notes)
        judge_push(h, self.bed, self.world, bad, clause, clause.expect, label)
        self.recover(data, plan.link, label)

    def layout_of(self, plan: Plan) -> strategies.Layout:
        def side(c: CacheState) -> strategies.Side:
            return strategies.Side(c.num_tensors, tuple(c.info.shape), c.info.data_type, c.info.placement, False)

        assert plan.dst is not None
        return strategies.Layout(side(plan.src), side(plan.dst), plan.tnpl, plan.src_batch, plan.dst_batch,
                                 plan.src_range, plan.dst_range)

    def push_concurrently(self, data: Any) -> bool:
        """Pushes from several threads at once into distinct destinations, each judged as if it were alone."""
        h, w, bed = self.h, self.world, self.bed
        found = [(p, s, d) for p, s, d in self.pairs(w.usable_links()) if w.visibility(p, d) == "valid"]
        dsts = list({d.name: d for _, _, d in found}.values())
        if len(dsts) < 2:
            return False
        label = self.label("concurrent")
        chosen = data.draw(st.lists(st.sampled_from(dsts), min_size=2, max_size=min(4, len(dsts)),
                                    unique_by=lambda d: d.name), label="destinations")
        plans = []
        for dst in chosen:
            # no source is another push's destination: the threads would race on it
            options = [(p, s) for p, s, d in found if d is dst and s not in chosen]
            if not options:
                continue
            p, src = data.draw(st.sampled_from(options), label="source")
            plan = self.plan(data, w.nodes[p[0]], w.nodes[p[1]], src, dst)
            if plan is not None:
                plans.append(replace(plan, style="keywords"))
        if len(plans) < 2:
            return False
        calls = [call_for(h, bed, plan) for plan in plans]
        for plan, call in zip(plans, calls, strict=True):
            bed.local, bed.remote, bed.src, bed.dst = None, None, plan.src.info, plan.dst.info if plan.dst else None
            expect_success(bed, call, plan.dst)
        fns = [bed.nodes[plan.client.name].cache_manager.push_cache for plan in plans]
        results: list[Any] = [None] * len(plans)
        seconds = [0.0] * len(plans)
        barrier = threading.Barrier(len(plans))

        def run(i: int) -> None:
            args, kwargs = calls[i].build()
            barrier.wait(timeout=BARRIER_S)
            start = time.monotonic()
            try:
                fns[i](*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the outcome under test
                results[i] = exc
            seconds[i] = time.monotonic() - start

        bed.rec.comment(f"{len(plans)} threads at once (the script makes them in turn):")
        for plan, call in zip(plans, calls, strict=True):
            bed.rec.lines.append(f"local = {plan.client.name}")
            bed.rec.lines.append(call.code)
        workers = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(plans))]
        for t in workers:
            t.start()
        for t in workers:
            t.join(per_call_bound(h.run))
        clause = h.situations["concurrent"]
        if any(t.is_alive() for t in workers):
            fail(clause.id, label, calls[0], "concurrent pushes did not return (hang)")
        h.run.counters.push_calls += len(plans)
        h.run.counters.history_pushes += len(plans)
        for plan in plans:
            w.pushed_over(plan.link)
        reads = []
        for i, plan in enumerate(plans):
            assert plan.dst is not None
            bed.local, bed.remote = bed.nodes[plan.client.name], bed.nodes[plan.server.name]
            bed.src, bed.dst = plan.src.info, plan.dst.info
            others = tuple(p.dst.name for p in plans if p.dst is not None and p.dst is not plan.dst)
            outcome = Outcome(results[i], seconds[i])
            expectation = overtime(h, plan, outcome, clause_envelope(clause))
            obs = Observation(bed, calls[i], outcome)
            problem = outcome_problem(expectation, obs)
            if problem:
                fail(clause.id, f"{label}, thread {i}", calls[i], problem)
            problems = [p for p in effect_problems(expectation, obs) if not any(p.startswith(f"{o} ") for o in others)]
            if problems:
                fail(clause.id, f"{label}, thread {i}", calls[i], "wrong after concurrent pushes", problems)
            reads.append(obs)
        for obs in reads:
            observed(bed, obs)
        bed.rec.verdict = []
        return True


# ---- the situations: a push valid in every respect but one ---------------------------------------------------


@situation("valid")
def _valid(m: HistoryMachine, data: Any) -> bool:
    plan = m.valid_plan(data)
    if plan is None:
        return False
    times = data.draw(st.integers(m.h.hist.repeat.min, m.h.hist.repeat.max), label="times")
    for i in range(times):
        m.push_valid(plan, m.label("valid") + (f", {i + 1} of {times}" if times > 1 else ""))
    return True


@situation("created_after_link", "created_after_first_push")
def _late(m: HistoryMachine, data: Any) -> bool:
    """Into a cache the server made after the link (before or after the first push over it)."""
    w = m.world
    links = w.usable_links()
    sources = [(p, s) for p in links for s in w.sources(p[0])]
    if not sources:
        return False
    p, src = data.draw(st.sampled_from(sources), label="source")
    tnpl = data.draw(st.sampled_from(divisors(src.num_tensors)), label="layers of")
    dst = m.make(data, w.nodes[p[1]], draws.mirror_desc(data.draw, src, tnpl, m.h.dom, m.h.stream))
    if dst is None:
        return False
    name = w.visibility(p, dst)
    plan = m.plan(data, w.nodes[p[0]], w.nodes[p[1]], src, dst)
    return name in m.h.situations and m.judged(data, plan, name)


def _never_linked(m: HistoryMachine) -> list[tuple[int, int]]:
    return [p for p in m.world.unlinked_pairs() if p not in m.world.ever_linked]


def _relinkable(m: HistoryMachine) -> list[tuple[int, int]]:
    return [p for p in m.world.unlinked_pairs() if p in m.world.ever_linked]


def _unlinked_push(m: HistoryMachine, data: Any, name: str, pairs: list[tuple[int, int]]) -> bool:
    found = m.pairs(pairs)
    if not found:
        return False
    p, src, dst = data.draw(st.sampled_from(found), label="push")
    return m.judged(data, m.plan(data, m.world.nodes[p[0]], m.world.nodes[p[1]], src, dst), name)


@situation("never_linked")
def _never(m: HistoryMachine, data: Any) -> bool:
    return _unlinked_push(m, data, "never_linked", _never_linked(m))


@situation("unlinked")
def _unlinked(m: HistoryMachine, data: Any) -> bool:
    return _unlinked_push(m, data, "unlinked", _relinkable(m))


@situation("unknown_cache")
def _unknown(m: HistoryMachine, data: Any) -> bool:
    """A key naming a cache id the server never had, over its whole domain (ids that agree with the server's in
    their low bits included)."""
    plan = m.valid_plan(data)
    if plan is None:
        return False
    used = m.world.ids_on(plan.server.index)
    cache_id = data.draw(draws.in_domain(m.h.hist.cache_id, sorted(used)).filter(lambda c: c not in used),
                         label="unknown cache_id")
    return m.judged(data, replace(plan, dst=None, cache_id=cache_id), "unknown_cache")


def _freed_plan(m: HistoryMachine, data: Any, which: str) -> Plan | None:
    """A push from (``which`` = "src") or into ("dst") a freed cache: between caches freed earlier, or a valid
    push whose cache is freed now (a cache freed between two pushes)."""
    w = m.world
    found = m.pairs(w.usable_links(), freed_src=which == "src", freed_dst=which == "dst")
    found = [f for f in found if w.visibility(f[0], f[2]) == "valid" or which == "dst"]
    if found and data.draw(st.booleans(), label=f"a {which} freed earlier"):
        p, src, dst = data.draw(st.sampled_from(found), label="push")
        return m.plan(data, w.nodes[p[0]], w.nodes[p[1]], src, dst)
    plan = m.valid_plan(data)
    if plan is None or plan.dst is None:
        return None
    m.push_valid(plan, m.label(f"valid, before its {which} is freed"))
    cache = plan.src if which == "src" else plan.dst
    if cache.registered and not m.can_unregister:
        return None
    m.bed.free(cache.name, registered=cache.registered)
    cache.freed = True
    still(m.h, m.bed, m.label(f"free {cache.name}"))
    return plan


@situation("freed_destination")
def _freed_destination(m: HistoryMachine, data: Any) -> bool:
    return m.judged(data, _freed_plan(m, data, "dst"), "freed_destination")


@situation("freed_source")
def _freed_source(m: HistoryMachine, data: Any) -> bool:
    return m.judged(data, _freed_plan(m, data, "src"), "freed_source")


@situation("inaccessible_destination")
def _inaccessible(m: HistoryMachine, data: Any) -> bool:
    """Into a cache its node registered as not open to remote access."""
    if not m.h.dom.can_register:
        return False
    plan = m.valid_plan(data)
    if plan is None or plan.dst is None:
        return False
    desc = CacheSpec(plan.dst.num_tensors, tuple(plan.dst.info.shape), plan.dst.info.data_type,
                     plan.dst.info.placement, register=True)
    private = m.make(data, plan.server, desc, accessible=False, registered=True)
    if private is None:
        return False
    m.unlink(plan.client, plan.server)  # made before the link, as the documentation asks: no other situation
    m.link(plan.client, plan.server)
    return m.judged(data, replace(plan, dst=private, cache_id=private.cache_id), "inaccessible_destination")


def _wait_left(m: HistoryMachine) -> int:
    return max(0, m.h.stream.wait_ms - m.world.waited_ms)


def _delayed(m: HistoryMachine, data: Any, name: str, edge: tuple[int, int] | None = None) -> bool:
    """A push whose transfers the client's injected delay slows: within llm.SyncKvCacheWaitTime in all, beyond
    it at the first layer, or within it per layer and beyond it in all; then the fault is cleared.  ``edge``: the
    link of a within-budget delay as long as half what the history may wait allows, nothing drawn but the push."""
    w = m.world
    need = 3 if name == "delay_over_layers" else 1
    links = w.usable_links()
    if not links:
        return False
    # the link from the node whose timeout leaves a delay the most room (the largest within what may be waited)
    link = max(links, key=lambda p: (min(w.nodes[p[0]].timeout_ms, 2 * _wait_left(m)), -p[0], -p[1]))
    if edge is not None:
        link = edge
    elif name != "delay_within_budget" or data.draw(st.booleans(), label="any link"):
        link = data.draw(st.sampled_from(links), label="delayed link")
    plan = m.valid_plan(data, min_layers=need, link=link)
    if plan is None:
        return False
    t, layers, left = plan.client.timeout_ms, plan.layers, _wait_left(m) // (2 if edge is not None else 1)
    if name == "delay_within_budget":
        top = min(int(t * WITHIN) // layers, left // layers)
        if top < 1:
            return False
        band = "as long as the budget allows" if edge is not None else data.draw(
            st.sampled_from(["as long as the budget allows", "short"]), label="delay")
        per_layer = top if band != "short" else data.draw(st.integers(1, min(top, 20)), label="delay ms")
        cost = per_layer * layers
    elif name == "delay_exceeded":
        per_layer = max(int(t * BEYOND), t + 20)
        cost = t + per_layer
        if cost > left:
            return False
    else:
        per_layer = int(t * WITHIN)
        if per_layer < 1 or per_layer * layers < t * BEYOND or 2 * t > left:
            return False
        cost = 2 * t
    w.waited_ms += cost
    m.bed.inject_fault(plan.client, {"kind": "delay", "seconds": per_layer / 1000})
    delay_s = per_layer * layers / 1000
    return _faulted(m, data, plan, name, wait_s=delay_s + t / 1000, clear=plan.client,
                    settle_s=min(delay_s, t / 1000 + per_layer / 1000) + SETTLE_S)


def _faulted(m: HistoryMachine, data: Any, plan: Plan, name: str, *, wait_s: float, clear: NodeState | None,
             settle_s: float = 0.0) -> bool:
    """The push of ``plan`` under an injected fault, judged by the clause of ``name``: a refusal must come in time
    (one sync_kv_timeout per layer, plus slack); then the fault is cleared (on ``clear``) and valid pushes follow."""
    clause = m.h.situations[name]
    outcome = judge_push(m.h, m.bed, m.world, plan, clause, None, m.label(name), settle_s=settle_s,
                         bound_extra=FAULT_BOUND_FACTOR * wait_s)
    if outcome.exc is not None:
        raised_in_time(m.bed, call_for(m.h, m.bed, plan), outcome, plan.client.timeout_ms / 1000, clause.id,
                       m.label(name))
    if clear is not None:
        m.bed.inject_fault(clear, {"kind": "clear"})
    m.recover(data, plan.link, m.label(name))
    return True


@situation("delay_within_budget")
def _delay_within(m: HistoryMachine, data: Any) -> bool:
    return _delayed(m, data, "delay_within_budget")


@situation("delay_exceeded")
def _delay_exceeded(m: HistoryMachine, data: Any) -> bool:
    return _delayed(m, data, "delay_exceeded")


@situation("delay_over_layers")
def _delay_over_layers(m: HistoryMachine, data: Any) -> bool:
    return _delayed(m, data, "delay_over_layers")


@situation("dropped_link")
def _dropped(m: HistoryMachine, data: Any) -> bool:
    plan = m.valid_plan(data)
    if plan is None:
        return False
    t = plan.client.timeout_ms
    if t * plan.layers > _wait_left(m):
        return False
    m.world.waited_ms += t * plan.layers
    m.bed.inject_fault(plan.client, {"kind": "drop_link", "peer": plan.server.cluster_id})
    return _faulted(m, data, plan, "dropped_link", wait_s=t * plan.layers / 1000, clear=plan.client)


@situation("dead_peer")
def _dead_peer(m: HistoryMachine, data: Any) -> bool:
    """The server dies (for good: nothing of it is observed again) and a push into it is refused in time."""
    w = m.world
    if len(w.alive()) < 3:
        return False
    plan = m.valid_plan(data)
    if plan is None:
        return False
    m.bed.inject_fault(plan.server, {"kind": "kill_node"})
    plan.server.alive = False
    return _faulted(m, data, plan, "dead_peer", wait_s=plan.client.timeout_ms * plan.layers / 1000, clear=None)


@situation("concurrent")
def _concurrent(m: HistoryMachine, data: Any) -> bool:
    return m.push_concurrently(data)


def machine_for(h: HistoryRun) -> type[HistoryMachine]:
    """The machine class of one stream run (hypothesis builds a new instance per history)."""
    return type("History", (HistoryMachine,), {"h": h})

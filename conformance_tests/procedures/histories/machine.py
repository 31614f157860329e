"""The history machine (a hypothesis ``RuleBasedStateMachine``): its rules are the operations the backend
protocol offers, one rule each, in any order the protocol allows — link, unlink, allocate, register (at uneven
offsets), free, free again, rewrite and push (valid, in every situation the spec declares: a rule per situation,
broken by a generate rule of any clause, repeated, from several threads at once; in a run whose operation pulls
a batch entry, pull: :mod:`.pulls`; in one whose operation moves block lists, blocks: :mod:`.blocks`; in either,
its own transfer in the situations its spec declares, not pushes: :mod:`.mover_situations`) — and its
model is the kit's
oracle (:mod:`.world`, the testbed's snapshots).  Each push is judged by the clause of its situation; after every
other step every byte the kit can see must be as the history left it (the invariant ``bytes_as_left``).  A failure
shrinks to a minimal history.

The situation builders are bound to the names of the schema's ``history_situation`` enum (:data:`SITUATIONS`;
a self-test compares the two), as procedures are to the ``procedure`` enum.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    MultipleResults,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from ...coverage.measure import relations
from ...spec import CacheSpec
from ...spec.model import DelayClass
from ...testbed.testbed import Outcome
from ..calls import FAULT_BOUND_FACTOR, raised_in_time
from . import alongside, draws
from .bed import HistoryBed
from .blocks import blocks_operation, blocks_rule, opening_moves
from .broken import push_broken
from .by_relation import NODES, drawn_relation, push_in_relation
from .delays import (
    Turns,
    beyond_per_layer_ms,
    draw_within,
    edge_class,
    edge_timeout,
    exceeded_ms,
    inject_delay,
    roomiest_link,
)
from .long_runs import long_run
from .making import Making
from .mover_delays import faulting_timeout
from .mover_situations import opening_situations, situation_rules
from .movers import Mover, alongside_movers, companion
from .planning import Planning, divisors
from .pulls import opening_pulls, pull_operation, pull_rule
from .pushes import NATURAL_MS, HistoryRun, Plan, judge_push, push_for, still
from .world import CacheState, LinkState, NodeState, World

#: the situation a configuration stream reaches by construction at its budget's edge (HistoryMachine.open)
EDGE_DELAY = "delay_within_budget"
#: and the timeout it reaches after it, from the node waiting least
EDGE_TIMEOUT = "delay_exceeded"
#: the budget of the configuration stream's third node, which times out by construction too: a push of its
#: drawn (small) layouts cannot take that long, so the push that follows over its link is judged strictly
STRICT_EDGE_MS = 2 * NATURAL_MS
#: nodes a history with a long run has at least (its client linked to every other node: to more than one; and
#: the nodes two pushes in every relation need)
LONG_RUN_NODES = max(3, len(NODES))

Builder = Callable[["HistoryMachine", Any], bool]
#: situation (schema enum history_situation) -> how a step makes a push in it; False when it cannot now
SITUATIONS: dict[str, Builder] = {}


def situation(*names: str) -> Callable[[Builder], Builder]:
    def deco(fn: Builder) -> Builder:
        for name in names:
            SITUATIONS[name] = fn
        return fn
    return deco


# ---- what the rules draw from the bundles (a bundle keeps what a history made; the world says what still is) ----


def alive_node(v: object) -> bool:
    return isinstance(v, NodeState) and v.alive


def usable_link(v: object) -> bool:
    return isinstance(v, LinkState) and v.usable


def live_cache(v: object) -> bool:
    return isinstance(v, CacheState) and v.live


def freeable(v: object) -> bool:
    return isinstance(v, CacheState) and v.live and v.can_free


def refreeable(v: object) -> bool:
    """A freed allocated cache on a live node (freeing it again is a documented no-op; deallocate_cache's, which
    takes no blocks cache)."""
    return (isinstance(v, CacheState) and v.freed and not v.registered and not v.blocks
            and (v.host is None or v.host.alive))


def holds(bundle: str, pred: Callable[[object], bool]) -> Callable[[Any], bool]:
    """A precondition: ``bundle`` holds a value ``pred`` accepts (so that a rule's filtered draw from it cannot
    fail: an entry a push situation freed, unlinked or killed stays in the bundle, the filter passing it over)."""
    return lambda m: any(pred(m.names_to_values[ref.name]) for ref in m.bundle(bundle))


class HistoryMachine(RuleBasedStateMachine):
    """One history per instance; :func:`machine_for` binds it to a stream's :class:`HistoryRun` and adds a push
    rule per situation the stream judges (:func:`push_rule`).

    Rules: ``open`` (the cluster and what a history reaches by construction), ``link``, ``unlink``,
    ``allocate``, ``register``, ``free``, ``free_again``, ``rewrite``, ``push`` (valid), ``push_<situation>``,
    ``push_broken``;
    invariant ``bytes_as_left``."""

    #: every node, cache and link the history made (open's, a rule's, and those a push made on its way);
    #: filtered by what a rule needs (alive_node, usable_link, live_cache, freeable)
    made = Bundle("made")
    #: the caches the free rule freed (free_again's)
    freed = Bundle("freed")

    h: HistoryRun
    turns: Turns  # the stream run's (machine_for gives each its own)
    partner: Mover | None = None  # the spec's companion (machine_for finds it once per stream run)
    others: tuple[Mover, ...] = ()  # the operations alongside, on the other unit (alongside.py)

    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        self.bed = HistoryBed(self.h.run, label=f"history ({self.h.stream.name})")
        self.h.run.counters.histories += 1
        #: this history's turn in its stream's run (what its first delay's class turns on)
        self.index = self.turns.take()
        self.steps = 0
        self.making = Making(self.h, self.bed, self.world)
        self.planning = Planning(self.h, self.world, self.making)
        #: the (clause, rule) pairs a broken push is drawn from
        self.broken = {f"{c.id}: {r}": (c, r) for c, r in self.h.invalid}
        #: the label of the last step when it judged no push (bytes_as_left checks every byte after it)
        self.unjudged: str | None = None

    def teardown(self) -> None:
        self.turns.ended(self.index, sys.exc_info()[1])  # hypothesis tears a failing history down as it raises
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

    def judge_valid(self, plan: Plan, label: str) -> None:
        """A valid push, judged by ``valid``'s clause; over a link a timeout or a fault left faulted, by
        ``after_timeout``'s (what a link must do once the cause is gone)."""
        state, h = self.world.links.get(plan.link), self.h
        name = "after_timeout" if state is not None and state.faulted and "after_timeout" in h.situations else "valid"
        judge_push(h, self.bed, self.world, plan, h.situations[name], None, f"{label} ({name})")

    def recover(self, data: Any, link: tuple[int, int], label: str, outcome: Outcome,
                under_fault: bool = False) -> None:
        """After a refusal, a timeout or a fault (``outcome``: the push's; ``under_fault``: a fault injected for it),
        valid pushes over the same link, judged by the clause of what came before it (``after_timeout``,
        ``after_refusal``), but where a push its clause let succeed could have timed out there with no fault to
        decide it (``undecided``: which clause would judge is timing); and over another (into the same server
        from a node whose budget no push of its reaches, where there is one)."""
        w, h = self.world, self.h
        if "valid" not in h.situations:
            return
        state = w.links.get(link)
        if state is not None and w.nodes[link[0]].alive and w.nodes[link[1]].alive and \
                (under_fault or not state.undecided):
            plan = self.planning.valid_plan(data, link=link, keep_faulted=True)
            same = plan is not None and w.links.get(link) is state
            if plan is not None and same and outcome.exc is not None and not state.faulted and \
                    "after_refusal" in h.situations:
                judge_push(h, self.bed, w, plan, h.situations["after_refusal"], None,
                           f"{label}, then a valid push over the same link (after_refusal)")
            elif plan is not None:
                self.judge_valid(plan, f"{label}, then a valid push over the same link")
        others = [p for p in w.usable_links() if p != link]
        peers = [p for p in others if p[1] == link[1] and w.nodes[p[0]].timeout_ms >= 10 * NATURAL_MS]
        if others:
            other = data.draw(st.sampled_from(peers or others), label="another link")
            plan = self.planning.valid_plan(data, link=other)
            if plan is not None:
                self.judge_valid(plan, f"{label}, then a valid push over another link")

    def made_since(self, moment: int) -> list[object]:
        """The caches and links (still linked) the history made after ``moment`` (World.tick)."""
        w = self.world
        return [c for c in w.caches if c.created > moment] + [s for s in w.links.values() if s.made > moment]

    def can(self, name: str) -> bool:
        return name in self.h.situations

    def judged(self, data: Any, plan: Plan | None, name: str) -> bool:
        """Push ``plan`` in situation ``name``, judged by its clause, then recover; False when there is no plan."""
        if plan is None:
            return False
        outcome = judge_push(self.h, self.bed, self.world, plan, self.h.situations[name], None, self.label(name))
        self.recover(data, plan.link, self.label(name), outcome)
        return True

    # ---- rules: the protocol's operations ------------------------------------------------------------

    @initialize(target=made, data=st.data())
    def open(self, data: Any) -> MultipleResults[Any]:
        """The cluster, its first caches and links, and what a history reaches by construction (:func:`_open`); in
        a push run, then its companion's transfers the other way between the first pairs (after the run's own: a
        pull copies the server's bytes into the source, and a push of them before the pushes a history reaches by
        construction would move bytes already there, which no broken copy changes)."""
        pairs = _open(self, data)
        partner = self.partner
        if partner is not None and pull_operation(self.h) is None and blocks_operation(self.h) is None:
            (opening_moves if partner.op.lists else opening_pulls)(self, data, [partner], pairs, self.label("open"))
        return multiple(*self.world.nodes, *self.made_since(0))

    @invariant()
    def bytes_as_left(self) -> None:
        """After a step that judged no push, every byte the kit can see is as the history left it (a push's
        judgement checks them all itself)."""
        if self.unjudged is not None:
            label, self.unjudged = self.unjudged, None
            still(self.h, self.bed, label)

    @precondition(lambda self: bool(self.world.unlinked_pairs()))
    @rule(target=made, data=st.data())
    def link(self, data: Any) -> LinkState:
        """Link two nodes (again, in either direction, from one node to several, into one from several)."""
        w = self.world
        a, b = data.draw(st.sampled_from(w.unlinked_pairs()), label="link")
        self.unjudged = self.step(f"link {w.nodes[a].name} -> {w.nodes[b].name}")
        self.making.link(w.nodes[a], w.nodes[b])
        return w.links[(a, b)]

    @precondition(holds("made", usable_link))
    @rule(link=consumes(made.filter(usable_link)))
    def unlink(self, link: LinkState) -> None:
        assert link.ends is not None
        client, server = link.ends
        self.unjudged = self.step(f"unlink {client.name} -> {server.name}")
        self.making.unlink(client, server)

    @precondition(holds("made", alive_node))
    @rule(target=made, node=made.filter(alive_node), data=st.data())
    def allocate(self, node: NodeState, data: Any) -> MultipleResults[Any]:
        """A cache allocated on a live node (drawn fresh, or shaped for a cache elsewhere so that pushes pair)."""
        return self.make_cache(data, node, registered=False)

    @precondition(lambda self: self.h.dom.can_register and holds("made", alive_node)(self))
    @rule(target=made, node=made.filter(alive_node), data=st.data())
    def register(self, node: NodeState, data: Any) -> MultipleResults[Any]:
        """A cache registered at uneven offsets on a live node (drawn like allocate's)."""
        return self.make_cache(data, node, registered=True)

    @precondition(holds("made", freeable))
    @rule(target=freed, cache=consumes(made.filter(freeable)))
    def free(self, cache: CacheState) -> CacheState:
        """deallocate_cache, or unregister_cache for a registered cache."""
        self.unjudged = self.step(f"free {cache.name}")
        self.bed.free(cache.name, registered=cache.registered)
        cache.freed = True
        return cache

    @precondition(holds("freed", refreeable))
    @rule(cache=freed.filter(refreeable))
    def free_again(self, cache: CacheState) -> None:
        """An allocated cache freed again: a documented no-op."""
        self.unjudged = self.step(f"free again {cache.name}")
        self.bed.deallocate_again(cache.name, cache.info.cache, cache.info.node_name)

    @precondition(holds("made", live_cache))
    @rule(cache=made.filter(live_cache), data=st.data())
    def rewrite(self, cache: CacheState, data: Any) -> None:
        """A source rewritten between pushes."""
        self.unjudged = self.step(f"rewrite {cache.name}")
        self.making.rewrite(data, cache)

    @precondition(lambda self: bool(self.broken and self.world.usable_links()))
    @rule(target=made, data=st.data())
    def push_broken(self, data: Any) -> MultipleResults[Any]:
        """A push broken by a generate rule of a must or may clause (:mod:`.broken`)."""
        moment = self.world.clock
        self.step("push broken")
        key = data.draw(st.sampled_from(list(self.broken)), label="broken by")
        push_broken(self, data, *self.broken[key])
        return multiple(*self.made_since(moment))

    def make_cache(self, data: Any, node: NodeState, registered: bool) -> MultipleResults[Any]:
        h, w = self.h, self.world
        label = self.step(f"a cache on {node.name}")
        others = [c for c in w.live() if w.nodes[c.node].alive]
        blocks = None  # a fresh layout: the run's own kind; one made for an existing cache: that cache's kind
        if others and data.draw(st.booleans(), label="for an existing cache"):
            like = data.draw(st.sampled_from(others), label="like")
            tnpl = data.draw(st.sampled_from(divisors(like.num_tensors)), label="layers of")
            desc = draws.mirror_desc(data.draw, like, tnpl, h.dom, h.stream)
            hint, blocks = like.layers_of, like.blocks
        else:
            desc, hint = draws.fresh_desc(data.draw, h.run.spec, h.dom, h.stream, h.max_bytes)
        self.unjudged = label
        made = self.making.make(data, node, desc, layers_of=hint, registered=registered, blocks=blocks)
        return multiple(*([made] if made is not None else []))

    def push_in(self, name: str, data: Any) -> MultipleResults[Any]:
        """A push in situation ``name``, valid in every other respect (a valid one where it cannot arise now);
        after a refusal, a timeout or a fault, valid pushes over the same link and another."""
        moment = self.world.clock
        self.step(f"push: {name}")
        if not SITUATIONS[name](self, data) and self.can("valid"):
            plan = self.planning.valid_plan(data)  # that situation cannot arise now: a valid push instead
            if plan is not None:
                self.judge_valid(plan, self.label(f"valid, in place of {name}"))
        return multiple(*self.made_since(moment))



def _open(m: HistoryMachine, data: Any) -> list[tuple[CacheState, CacheState] | None]:
    """The cluster, its first sources and destinations (memory before the link, as documented), the link.  A
    stream with a long run links the client to every other node too and pushes over its first link (the
    oldest of several from one node), a real models' stream pushes the models at the domain's edges: what a
    history reaches by construction, whatever else it draws.  Returns the first pairs (source, destination)."""
    h, w = m.h, m.world
    label = m.step("open")
    edge_delay = h.stream.situations is not None and EDGE_DELAY in h.stream.situations and m.can(EDGE_DELAY)
    first_timeouts = _first_timeouts(h, edge_delay)
    least = LONG_RUN_NODES if h.long_run else len(first_timeouts)
    w.nodes = data.draw(draws.nodes(h.hist, h.roles, h.stream, least, first_timeouts), label="nodes")
    m.bed.open_nodes(w.nodes)
    manager = m.bed.nodes[w.nodes[0].name].cache_manager
    m.making.can_unregister = callable(getattr(manager, "unregister_cache", None))
    client, server = w.nodes[0], w.nodes[1]
    edges = draws.edge_models(h.hist, h.dom, h.max_bytes) if h.stream.layouts == "models" else []
    firsts: list[tuple[CacheSpec, int, bool | None]]
    if edges:
        firsts = [(*draws.model_desc(data.draw, m, h.dom), True) for m in edges]
    else:
        firsts = [(*draws.fresh_desc(data.draw, h.run.spec, h.dom, h.stream, h.max_bytes), None)]
        if h.long_run:  # a pair of every DataType of the domain, each batch entry holding its special patterns
            firsts += [(*draws.tour_desc(data.draw, h.run.spec, h.dom, t), True) for t in h.dom.data_types]
        if blocks_operation(h) is not None and h.dom.can_register:  # and a pair registered at uneven offsets
            firsts.append((*draws.fresh_desc(data.draw, h.run.spec, h.dom, h.stream, h.max_bytes), True))
    pairs = [m.making.make_pair(data, client, server, desc, tnpl, registered=reg) for desc, tnpl, reg in firsts]
    beside = alongside.make_pairs(m, data, m.others, client, server)
    m.making.link(client, server)
    if h.long_run:  # the long run's link is the oldest of several from its client
        for other in w.nodes[2:]:
            m.making.link(client, other)
    still(h, m.bed, label)
    pulling, moving, partner = pull_operation(h), blocks_operation(h), m.partner
    # the run's own transfers between its first pairs, then its companion's the other way over the same link, then
    # its own again: every history has each direction after the other (pulls.py, blocks.py)
    if pulling is not None:
        opening_pulls(m, data, [v for v in (pulling, partner, pulling) if v is not None], pairs, label)
    if moving is not None:
        opening_moves(m, data, [v for v in (moving, partner, moving) if v is not None], pairs, label)
    # the operations on the other unit between their own pair, over the same link (alongside.py)
    alongside.opening(m, data, beside, label)
    mine = pulling or moving
    if mine is not None:  # then the run's own transfer in each of its situations (mover_situations.py)
        opening_situations(m, data, mine)
    if edge_delay:
        _edge_delays(m, data, client, server)
    if not m.can("valid") or not (h.long_run or edges):
        return pairs
    plans = [p for p in (m.planning.plan(data, client, server, *pair) for pair in pairs if pair) if p is not None]
    if h.long_run:
        long_run(m, data, plans, h.long_run, label)
        # then two pushes at once in every relation of the spec (by_relation): one history of a stream every
        # run makes reaches them all, whatever it draws (its nodes are as many as they need)
        if m.can("concurrent") and h.stream.layouts == "drawn":
            for relation in relations(h.run.spec):
                push_in_relation(m, data, relation)
        return pairs
    for i, plan in enumerate(plans):
        m.judge_valid(plan, f"{label}, a model at the domain's edges, {i + 1} of {len(plans)}")
    return pairs


def _first_timeouts(h: HistoryRun, edge_delay: bool) -> tuple[int | None, ...]:
    """The budgets of a history's first nodes (None: drawn): a configuration stream's edge delays' (see
    _edge_delays), a long run's client's, a mover run's third node's (mover_delays.faulting_timeout), or
    none."""
    # a stream that names the within-budget delay among its few situations (the configuration stream) starts
    # with one of the class its turn gives it (delays.edge_class: the spec's classes, the nearest the budget
    # first) within half what the history may wait, on a node whose llm.SyncKvCacheWaitTime leaves the nearest
    # class room there (the same budget whatever the turn: hypothesis replays one history's choices in another;
    # a near delay is above the option's 1000 ms default, so a backend clamping it fails), then a push beyond
    # the domain's least timeout from the second node and, before it, one beyond STRICT_EDGE_MS from a third,
    # each followed by valid pushes over its link (the third's judged with no overtime envelope: issue 31).  A
    # long run's client waits twice the budget: over real transports a push can take a millisecond, and a run
    # of a thousand must not time out by chance (a timeout changes what the history draws next, and hypothesis
    # could not replay it)
    top = draws.timeout_ladder(h.hist.sync_kv_timeout_ms, h.stream.wait_ms)[0]
    if edge_delay:
        first = edge_timeout(h.hist.delays, h.hist.delays.within[-1], h.stream.wait_ms // 2, top,
                             h.hist.sync_kv_timeout_ms)
        return (first, h.hist.sync_kv_timeout_ms.min, STRICT_EDGE_MS)
    if h.long_run:
        return (top,)
    faulting = faulting_timeout(h) if pull_operation(h) or blocks_operation(h) else None
    return () if faulting is None else (None, None, faulting)


def _edge_delays(m: HistoryMachine, data: Any, client: NodeState, server: NodeState) -> None:
    """A configuration history's first pushes: a delay within the budget of the class its turn gives it, then a
    timeout from the node whose budget is strict first (what follows it is judged whatever it took), then one
    from the server."""
    _delayed(m, data, EDGE_DELAY, edge=(client.index, server.index), within=edge_class(m.h.hist.delays, m.index))
    for other in ([m.world.nodes[2]] if len(m.world.nodes) > 2 else []) + [server]:
        if m.can(EDGE_TIMEOUT):
            m.making.link(other, client)
            _delayed(m, data, EDGE_TIMEOUT, edge=(other.index, client.index))


# ---- the situations: a push valid in every respect but one ---------------------------------------------------


@situation("valid")
def _valid(m: HistoryMachine, data: Any) -> bool:
    plan = m.planning.valid_plan(data)
    if plan is None:
        return False
    times = data.draw(st.integers(m.h.hist.repeat.min, m.h.hist.repeat.max), label="times")
    for i in range(times):
        m.judge_valid(plan, m.label("valid") + (f", {i + 1} of {times}" if times > 1 else ""))
    return True


@situation("created_after_link", "created_after_first_push")
def _late(m: HistoryMachine, data: Any) -> bool:
    """Into a cache the server made after the link (before or after the first push over it)."""
    w = m.world
    links = w.usable_links()
    sources = [(p, s) for p in links for s in w.sources(p[0], blocks=m.making.blocks)]
    if not sources:
        return False
    p, src = data.draw(st.sampled_from(sources), label="source")
    tnpl = data.draw(st.sampled_from(divisors(src.num_tensors)), label="layers of")
    dst = m.making.make(data, w.nodes[p[1]], draws.mirror_desc(data.draw, src, tnpl, m.h.dom, m.h.stream))
    if dst is None:
        return False
    name = w.visibility(p, dst)
    plan = m.planning.plan(data, w.nodes[p[0]], w.nodes[p[1]], src, dst)
    return name in m.h.situations and m.judged(data, plan, name)


def _unlinked_push(m: HistoryMachine, data: Any, name: str, pairs: list[tuple[int, int]]) -> bool:
    found = m.planning.pairs(pairs)
    if not found:
        return False
    p, src, dst = data.draw(st.sampled_from(found), label="push")
    return m.judged(data, m.planning.plan(data, m.world.nodes[p[0]], m.world.nodes[p[1]], src, dst), name)


@situation("never_linked")
def _never(m: HistoryMachine, data: Any) -> bool:
    return _unlinked_push(m, data, "never_linked", m.world.never_linked())


@situation("unlinked")
def _unlinked(m: HistoryMachine, data: Any) -> bool:
    return _unlinked_push(m, data, "unlinked", m.world.relinkable())


@situation("unknown_cache")
def _unknown(m: HistoryMachine, data: Any) -> bool:
    """A key naming a cache id the server never had, over its whole domain (ids that agree with the server's in
    their low bits included)."""
    plan = m.planning.valid_plan(data)
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
    found = m.planning.pairs(w.usable_links(), freed_src=which == "src", freed_dst=which == "dst")
    found = [f for f in found if w.visibility(f[0], f[2]) == "valid" or which == "dst"]
    if found and data.draw(st.booleans(), label=f"a {which} freed earlier"):
        p, src, dst = data.draw(st.sampled_from(found), label="push")
        return m.planning.plan(data, w.nodes[p[0]], w.nodes[p[1]], src, dst)
    plan = m.planning.valid_plan(data)
    if plan is None or plan.dst is None:
        return None
    m.judge_valid(plan, m.label(f"valid, before its {which} is freed"))
    cache = plan.src if which == "src" else plan.dst
    if cache.registered and not m.making.can_unregister:
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
    plan = m.planning.valid_plan(data)
    if plan is None or plan.dst is None:
        return False
    desc = CacheSpec(plan.dst.num_tensors, tuple(plan.dst.info.shape), plan.dst.info.data_type,
                     plan.dst.info.placement, register=True)
    private = m.making.make(data, plan.server, desc, accessible=False, registered=True)
    if private is None:
        return False
    m.making.unlink(plan.client, plan.server)  # made before the link, as the documentation asks: no other situation
    m.making.link(plan.client, plan.server)
    return m.judged(data, replace(plan, dst=private, cache_id=private.cache_id), "inaccessible_destination")


def _wait_left(m: HistoryMachine) -> int:
    return max(0, m.h.stream.wait_ms - m.world.waited_ms)


def _delayed(m: HistoryMachine, data: Any, name: str, edge: tuple[int, int] | None = None,
             within: DelayClass | None = None) -> bool:
    """A push whose transfers the client's injected delay slows: within llm.SyncKvCacheWaitTime in all (its length
    drawn over the whole interval below the budget, in the spec's classes), beyond it at the first layer, or within
    it per layer and beyond it in all; then the fault is cleared.  ``edge``: the link of a within-budget delay of
    class ``within`` that half what the history may wait allows, nothing drawn but the push."""
    w, delays = m.world, m.h.hist.delays
    need = 3 if name == "delay_over_layers" else 1
    links = w.usable_links()
    if not links:
        return False
    # the link from the node whose timeout leaves a delay the most room (the largest within what may be waited)
    link = roomiest_link(m, links, _wait_left(m))
    if edge is not None:
        link = edge
    elif name != "delay_within_budget" or data.draw(st.booleans(), label="any link"):
        link = data.draw(st.sampled_from(links), label="delayed link")
    plan = m.planning.valid_plan(data, min_layers=need, link=link)
    if plan is None:
        return False
    t, layers, left = plan.client.timeout_ms, plan.layers, _wait_left(m) // (2 if edge is not None else 1)
    if name == "delay_within_budget":
        drawn = draw_within(data.draw, delays, t, left, within)
        if drawn is None:
            return False
        per_layer, cost = drawn.per_layer_ms(layers), drawn.total_ms
    elif name == "delay_exceeded":
        per_layer, cost = beyond_per_layer_ms(delays, t), exceeded_ms(delays, t)
        if cost > left:
            return False
    else:
        per_layer = t * delays.per_layer
        if per_layer * layers < t * delays.beyond or 2 * t > left:
            return False
        cost = 2 * t
    # an edge delay costs its whole share whatever its turn's class: what the history draws next must not turn
    # on the turn (hypothesis replays one history's choices in another, and the data must be the same)
    w.waited_ms += math.ceil(cost) if edge is None else left
    wait_s, settle_s, what = inject_delay(m, plan.client, name, per_layer, layers, t)
    return _faulted(m, data, plan, name, wait_s=wait_s, clear=plan.client, settle_s=settle_s, what=what)


def _faulted(m: HistoryMachine, data: Any, plan: Plan, name: str, *, wait_s: float, clear: NodeState | None,
             settle_s: float = 0.0, what: str | None = None) -> bool:
    """The push of ``plan`` under an injected fault, judged by the clause of ``name``: a refusal must come in time
    (one sync_kv_timeout per layer, plus slack); then the fault is cleared (on ``clear``) and valid pushes follow.
    ``what``: the push's label (default: the situation's name)."""
    clause = m.h.situations[name]
    label = m.label(what or name)
    outcome = judge_push(m.h, m.bed, m.world, plan, clause, None, label, settle_s=settle_s,
                         bound_extra=FAULT_BOUND_FACTOR * wait_s)
    if outcome.exc is not None:
        raised_in_time(m.bed, push_for(m.h, m.bed, plan), outcome, plan.client.timeout_ms / 1000, clause.id, label)
    if clear is not None:
        m.bed.inject_fault(clear, {"kind": "clear"})
    m.recover(data, plan.link, m.label(name), outcome, under_fault=True)
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
    plan = m.planning.valid_plan(data)
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
    plan = m.planning.valid_plan(data)
    if plan is None:
        return False
    m.bed.inject_fault(plan.server, {"kind": "kill_node"})
    plan.server.alive = False
    return _faulted(m, data, plan, "dead_peer", wait_s=plan.client.timeout_ms * plan.layers / 1000, clear=None)


@situation("after_timeout")
def _after_timeout(m: HistoryMachine, data: Any) -> bool:
    """A push that times out (judged by delay_exceeded's clause), then valid pushes over its link (recover)."""
    return m.can("delay_exceeded") and _delayed(m, data, "delay_exceeded")


@situation("after_refusal")
def _after_refusal(m: HistoryMachine, data: Any) -> bool:
    """A push refused for a key naming no cache (unknown_cache's clause), then valid pushes over its link."""
    return m.can("unknown_cache") and _unknown(m, data)


@situation("concurrent")
def _concurrent(m: HistoryMachine, data: Any) -> bool:
    return drawn_relation(m, data)


def push_rule(name: str) -> Callable[..., MultipleResults[Any]]:
    """The rule of one situation: a push in it (what it made goes to the ``made`` bundle)."""
    def push(self: HistoryMachine, data: Any) -> MultipleResults[Any]:
        return self.push_in(name, data)
    # named before hypothesis wraps it: the name is the rule's in a printed history and orders the rules, which
    # a shrink moves towards the first of: the valid push, plain ``push``, sorts before every push_<situation>
    push.__name__ = push.__qualname__ = rule_name(name)
    push.__doc__ = f"A push in situation {name}."
    return precondition(lambda self: bool(self.world.usable_links()))(
        rule(target=HistoryMachine.made, data=st.data())(push))


def rule_name(situation: str) -> str:
    return "push" if situation == "valid" else f"push_{situation}"


def machine_for(h: HistoryRun) -> type[HistoryMachine]:
    """The machine class of one stream run (hypothesis builds a new instance per history), with a push rule per
    situation the stream judges, a ``pull`` rule where the run's operation pulls a batch entry, and a ``blocks``
    rule where it moves block lists."""
    pulling, moving = pull_operation(h), blocks_operation(h)
    mine = pulling or moving
    # a mover's situations are its own transfers' (mover_situations.py); push_cache's, its pushes'
    pushes = ({rule_name(n): push_rule(n) for n in SITUATIONS if n in h.situations} if mine is None else
              situation_rules(h, HistoryMachine.made, mine, lambda n: f"{mine.api}_{n}"))
    # the spec's companion: the family's operation moving the run's unit the other way, as a serving system pushes
    # and pulls over the same links (movers.py)
    other = companion(h)
    if other is not None and mine is None:  # a push run's companion pulls (push_cache's: pull_cache)
        # named to sort after ``push``: a shrink moves towards the first rules, and a push run's history must shrink
        # to its own pushes first
        rule_of = blocks_rule if other.op.lists else pull_rule
        pushes[f"with_{other.api}"] = rule_of(HistoryMachine.made, other, f"with_{other.api}")
    if pulling is not None:  # a run whose operation pulls: its histories pull too (pulls.py)
        pushes["pull"] = pull_rule(HistoryMachine.made, pulling)
        if other is not None:
            pushes[f"companion_{other.api}"] = pull_rule(HistoryMachine.made, other, f"companion_{other.api}")
    if moving is not None:  # a run whose operation moves block lists: its histories move blocks (blocks.py)
        pushes["blocks"] = blocks_rule(HistoryMachine.made, moving)
        if other is not None:
            pushes[f"companion_{other.api}"] = blocks_rule(HistoryMachine.made, other, f"companion_{other.api}")
    # the family's operations on the other unit, each on caches of its own kind (alongside.py)
    others = alongside_movers(h)
    pushes.update(alongside.rules(others, HistoryMachine.made))
    # the companion and the operations alongside, found once per stream run (their specs are read from disk), are
    # every history's (HistoryMachine.open)
    return type("History", (HistoryMachine,), {"h": h, "turns": Turns(), "partner": other,
                                               "others": others, **pushes})

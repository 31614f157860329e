"""A history's pull (the machine's ``pull`` rule, in a run whose spec's operation pulls one batch entry): a node
pulls, over a usable link it made (client -> server), from a live cache on the server that is open to remote
access into a live cache of its own, in one call by keyword — the key names the server's cluster, its cache and
the source entry (a ``CacheKeyByIdAndIndex``: the history's nodes have llm.EnableRemoteCacheAccessible on, which
takes no other key), the local cache, its entry and the drawn layers (the same planning as a push's), size -1 —
judged like a valid push by the run's history clause: the local destination exactly as the oracle has it (by the
spec's ``operation``: the source on the remote node), every other live cache, guard band and freed region as the
history left it.  What the judgement read becomes the model's bytes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, MultipleResults, multiple, precondition, rule

from ...inputs.values import Deferred, Value
from ...spec.model import Operation
from ...testbed.testbed import Call, Outcome
from .planning import MAX_LIVE_CACHES
from .pushes import HistoryRun, judge_transfer
from .world import CacheState, NodeState

if TYPE_CHECKING:
    from .machine import HistoryMachine


@dataclass(frozen=True)
class Pull:
    """A pull: ``client`` reads entry ``src_batch`` of ``src`` on ``server`` into entry ``dst_batch`` of its own
    ``dst``, ``tnpl`` tensors per layer, over the layers ``layer_range`` (None: every layer)."""

    client: NodeState
    server: NodeState
    src: CacheState
    dst: CacheState
    tnpl: int
    layer_range: tuple[int, int] | None
    src_batch: int
    dst_batch: int

    @property
    def link(self) -> tuple[int, int]:
        return (self.client.index, self.server.index)

    def describe(self) -> str:
        rng = "" if self.layer_range is None else f" layers {self.layer_range}"
        return (f"{self.client.name}:{self.dst.name}[{self.dst_batch}] <- {self.server.name}:{self.src.name}"
                f"[{self.src_batch}], tnpl {self.tnpl}{rng}, size -1, keywords")


def pull_operation(h: HistoryRun) -> Operation | None:
    """The operation a history's pull step makes: the run's spec's, where its direction is pull and its unit one
    batch entry (the call below names one entry of a contiguous cache); None: the history pulls nothing (its
    transfers are the push rules')."""
    op = h.run.spec.operation
    return op if op.pulls and not op.lists else None


def pull_rule(made: Bundle[Any], op: Operation) -> Callable[..., MultipleResults[Any]]:
    """The machine's ``pull`` rule (what the pull made goes to the ``made`` bundle)."""
    def pull(self: HistoryMachine, data: Any) -> MultipleResults[Any]:
        """A valid pull over a usable link, judged (:mod:`.pulls`)."""
        moment = self.world.clock
        self.step("pull")
        found = plan_pull(self, data)
        if found is not None:
            judge_pull(self, found, op, self.label("pull"))
        return multiple(*self.made_since(moment))
    return precondition(lambda self: bool(self.world.usable_links()))(rule(target=made, data=st.data())(pull))


def opening_pulls(m: HistoryMachine, data: Any, op: Operation,
                  made: list[tuple[CacheState, CacheState] | None], label: str) -> None:
    """What a pull run's history reaches by construction: the client pulls back every pair its opening made (a
    source on the client, a destination on the server, both before the link): the server's cache into the
    client's."""
    client, server = m.world.nodes[0], m.world.nodes[1]
    for i, pair in enumerate(p for p in made if p is not None):
        mine, theirs = pair
        got = m.planning.args(data, theirs, mine, m.planning.tnpls(theirs, mine, open_=theirs))
        if got is None:
            continue
        pull = Pull(client, server, theirs, mine, *got, data.draw(st.integers(0, theirs.batch - 1), label="src entry"),
                    data.draw(st.integers(0, mine.batch - 1), label="dst entry"))
        judge_pull(m, pull, op, f"{label}, pull {i + 1}")


def pairs(m: HistoryMachine) -> list[tuple[tuple[int, int], CacheState, CacheState]]:
    """(link, source on its server, destination on its client) a valid pull could go between."""
    w = m.world
    out = []
    for link in w.usable_links():
        srcs = list(w.sources(link[1]))
        out += [(link, s, d) for s in srcs for d in w.live(link[0]) if d is not s and m.planning.tnpls(s, d, open_=s)]
    return out


def plan_pull(m: HistoryMachine, data: Any) -> Pull | None:
    """A pull valid in every respect: between existing caches, into a destination made for an existing source,
    or from a new source on the server into a new destination; a link that does not see the source yet, or that
    a timeout left faulted, is made again first (as a valid push's)."""
    w = m.world
    links = w.usable_links()
    if not links:
        return None
    found = pairs(m)
    sources = [(p, s) for p in links for s in w.sources(p[1])]
    crowded = len(w.live()) >= MAX_LIVE_CACHES and found
    ways = ((["existing"] * 3 if found else []) + (["new destination"] if sources and not crowded else [])
            + (["new source"] if not crowded else []))
    way = data.draw(st.sampled_from(ways), label="pull between")
    if way != "existing":
        made = m.planning.new_pair(data, links, sources, way, src_end=1)
        if made is None:
            return None
        p, src, dst = made
        found = [(p, src, dst)] if m.planning.tnpls(src, dst, open_=src) else []
    if not found:
        return None
    p, src, dst = data.draw(st.sampled_from(found), label="pull")
    client, server = w.nodes[p[0]], w.nodes[p[1]]
    if w.visibility(p, src) != "valid" or w.links[p].faulted:
        m.making.unlink(client, server)
        m.making.link(client, server)
    got = m.planning.args(data, src, dst, m.planning.tnpls(src, dst, open_=src))
    if got is None:
        return None
    tnpl, rng = got
    return Pull(client, server, src, dst, tnpl, rng, data.draw(st.integers(0, src.batch - 1), label="src entry"),
                data.draw(st.integers(0, dst.batch - 1), label="dst entry"))


def call_of(m: HistoryMachine, pull: Pull, op: Operation) -> Call:
    """The pull's call, every argument by keyword (those the release's signature takes)."""
    bed = m.bed
    key = Value(Deferred(bed.api.CacheKeyByIdAndIndex, [pull.server.cluster_id, pull.src.cache_id, pull.src_batch]),
                f"api.CacheKeyByIdAndIndex({pull.server.cluster_id}, {pull.src.name}.cache_id, {pull.src_batch})")
    rng = (Value(None, "None") if pull.layer_range is None
           else Value(range(*pull.layer_range), f"range{pull.layer_range!r}"))
    given = {op.key: key, op.cache: Value(pull.dst.info.cache, pull.dst.name),
             op.dst_entries: Value(pull.dst_batch, repr(pull.dst_batch)), "size": Value(-1, "-1"),
             "src_layer_range": rng, "dst_layer_range": rng, "tensor_num_per_layer": Value(pull.tnpl, repr(pull.tnpl))}
    names = set(m.h.run.signature.names)
    return Call({k: v for k, v in given.items() if k in names}, m.h.run.spec.api, key=op.key,
                key_entries=op.key_entries)


def judge_pull(m: HistoryMachine, pull: Pull, op: Operation, label: str) -> Outcome:
    """Make ``pull`` and judge it by the history clause (every outcome it allows: a success that lands exactly and
    changes nothing else); a pull that raised leaves its link ``faulted`` (made again before the next)."""
    __tracebackhide__ = True
    return judge_transfer(m.h, m.bed, m.world, pull.client, pull.server, pull.src, pull.dst, call_of(m, pull, op),
                          op, f"{label}: {pull.describe()}")

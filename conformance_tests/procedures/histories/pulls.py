"""A history's pull (the machine's ``pull`` rule, in a run whose spec's operation pulls one batch entry): a node
pulls, over a usable link it made (client -> server), from a live cache on the server that is open to remote
access into a live cache of its own, in one call in a drawn calling form (keywords, positional, or only what
differs from the defaults) — the key names the server's cluster, its cache and
the source entry (a ``CacheKeyByIdAndIndex``: the history's nodes have llm.EnableRemoteCacheAccessible on, which
takes no other key), the local cache, its entry and the drawn layers (the same planning as a push's), size -1 —
judged like a valid push by the run's history clause: the local destination exactly as the oracle has it (by the
spec's ``operation``: the source on the remote node), every other live cache, guard band and freed region as the
history left it.  What the judgement read becomes the model's bytes.

The spec's companion (``generation.histories.companion``: push_cache for pull_cache) moves one batch entry the
other way in the same histories, by its own method and parameters: the client pushes one of its caches into one of
the server's, the key naming the server's cache and entry; judged the same way, by the run's history clause."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, MultipleResults, multiple

from ...inputs.values import Value
from ...testbed.testbed import Call, Outcome
from ..transfer_keys import batch_key
from .movers import Mover, choose_pair, mover_rule, opening_pairs, own
from .pushes import STYLES, HistoryRun, in_style, judge_transfer
from .world import CacheState, NodeState

if TYPE_CHECKING:
    from .machine import HistoryMachine


@dataclass(frozen=True)
class Pull:
    """A transfer of one batch entry ``client`` makes over its link to ``server``: a pull (``pulls``) reads entry
    ``src_batch`` of the server's ``src`` into entry ``dst_batch`` of the client's ``dst``; a companion's push
    writes the client's ``src`` into the server's ``dst``; ``tnpl`` tensors per layer, over the layers
    ``layer_range`` (None: every layer)."""

    client: NodeState
    server: NodeState
    src: CacheState
    dst: CacheState
    tnpl: int
    layer_range: tuple[int, int] | None
    src_batch: int
    dst_batch: int
    pulls: bool = True
    style: str = "keywords"  # its calling form (:data:`.pushes.STYLES`)

    @property
    def link(self) -> tuple[int, int]:
        return (self.client.index, self.server.index)

    @property
    def keyed(self) -> tuple[CacheState, int]:
        """The server's cache and entry, which the key names."""
        return (self.src, self.src_batch) if self.pulls else (self.dst, self.dst_batch)

    @property
    def local(self) -> tuple[CacheState, int]:
        """The client's cache and entry, which the call passes."""
        return (self.dst, self.dst_batch) if self.pulls else (self.src, self.src_batch)

    def describe(self) -> str:
        rng = "" if self.layer_range is None else f" layers {self.layer_range}"
        if self.pulls:
            moved = (f"{self.client.name}:{self.dst.name}[{self.dst_batch}] <- {self.server.name}:{self.src.name}"
                     f"[{self.src_batch}]")
        else:
            moved = (f"{self.client.name}:{self.src.name}[{self.src_batch}] -> {self.server.name}:{self.dst.name}"
                     f"[{self.dst_batch}]")
        return f"{moved}, tnpl {self.tnpl}{rng}, size -1, {self.style}"


def pull_operation(h: HistoryRun) -> Mover | None:
    """The operation a history's pull step makes: the run's spec's, where its direction is pull and its unit one
    batch entry (the call below names one entry of a contiguous cache); None: the history pulls nothing (its
    transfers are the push rules')."""
    op = h.run.spec.operation
    return own(h) if op.pulls and not op.lists else None


def pull_rule(made: Bundle[Any], mover: Mover, name: str = "pull") -> Callable[..., MultipleResults[Any]]:
    """The machine's ``pull`` rule, or the companion's (``name``): what the transfer made goes to the ``made``
    bundle."""
    def pull(self: HistoryMachine, data: Any) -> MultipleResults[Any]:
        """A valid transfer of one batch entry over a usable link, judged (:mod:`.pulls`)."""
        moment = self.world.clock
        self.step(name)
        found = plan_pull(self, data, mover)
        if found is not None:
            judge_pull(self, found, mover, self.label(name))
        return multiple(*self.made_since(moment))
    return mover_rule(pull, made, mover, name)


def opening_pulls(m: HistoryMachine, data: Any, movers: list[Mover],
                  made: list[tuple[CacheState, CacheState] | None], label: str) -> None:
    """What a pull run's history reaches by construction: the client pulls back every pair its opening made (a
    source on the client, a destination on the server, both before the link): the server's cache into the
    client's; then the companion pushes the client's cache into the server's, where the backend has its method;
    then the client pulls again."""
    for mover, i, client, server, src, dst in opening_pairs(m, movers, made):
        found = pull_between(m, data, client, server, src, dst, mover)
        if found is not None:
            what = "pull" if mover.api == m.h.run.spec.api else mover.api
            judge_pull(m, found, mover, f"{label}, {what} {i}")


def plan_pull(m: HistoryMachine, data: Any, mover: Mover, *, link: tuple[int, int] | None = None,
              keep_link: bool = False, max_layers: int | None = None) -> Pull | None:
    """A transfer valid in every respect (:func:`.movers.choose_pair`, over ``link`` where given, ``keep_link``; a
    pull's new destination open to remote access as drawn, a push's open) and its entries; of at most
    ``max_layers`` layers where given."""
    got = choose_pair(m, data, mover, "pull", dst_accessible=None if mover.op.pulls else True, link=link,
                      keep_link=keep_link)
    return None if got is None else pull_between(m, data, *got, mover, max_layers=max_layers)


def pull_between(m: HistoryMachine, data: Any, client: NodeState, server: NodeState, src: CacheState,
                 dst: CacheState, mover: Mover, *, max_layers: int | None = None) -> Pull | None:
    """The arguments of a valid transfer from ``src`` into ``dst``: tensor_num_per_layer and layers as a push's
    (at most ``max_layers``), then the two entries."""
    pulls = mover.op.pulls
    got = m.planning.args(data, src, dst, m.planning.tnpls(src, dst, open_=src if pulls else dst),
                          max_layers=max_layers)
    if got is None:
        return None
    tnpl, rng = got
    return Pull(client, server, src, dst, tnpl, rng, data.draw(st.integers(0, src.batch - 1), label="src entry"),
                data.draw(st.integers(0, dst.batch - 1), label="dst entry"), pulls,
                data.draw(st.sampled_from(STYLES), label="calling form"))


def key_of(m: HistoryMachine, server: NodeState, cache_id: int, batch: int, code: str | None = None) -> Value:
    """The CacheKeyByIdAndIndex naming entry ``batch`` of ``server``'s cache ``cache_id`` (``code``: the id's)."""
    return batch_key(m.bed.api, server.cluster_id, cache_id, batch, code)


def call_of(m: HistoryMachine, pull: Pull, mover: Mover, key: Value | None = None) -> Call:
    """The transfer's call in its calling form (the arguments the mover's signature takes); ``key``: in place of
    the one naming the server's cache and entry."""
    op = mover.op
    (keyed, key_batch), (local, local_batch) = pull.keyed, pull.local
    key = key if key is not None else key_of(m, pull.server, keyed.cache_id, key_batch, f"{keyed.name}.cache_id")
    rng = (Value(None, "None") if pull.layer_range is None
           else Value(range(*pull.layer_range), f"range{pull.layer_range!r}"))
    local_entries = op.dst_entries if op.pulls else op.src_entries
    given = {op.key: key, op.cache: Value(local.info.cache, local.name),
             local_entries: Value(local_batch, repr(local_batch)), "size": Value(-1, "-1"),
             "src_layer_range": rng, "dst_layer_range": rng, "tensor_num_per_layer": Value(pull.tnpl, repr(pull.tnpl))}
    return in_style(mover.signature, given, pull.style, mover.api, key=op.key, key_entries=op.key_entries)


def judge_pull(m: HistoryMachine, pull: Pull, mover: Mover, label: str) -> Outcome:
    """Make ``pull`` and judge it by the run's history clause (every outcome it allows: a success that lands
    exactly and changes nothing else), a companion's as the run's own; one that raised leaves its link
    ``faulted`` (made again before the next)."""
    __tracebackhide__ = True
    return judge_transfer(m.h, m.bed, m.world, pull.client, pull.server, pull.src, pull.dst,
                          call_of(m, pull, mover), mover.op, f"{label}: {pull.describe()}")

"""A history's move of blocks (the machine's ``blocks`` rule, in a run whose spec's operation moves block lists:
push_blocks, pull_blocks): the history's caches are blocks caches (allocated, or registered at uneven offsets by
register_blocks_cache, each bound to a BlocksCacheKey whose model_id a freed cache of its node may have had), and a
node moves blocks over a usable link it made (client -> server), by the spec's direction: a push from a cache of
its own into one of the server's, a pull from one of the server's into one of its own; the key names the server's
cache by its BlocksCacheKey, the lists pair source blocks with distinct destination blocks, in any order, the
layers drawn as a push's.  Judged like a valid push by the run's history clause: the destination exactly as the
oracle has it, every other live cache, guard band and freed region as the history left it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, MultipleResults, multiple

from ...inputs.values import Value
from ...testbed.testbed import Call, Outcome
from ..transfer_keys import blocks_key
from .movers import Mover, choose_pair, mover_rule, opening_pairs, own
from .pushes import STYLES, HistoryRun, in_style, judge_transfer
from .world import CacheState, NodeState

if TYPE_CHECKING:
    from .machine import HistoryMachine


@dataclass(frozen=True)
class BlocksMove:
    """``client`` moves blocks ``src_blocks`` of ``src`` into blocks ``dst_blocks`` of ``dst`` (a push: ``src``
    is the client's; a pull: the server's), ``tnpl`` tensors per layer, over ``layer_range`` (None: every layer)."""

    client: NodeState
    server: NodeState
    src: CacheState
    dst: CacheState
    tnpl: int
    layer_range: tuple[int, int] | None
    src_blocks: tuple[int, ...]
    dst_blocks: tuple[int, ...]
    pulls: bool
    style: str = "keywords"  # its calling form (:data:`.pushes.STYLES`)

    @property
    def link(self) -> tuple[int, int]:
        return (self.client.index, self.server.index)

    @property
    def keyed(self) -> CacheState:
        """The cache the key names: the server's."""
        return self.src if self.pulls else self.dst

    def describe(self) -> str:
        rng = "" if self.layer_range is None else f" layers {self.layer_range}"
        src_node, dst_node = (self.server, self.client) if self.pulls else (self.client, self.server)
        return (f"{src_node.name}:{self.src.name}{list(self.src_blocks)} -> {dst_node.name}:{self.dst.name}"
                f"{list(self.dst_blocks)} ({'pulled by' if self.pulls else 'pushed by'} {self.client.name}), "
                f"tnpl {self.tnpl}{rng}, {self.style}")


def blocks_operation(h: HistoryRun) -> Mover | None:
    """The operation a history's blocks step makes: the run's spec's, where its unit is block lists; None: the
    history moves no blocks."""
    return own(h) if h.run.spec.operation.lists else None


def blocks_rule(made: Bundle[Any], mover: Mover, name: str = "blocks") -> Callable[..., MultipleResults[Any]]:
    """The machine's ``blocks`` rule, or a companion's (``name``): what the move made goes to the ``made`` bundle."""
    def blocks(self: HistoryMachine, data: Any) -> MultipleResults[Any]:
        """A valid move of blocks over a usable link, judged (:mod:`.blocks`)."""
        moment = self.world.clock
        self.step(f"{mover.api}")
        first = plan_move(self, data, mover)
        # a serving system moves other blocks between the same caches again and again (repeat's times)
        times = data.draw(st.integers(self.h.hist.repeat.min, self.h.hist.repeat.max), label="times")
        for i in range(times if first is not None else 0):
            assert first is not None
            move = first if i == 0 else move_between(self, data, first.client, first.server, first.src,
                                                     first.dst, mover)
            if move is not None and move.src.live and move.dst.live and self.world.links.get(move.link):
                judge_move(self, move, mover, self.label(mover.api) + (f", {i + 1} of {times}" if times > 1 else ""))
        return multiple(*self.made_since(moment))
    return mover_rule(blocks, made, mover, name)


def opening_moves(m: HistoryMachine, data: Any, movers: list[Mover],
                  made: list[tuple[CacheState, CacheState] | None], label: str) -> None:
    """What a blocks run's history reaches by construction: every pair its opening made (a cache on the client, one
    on the server, both before the link) moves blocks by each mover's direction (the run's operation, its companion
    where the backend has it, the run's again)."""
    for mover, i, client, server, src, dst in opening_pairs(m, movers, made):
        move = move_between(m, data, client, server, src, dst, mover)
        if move is not None:
            judge_move(m, move, mover, f"{label}, {mover.api} {i}")


def plan_move(m: HistoryMachine, data: Any, mover: Mover, *, link: tuple[int, int] | None = None,
              keep_link: bool = False, max_layers: int | None = None) -> BlocksMove | None:
    """A move valid in every respect (:func:`.movers.choose_pair`, over ``link`` where given, ``keep_link``) and
    its block lists; of at most ``max_layers`` layers where given."""
    got = choose_pair(m, data, mover, "blocks", dst_accessible=True, link=link, keep_link=keep_link)
    return None if got is None else move_between(m, data, *got, mover, max_layers=max_layers)


def move_between(m: HistoryMachine, data: Any, client: NodeState, server: NodeState, src: CacheState, dst: CacheState,
                 mover: Mover, *, max_layers: int | None = None) -> BlocksMove | None:
    """The arguments of a valid move from ``src`` into ``dst``: tensor_num_per_layer and layers as a push's (at
    most ``max_layers``), then how many blocks, the destination's distinct, the source's any (a source block may
    be read twice)."""
    op = mover.op
    got = m.planning.args(data, src, dst, m.planning.tnpls(src, dst, open_=src if op.pulls else dst),
                          max_layers=max_layers)
    if got is None:
        return None
    tnpl, rng = got
    count = data.draw(st.integers(1, dst.batch), label="blocks moved")
    dst_blocks = data.draw(st.lists(st.integers(0, dst.batch - 1), min_size=count, max_size=count, unique=True),
                           label="dst blocks")
    src_blocks = data.draw(st.lists(st.integers(0, src.batch - 1), min_size=count, max_size=count),
                           label="src blocks")
    return BlocksMove(client, server, src, dst, tnpl, rng, tuple(src_blocks), tuple(dst_blocks), op.pulls,
                      data.draw(st.sampled_from(STYLES), label="calling form"))


def key_of(m: HistoryMachine, server: NodeState, model_id: int) -> Value:
    """The BlocksCacheKey naming ``server``'s blocks cache bound to ``model_id``."""
    return blocks_key(m.bed.api, server.cluster_id, model_id)


def call_of(m: HistoryMachine, move: BlocksMove, mover: Mover, key: Value | None = None) -> Call:
    """The move's call in its calling form (the arguments the mover's signature takes); ``key``: in place of the
    one naming the server's cache."""
    keyed, op = move.keyed, mover.op
    assert keyed.model_id is not None
    key = key if key is not None else key_of(m, move.server, keyed.model_id)
    local = move.dst if move.pulls else move.src
    rng = (Value(None, "None") if move.layer_range is None
           else Value(range(*move.layer_range), f"range{move.layer_range!r}"))
    given = {op.key: key, op.cache: Value(local.info.cache, local.name),
             op.src_entries: Value(list(move.src_blocks), repr(list(move.src_blocks))),
             op.dst_entries: Value(list(move.dst_blocks), repr(list(move.dst_blocks))),
             "src_layer_range": rng, "dst_layer_range": rng, "tensor_num_per_layer": Value(move.tnpl, repr(move.tnpl))}
    return in_style(mover.signature, given, move.style, mover.api, key=op.key)


def judge_move(m: HistoryMachine, move: BlocksMove, mover: Mover, label: str) -> Outcome:
    """Make ``move`` and judge it by the run's history clause (every outcome it allows: a success that lands exactly
    and changes nothing else), a companion's as the run's own; a move that raised leaves its link ``faulted``
    (made again before the next)."""
    __tracebackhide__ = True
    return judge_transfer(m.h, m.bed, m.world, move.client, move.server, move.src, move.dst,
                          call_of(m, move, mover), mover.op, f"{label}: {move.describe()}")

"""Hypothesis strategies for the layouts of an operation whose unit is blocks (push_blocks): two blocks caches with
their own block counts and one push of block lists between them, drawn from the spec's domains (the DataType
table, the transfer table, the ``generation`` bounds: ``batch`` bounds a cache's block count, as a blocks cache's
first dimension counts its blocks).  The batch counterpart is :mod:`.strategies`, whose helpers this reuses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

from ..spec import CacheSpec, Scenario
from ..spec.model import Operation
from ..spec.value_language import ListOf, Lit, RangeOf, TupleOf, ValueExpr
from .strategies import Domain, inner_shape, reshape, tensor_count


@dataclass(frozen=True)
class BlockSide:
    num_tensors: int
    shape: tuple[int, ...]  # (blocks, *one block's dimensions)
    data_type: str
    placement: str
    register: bool = False  # raw memory registered by register_blocks_cache (else allocate_blocks_cache)

    @property
    def made(self) -> str:
        """How the testbed makes it (coverage/setup_inputs.py MADE_WAYS)."""
        return "register_blocks" if self.register else "allocate_blocks"

    def desc(self, model_id: int | None) -> CacheSpec:
        return CacheSpec(self.num_tensors, self.shape, self.data_type, self.placement, blocks=True,
                         model_id=model_id, register=True if self.register else None)


@dataclass(frozen=True)
class BlockLayout:
    """Two blocks caches and one push of ``src_blocks[i]`` into ``dst_blocks[i]`` between them."""

    src: BlockSide
    dst: BlockSide
    tnpl: int
    src_blocks: tuple[int, ...]
    dst_blocks: tuple[int, ...]
    as_tuples: bool  # the lists passed as tuples (both types are documented)
    layer_range: tuple[int, int] | None  # the same on both sides, as documented; None: the default (all layers)
    seed: int = 0

    def with_(self, **kw: Any) -> BlockLayout:
        return replace(self, **kw)

    def scenario(self, baseline: Scenario) -> Scenario:
        """The baseline with these caches, linked; each keeps the baseline's model_id (the remote one's, a push's
        destination or a pull's source, is bound to it), so the baseline call's key names it."""
        return baseline.with_(src=self.src.desc(baseline.src.model_id), dst=self.dst.desc(baseline.dst.model_id),
                              link=True)

    def args(self, params: Sequence[str], op: Operation) -> dict[str, ValueExpr]:
        """The push's arguments in the case value language (the key is the baseline call's)."""
        def blocks(values: tuple[int, ...]) -> ValueExpr:
            items = tuple(Lit(b) for b in values)
            return TupleOf(items) if self.as_tuples else ListOf(items)

        rng: ValueExpr = Lit(None) if self.layer_range is None else RangeOf(tuple(Lit(b) for b in self.layer_range))
        out = {"src_blocks": blocks(self.src_blocks), "dst_blocks": blocks(self.dst_blocks),
               "src_layer_range": rng, "dst_layer_range": rng, "tensor_num_per_layer": Lit(self.tnpl)}
        return {k: v for k, v in out.items() if k in params}

    def __str__(self) -> str:
        def side(s: BlockSide) -> str:
            return f"{s.num_tensors}x{list(s.shape)} {s.data_type} {s.placement}"

        rng = "" if self.layer_range is None else f" layers {self.layer_range}"
        return (f"src {side(self.src)} blocks {list(self.src_blocks)} -> dst {side(self.dst)} blocks "
                f"{list(self.dst_blocks)}, tnpl {self.tnpl}{rng}")


@st.composite
def block_layouts(draw: Any, dom: Domain, *, data_type: str | None = None,
                  transfer: tuple[str, str] | None = None) -> BlockLayout:
    """A valid push of blocks: every documented data type, block counts of each side anywhere in the bounds,
    one block's dimensions (the destination's may be shaped otherwise, with the same bytes), from one block to
    as many as the smaller cache holds, destination blocks distinct and in any order, source blocks in any order
    and possibly repeated, lists or tuples, the default or an explicit layer range, and a destination with more
    layers only with an explicit range."""
    dtype = data_type or draw(st.sampled_from(dom.data_types), label="data_type")
    src_p, dst_p = transfer or draw(st.sampled_from(dom.transfers), label="transfer")
    total, tnpl = tensor_count(draw, dom)
    layers = total // tnpl
    src_n = draw(st.integers(*dom.batch), label="src blocks")
    dst_n = draw(st.integers(*dom.batch), label="dst blocks")
    inner = draw(inner_shape(dom, max(src_n, dst_n), dom.itemsize[dtype]))
    k = draw(st.integers(1, min(src_n, dst_n)), label="blocks moved")
    dst_blocks = tuple(draw(st.permutations(range(dst_n)), label="dst blocks order")[:k])
    src_blocks = tuple(draw(st.lists(st.integers(0, src_n - 1), min_size=k, max_size=k), label="src blocks"))
    rng: tuple[int, int] | None = None
    if draw(st.booleans(), label="explicit layer range"):
        start = draw(st.integers(0, layers - 1), label="range start")
        rng = (start, draw(st.integers(start + 1, layers), label="range stop"))
    extra_layers = 0 if rng is None else draw(st.sampled_from([0, 0, 1]), label="extra dst layers")
    src = BlockSide(total, (src_n, *inner), dtype, src_p)
    dst = BlockSide(total + extra_layers * tnpl, (dst_n, *reshape(draw, inner, dom)), dtype, dst_p)
    return BlockLayout(src, dst, tnpl, src_blocks, dst_blocks, draw(st.booleans(), label="tuples"), rng,
                       seed=draw(st.integers(0, 2**16), label="data seed"))

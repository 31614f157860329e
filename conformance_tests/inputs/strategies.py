"""Hypothesis strategies for layouts drawn from the spec: its DataType table, its transfer table and its
``generation`` bounds (ranks, batch sizes, layers, tensor counts, bytes).  Nothing about the data model is
listed here; a clause of level X draws only the placement pairs the spec gives level X (or stricter).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import strategies as st

from ..spec import CacheSpec, Level, Scenario, Spec
from ..spec.model import Operation
from ..spec.value_language import CacheIdRef, ClusterRef, KeyOf, Lit, RangeOf, ValueExpr


class GenerationError(Exception):
    """The spec lacks what generation needs (no generation bounds, no documented data types...)."""


@dataclass(frozen=True)
class Side:
    """One cache of a drawn layout."""

    num_tensors: int
    shape: tuple[int, ...]
    data_type: str
    placement: str
    register: bool

    def desc(self) -> CacheSpec:
        return CacheSpec(self.num_tensors, self.shape, self.data_type, self.placement,
                         register=True if self.register else None)


@dataclass(frozen=True)
class Layout:
    """Source and destination caches and one transfer between them (arguments in the spec's value language)."""

    src: Side
    dst: Side
    tnpl: int
    src_batch_index: int
    dst_batch_index: int
    src_range: tuple[int, ...] | None  # (start, stop[, step]); None = the default (all layers)
    dst_range: tuple[int, ...] | None
    size: int = -1
    seed: int = 0
    notes: tuple[str, ...] = field(default=())

    def scenario(self, baseline: Scenario) -> Scenario:
        """The baseline scenario with this layout's caches, linked."""
        return baseline.with_(src=self.src.desc(), dst=self.dst.desc(), link=True)

    def args(self, params: Sequence[str], op: Operation) -> dict[str, ValueExpr]:
        """The transfer's arguments (those the release takes), in the case value language, by ``op``'s names:
        its key names the remote side's cache and batch entry, its entries parameter the local side's."""
        def rng(r: tuple[int, ...] | None) -> ValueExpr:
            return Lit(None) if r is None else RangeOf(tuple(Lit(b) for b in r))

        remote, local = ((self.src_batch_index, self.dst_batch_index) if op.pulls
                         else (self.dst_batch_index, self.src_batch_index))
        local_entries = op.dst_entries if op.pulls else op.src_entries
        out: dict[str, ValueExpr] = {
            op.key: KeyOf("CacheKeyByIdAndIndex", None, (), ClusterRef("remote"), CacheIdRef(op.remote_side),
                          Lit(remote)),
            local_entries: Lit(local),
            "src_layer_range": rng(self.src_range),
            "dst_layer_range": rng(self.dst_range),
            "size": Lit(self.size),
            "tensor_num_per_layer": Lit(self.tnpl),
        }
        return {k: v for k, v in out.items() if k == op.key or k in params}

    def __str__(self) -> str:
        def side(s: Side) -> str:
            return f"{s.num_tensors}x{list(s.shape)} {s.data_type} {s.placement}{' reg' if s.register else ''}"

        rng = "" if self.src_range is None and self.dst_range is None else f" ranges {self.src_range}->{self.dst_range}"
        note = f" [{'; '.join(self.notes)}]" if self.notes else ""
        return (f"src {side(self.src)} b{self.src_batch_index} -> dst {side(self.dst)} b{self.dst_batch_index}, "
                f"tnpl {self.tnpl}{rng}, size {self.size}{note}")

    def with_(self, **kw: Any) -> Layout:
        return replace(self, **kw)


@dataclass(frozen=True)
class Domain:
    """What the spec allows a drawn layout to be."""

    data_types: tuple[str, ...]
    itemsize: Mapping[str, int]
    transfers: tuple[tuple[str, str], ...]
    rank: tuple[int, int]
    batch: tuple[int, int]
    layers: tuple[int, int]
    tensors: tuple[int, int]
    tensor_bytes: tuple[int, int]
    can_register: bool
    has_tnpl: bool  # the release has tensor_num_per_layer (else one layer is two tensors)


def domain(spec: Spec, level: Level, caps: Mapping[str, Any], params: Sequence[str]) -> Domain:
    """The drawing domain for a clause of ``level`` on a backend with ``caps``: the spec's generation bounds, its
    documented data types, and the placement pairs of ``level``'s rank or stricter that the backend declares."""
    gen = spec.generation
    if gen is None:
        raise GenerationError("the spec has no generation section (bounds for drawn layouts)")
    table = spec.types.enums.get("DataType")
    dtypes = {n: m.size for n, m in (table.members.items() if table else ())
              if isinstance(m.size, int) and m.size_source != "vendor"}
    if not dtypes:
        raise GenerationError("the spec's DataType table has no member with a documented size")
    declared = set(caps.get("placements") or ["DEVICE"])
    transfers = tuple((p.src, p.dst) for p in spec.types.transfers
                      if p.level.rank <= level.rank and p.src in declared and p.dst in declared)
    if not transfers:
        transfers = (("DEVICE", "DEVICE"),) if "DEVICE" in declared else ((sorted(declared)[0],) * 2,)  # type: ignore[assignment]

    def pair(b: Any) -> tuple[int, int]:
        return b.min, b.max

    return Domain(tuple(dtypes), dtypes, transfers, pair(gen.rank), pair(gen.batch), pair(gen.layers),
                  pair(gen.tensors), pair(gen.tensor_bytes),
                  bool(caps.get("raw_memory")) and bool(caps.get("register_cache")),
                  "tensor_num_per_layer" in params)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def inner_shape(draw: Any, dom: Domain, batch: int, itemsize: int) -> tuple[int, ...]:
    """Dimensions after the batch one, within the byte bound (a rank-1 shape has none)."""
    rank = draw(st.integers(*dom.rank), label="rank")
    dims = [draw(st.integers(1, 6), label="dim") for _ in range(rank - 1)]
    budget = max(1, dom.tensor_bytes[1] // (batch * itemsize))
    while dims and math.prod(dims) > budget:
        dims[dims.index(max(dims))] = max(1, max(dims) // 2)
    return tuple(dims)


def reshape(draw: Any, dims: tuple[int, ...], dom: Domain) -> tuple[int, ...]:
    """The same number of elements in another shape (the destination need not have the source's shape)."""
    n = math.prod(dims)
    how = draw(st.sampled_from(["same", "flat", "split"]), label="dst inner shape")
    if how == "flat" and dims:
        return (n,)
    if how == "split" and n > 1:
        d = draw(st.sampled_from([d for d in divisors(n) if d > 1]), label="split")
        return (d, n // d) if dom.rank[1] >= 3 else (n,)
    return dims


def tensor_count(draw: Any, dom: Domain, min_tensors: int = 1) -> tuple[int, int]:
    """A tensor count in the bounds and a ``tensor_num_per_layer`` dividing it into a layer count in the bounds
    (releases without the parameter: two tensors per layer)."""
    if dom.has_tnpl:
        lo = max(dom.tensors[0], min_tensors)
        total = draw(st.integers(lo, max(lo, dom.tensors[1])), label="num_tensors")
        tnpls = [d for d in divisors(total) if dom.layers[0] <= total // d <= dom.layers[1]] or [total]
        return total, draw(st.sampled_from(tnpls), label="tensor_num_per_layer")
    # releases without tensor_num_per_layer: one layer is two tensors; a rule that needs n tensors gets n layers
    return 2 * draw(st.integers(max(dom.layers[0], min_tensors), dom.layers[1]), label="layers"), 2


@st.composite
def cache_side(draw: Any, dom: Domain, data_type: str | None = None) -> tuple[Side, int]:
    """One cache as a layout's source side is drawn (every documented DataType unless ``data_type`` names one, a
    placement some transfer of the domain has, a tensor count and its tensor_num_per_layer, a batch size, inner
    dimensions), with its tensor_num_per_layer."""
    dtype = data_type or draw(st.sampled_from(dom.data_types), label="data_type")
    placement = draw(st.sampled_from(sorted({p for pair in dom.transfers for p in pair})), label="placement")
    total, tnpl = tensor_count(draw, dom)
    batch = draw(st.integers(*dom.batch), label="batch")
    inner = draw(inner_shape(dom, batch, dom.itemsize[dtype]))
    return Side(total, (batch, *inner), dtype, placement, False), tnpl


@st.composite
def layouts(draw: Any, dom: Domain, *, data_type: str | None = None, transfer: tuple[str, str] | None = None,
            dst_register: bool | None = None, min_tensors: int = 1, same_tensors: bool = False) -> Layout:
    """A valid push: every documented data type, ranks, batch sizes and batch indices anywhere in range, source and
    destination with their own batch counts and memory kind, every divisor of the tensor count as
    tensor_num_per_layer, the default or an explicit layer range (the same on both sides, as documented), and a
    destination with more layers than the source only with an explicit range."""
    dtype = data_type or draw(st.sampled_from(dom.data_types), label="data_type")
    itemsize = dom.itemsize[dtype]
    src_p, dst_p = transfer or draw(st.sampled_from(dom.transfers), label="transfer")
    total, tnpl = tensor_count(draw, dom, min_tensors)
    layers = total // tnpl
    src_batch = draw(st.integers(*dom.batch), label="src batch")
    dst_batch = draw(st.integers(*dom.batch), label="dst batch")
    inner = draw(inner_shape(dom, max(src_batch, dst_batch), itemsize))
    dst_inner = reshape(draw, inner, dom)
    rng: tuple[int, ...] | None = None
    if draw(st.booleans(), label="explicit layer range"):
        start = draw(st.integers(0, layers - 1), label="range start")
        rng = (start, draw(st.integers(start + 1, layers), label="range stop"))
    # a destination with more layers only with explicit ranges: with the default ones the documentation says
    # "all layers" and "the same value" on both sides, which a larger destination leaves open (a may clause)
    extra_layers = (0 if same_tensors or rng is None
                    else draw(st.sampled_from([0, 0, 1, 2]), label="extra dst layers"))
    dst_total = total + extra_layers * tnpl

    def reg(what: str) -> bool:
        return bool(draw(st.booleans(), label=f"{what} registered")) if dom.can_register else False

    src = Side(total, (src_batch, *inner), dtype, src_p, reg("src"))
    dst = Side(dst_total, (dst_batch, *dst_inner), dtype, dst_p,
               dom.can_register and dst_register if dst_register is not None else reg("dst"))
    return Layout(src, dst, tnpl, draw(st.integers(0, src_batch - 1), label="src_batch_index"),
                  draw(st.integers(0, dst_batch - 1), label="dst batch_index"), rng, rng,
                  seed=draw(st.integers(0, 2**16), label="data seed"))

"""One valid layout for a row of the setup covering array: caches whose rank, batch size, tensor and layer counts,
bytes per tensor, data types and way of being made take the row's partitions (the spec's generation bounds and
coverage dimensions), or None where no valid push has them all.

Every quantity comes from the spec (generation bounds, the DataType table's sizes, the baseline scenario for what
the row leaves free); the built layout is measured with the coverage module's own functions, so a row is accepted
only if the push really reaches what it asks for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..coverage import setup_inputs
from ..coverage.measure import _field_of
from ..inputs import strategies
from ..inputs.block_strategies import BlockLayout, BlockSide
from ..spec import CacheSpec, Spec
from ..spec.model import CoverageDimension

#: a row's layout: two batch caches, or two blocks caches where the spec's operation moves block lists
AnyLayout = strategies.Layout | BlockLayout

#: (req_id, model_id) of the one CacheKey a cache made ``allocate_with_keys`` binds to its entry 0, per side
KEYS = {"src": (1, 0), "dst": (2, 0)}


@dataclass(frozen=True)
class MadeSide(strategies.Side):
    """A drawn layout's cache with the way it is made (coverage/setup_inputs.py MADE_WAYS)."""

    made: str = "allocate"
    key: tuple[int, int] = (0, 0)

    def desc(self) -> CacheSpec:
        return CacheSpec(self.num_tensors, self.shape, self.data_type, self.placement,
                         register=self.made == "register",
                         cache_keys=(self.key,) if self.made == "allocate_with_keys" else ())


def buildable(spec: Spec, dim: CoverageDimension) -> bool:
    """Whether rows can set this dimension: the setup kinds, and a member of the caches' data type field."""
    return dim.kind in setup_inputs.KINDS or (dim.kind == "members" and _field_of(spec, str(dim.params["type"]))
                                              == "data_type")


class Builder:
    """Rows -> layouts for the clause ``level``'s domain on the run's backend."""

    def __init__(self, spec: Spec, dom: strategies.Domain, dims: Mapping[str, CoverageDimension], rule: str,
                 default_tnpl: int) -> None:
        self.spec, self.dom, self.dims, self.rule = spec, dom, dims, rule
        self.base_src = spec.scenario.src
        # the baseline call's tensor_num_per_layer where the release takes one, else the release's fixed layer
        given = getattr(spec.scenario.call.get("tensor_num_per_layer"), "value", None)
        self.base_tnpl = given if dom.has_tnpl and isinstance(given, int) and given > 0 else default_tnpl

    # ---------------------------------------------------------------------------------------- one row
    def realise(self, row: Mapping[str, str]) -> tuple[dict[str, list[str]], AnyLayout] | None:
        """What the first valid layout for ``row`` reaches, and that layout (None: no layout has ``row``)."""
        types = {side: row[n] for n, d in self.dims.items() if d.kind == "members" and n in row
                 for side in [str(d.params["side"])]}
        for src_t in [types["src"]] if "src" in types else self._type_order():
            for dst_t in [types["dst"]] if "dst" in types else self._partners(src_t):
                if (src_t == dst_t) != (self.rule == "same"):
                    continue
                layout = self._build(row, src_t, dst_t)
                if layout is None:
                    continue
                facts = self.facts(layout)
                if all(v in facts.get(n, ()) for n, v in row.items()):
                    return facts, layout
        return None

    def _type_order(self) -> list[str]:
        first = self.base_src.data_type
        return [first] + [t for t in self.dom.data_types if t != first]

    def _partners(self, src_t: str) -> list[str]:
        return [src_t] if self.rule == "same" else [t for t in self._type_order() if t != src_t]

    def _want(self, row: Mapping[str, str], kind: str, side: str, bound: str | None = None) -> str | None:
        for n, d in self.dims.items():
            if n in row and d.kind == kind and d.params.get("side") == side and d.params.get("bound", bound) == bound:
                return row[n]
        return None

    def _value(self, row: Mapping[str, str], bound: str, side: str, default: int) -> int:
        cls = self._want(row, "bounds", side, bound)
        if cls is None:
            return default
        b = getattr(self.spec.generation, bound)
        return {"minimum": b.min, "maximum": b.max}.get(cls, (b.min + b.max) // 2)

    def _entry_bytes(self, row: Mapping[str, str], batch: int, ranks: tuple[int, int], sizes: tuple[int, int]
                     ) -> int | None:
        """Bytes of one batch entry (equal on both sides): what a rank-1 side or an extreme tensor size forces."""
        need = {size for rank, size in zip(ranks, sizes, strict=True) if rank == 1}
        cls = self._want(row, "bounds", "src", "tensor_bytes")
        b = self.spec.generation.tensor_bytes if self.spec.generation is not None else None
        if b is not None and cls in ("minimum", "maximum"):
            total = b.min if cls == "minimum" else b.max
            if total % batch:
                return None
            need.add(total // batch)
        if len(need) > 1:
            return None
        if need:
            return need.pop()
        unit = math.lcm(*sizes)
        base = math.prod(self.base_src.shape[1:]) * self.dom.itemsize.get(self.base_src.data_type, 1)
        for e in [math.lcm(unit, base)] + [unit * 2 ** k for k in range(16)]:
            if cls != "interior" or b is None or b.min < batch * e < b.max:
                return e
        return None

    def _counts(self, row: Mapping[str, str]) -> tuple[int, int] | None:
        """The tensor count and tensor_num_per_layer for the row's tensors and layers (releases without the
        parameter: the release's fixed layer of default_tnpl tensors)."""
        tensors = self._value(row, "tensors", "src", 0) if self._want(row, "bounds", "src", "tensors") else None
        layers = self._value(row, "layers", "src", 0) if self._want(row, "bounds", "src", "layers") else None
        base_tnpl = self.base_tnpl
        if not self.dom.has_tnpl:
            total = tensors if tensors is not None else (layers or 1) * base_tnpl
            return (total, base_tnpl) if total % base_tnpl == 0 else None
        if tensors is None and layers is None:
            return self.base_src.num_tensors, base_tnpl
        if layers is None:
            assert tensors is not None
            return tensors, base_tnpl if tensors % base_tnpl == 0 else 1
        if tensors is None:  # the baseline's tensors per layer while the count stays in its bound, else one
            return (layers * base_tnpl, base_tnpl) if layers * base_tnpl <= self.dom.tensors[1] else (layers, 1)
        return (tensors, tensors // layers) if tensors % layers == 0 and tensors >= layers else None

    def _build(self, row: Mapping[str, str], src_t: str, dst_t: str) -> AnyLayout | None:
        sizes = (self.dom.itemsize[src_t], self.dom.itemsize[dst_t])
        batch = (self._value(row, "batch", "src", self.base_src.shape[0]),
                 self._value(row, "batch", "dst", self.base_src.shape[0]))
        ranks = (self._value(row, "rank", "src", len(self.base_src.shape)),
                 self._value(row, "rank", "dst", len(self.base_src.shape)))
        entry = self._entry_bytes(row, batch[0], ranks, sizes)
        counts = self._counts(row)
        if entry is None or counts is None or any(entry % s for s in sizes):
            return None
        total, tnpl = counts
        src_p, dst_p = self.dom.transfers[0]
        sides = []
        for side, t, size, b, rank, place in (("src", src_t, sizes[0], batch[0], ranks[0], src_p),
                                              ("dst", dst_t, sizes[1], batch[1], ranks[1], dst_p)):
            inner = entry // size
            if rank == 1 and inner != 1:
                return None
            shape = (b,) + ((inner,) + (1,) * (rank - 2) if rank >= 2 else ())
            made = self._want(row, "made", side) or ("allocate_blocks" if self.spec.operation.lists else "allocate")
            sides.append(MadeSide(total, shape, t, place, made == "register", made, KEYS[side]))
        if self.spec.operation.lists:  # blocks caches (a cache's batch is its block count): the last into the last
            src, dst = (BlockSide(m.num_tensors, m.shape, m.data_type, m.placement, m.made == "register_blocks")
                        for m in sides)
            return BlockLayout(src, dst, tnpl, (batch[0] - 1,), (batch[1] - 1,), False, None)
        return strategies.Layout(sides[0], sides[1], tnpl, batch[0] - 1, batch[1] - 1, None, None)

    # ---------------------------------------------------------------------------------------- measured
    def facts(self, layout: AnyLayout) -> dict[str, list[str]]:
        """Per dimension, what ``layout``'s push reaches (the coverage module's measurement of its caches)."""
        out: dict[str, list[str]] = {}
        for n, d in self.dims.items():
            side: Any = layout.src if d.params.get("side") == "src" else layout.dst
            if d.kind == "members":
                out[n] = [side.data_type]
            elif d.kind == "made":
                out[n] = [side.made]
            else:
                nbytes = math.prod(side.shape) * self.dom.itemsize[side.data_type]
                out[n] = setup_inputs.cache_classes(self.spec, d, side.shape, side.num_tensors, nbytes, layout.tnpl)
        return out

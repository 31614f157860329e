"""Hypothesis strategies for data-integrity properties: random cache layouts and push arguments."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

DTYPES = ("DT_FLOAT16", "DT_BF16", "DT_INT8", "DT_FLOAT", "DT_INT32", "DT_UINT8")


@dataclass(frozen=True)
class Layout:
    """Source and destination caches (same layer structure) and one push into them."""

    layers: int
    tnpl: int
    src_batch: int
    dst_batch: int
    inner: tuple[int, ...]  # shape after the batch dimension (the same on both sides)
    data_type: str
    src_placement: str
    dst_placement: str
    src_batch_index: int
    dst_batch_index: int
    layer_range: tuple[int, int] | None  # same range on both sides (the documented restriction); None = all
    seed: int

    @property
    def num_tensors(self) -> int:
        return self.layers * self.tnpl

    def scenario_override(self) -> dict[str, Any]:
        def desc(batch: int, placement: str) -> dict[str, Any]:
            return {"num_tensors": self.num_tensors, "shape": [batch, *self.inner],
                    "data_type": self.data_type, "placement": placement}

        return {"src": desc(self.src_batch, self.src_placement), "dst": desc(self.dst_batch, self.dst_placement),
                "link": True}

    def args(self) -> dict[str, Any]:
        rng = None if self.layer_range is None else {"range": list(self.layer_range)}
        return {
            "dst_cache_key": {"key": "CacheKeyByIdAndIndex", "cluster": "remote", "cache": "dst",
                              "batch": self.dst_batch_index},
            "src_batch_index": self.src_batch_index,
            "src_layer_range": rng,
            "dst_layer_range": rng,
            "size": -1,
            "tensor_num_per_layer": self.tnpl,
        }


@st.composite
def layouts(
    draw: Any,
    placements: Sequence[str] = ("DEVICE",),
    dtypes: Sequence[str] = DTYPES,
    max_layers: int = 16,
    tnpl_range: tuple[int, int] = (1, 4),
) -> Layout:
    layers = draw(st.integers(1, max_layers), label="layers")
    tnpl = draw(st.integers(*tnpl_range), label="tensor_num_per_layer")
    src_batch = draw(st.integers(1, 4), label="src batch size")
    dst_batch = draw(st.integers(1, 4), label="dst batch size")
    inner = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=2), label="inner shape"))
    data_type = draw(st.sampled_from(list(dtypes)), label="data_type")
    src_placement = draw(st.sampled_from(list(placements)), label="src placement")
    dst_placement = draw(st.sampled_from(list(placements)), label="dst placement")
    src_bi = draw(st.integers(0, src_batch - 1), label="src_batch_index")
    dst_bi = draw(st.integers(0, dst_batch - 1), label="dst batch_index")
    layer_range = None
    if draw(st.booleans(), label="explicit layer range"):
        start = draw(st.integers(0, layers - 1), label="range start")
        stop = draw(st.integers(start + 1, layers), label="range stop")
        layer_range = (start, stop)
    seed = draw(st.integers(0, 2**16), label="data seed")
    return Layout(layers, tnpl, src_batch, dst_batch, inner, data_type, src_placement, dst_placement,
                  src_bi, dst_bi, layer_range, seed)

"""Invalid inputs generated from the spec's restrictions.

Each rule named in a clause's ``generate.rules`` (a schema enum) is a registered function that takes a drawn
valid :class:`~conformance_tests.inputs.strategies.Layout` and breaks exactly one restriction of it — on the source
range, the destination range or both where the rule is about layer ranges — keeping everything else valid.
Rules belong to a parameter group, so that pairs of violations combine two different parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

from .strategies import Layout

Apply = Callable[[Any, Layout, str], Layout]


@dataclass(frozen=True)
class Rule:
    name: str
    group: str  # the parameter it breaks; pairs combine rules of different groups
    order: int  # application order in a pair (a rule that changes the layer count comes first)
    apply: Apply
    min_tensors: int = 1  # the layout must have at least this many tensors for the rule to apply


RULES: dict[str, Rule] = {}


def rule(name: str, group: str, order: int, min_tensors: int = 1) -> Callable[[Apply], Apply]:
    def deco(fn: Apply) -> Apply:
        RULES[name] = Rule(name, group, order, fn, min_tensors)
        return fn
    return deco


def _layers(lay: Layout) -> int:
    return lay.src.num_tensors // lay.tnpl if lay.tnpl > 0 else 0


def _valid_range(draw: Any, layers: int, length: int) -> tuple[int, int]:
    """A valid range of ``length`` layers (as valid as possible when the cache has fewer layers)."""
    if length > layers or layers <= 0:
        return (0, max(length, 1))
    start = draw(st.integers(0, layers - length), label="valid start")
    return (start, start + length)


def _set(lay: Layout, side: str, bad: tuple[int, ...], draw: Any) -> Layout:
    """Put ``bad`` on ``side`` ("src", "dst" or "both"); the other side gets a valid range of the same length."""
    length = len(range(*bad))
    good = _valid_range(draw, _layers(lay), max(length, 1)) if length else (0, 1)
    src = bad if side in ("src", "both") else good
    dst = bad if side in ("dst", "both") else good
    return replace(lay, src_range=src, dst_range=dst, notes=(*lay.notes, f"{side} range {bad}"))


@rule("range_step", "layer_range", 3)
def _range_step(draw: Any, lay: Layout, side: str) -> Layout:
    layers = max(_layers(lay), 1)
    step = draw(st.sampled_from([2, 3, -1]), label="bad step")
    if step > 0:
        start = draw(st.integers(0, layers - 1), label="start")
        bad = (start, draw(st.integers(start + 1, start + 2 * step), label="stop"), step)
    else:
        start = draw(st.integers(0, layers - 1), label="start")
        bad = (start, draw(st.integers(-1, start - 1), label="stop"), -1)
    return _set(lay, side, bad, draw)


@rule("range_negative_start", "layer_range", 3)
def _range_negative_start(draw: Any, lay: Layout, side: str) -> Layout:
    start = -draw(st.integers(1, 3), label="negative start")
    return _set(lay, side, (start, draw(st.integers(start + 1, max(start + 1, _layers(lay))), label="stop")), draw)


@rule("range_empty", "layer_range", 3)
def _range_empty(draw: Any, lay: Layout, side: str) -> Layout:
    start = draw(st.integers(0, max(_layers(lay), 1)), label="start")
    return _set(lay, side, (start, draw(st.integers(max(0, start - 2), start), label="stop <= start")), draw)


@rule("range_past_end", "layer_range", 3)
def _range_past_end(draw: Any, lay: Layout, side: str) -> Layout:
    """The same range on both sides (as documented), past the end of one cache: on one side only, the other
    cache has more layers, so that its side of the range is valid."""
    layers = _layers(lay)
    over = draw(st.integers(1, 3), label="past the end by")
    stop = layers + over
    bad = (draw(st.integers(0, stop - 1), label="start"), stop)
    if side in ("src", "dst"):
        longer = "dst" if side == "src" else "src"
        grown = replace(getattr(lay, longer), num_tensors=(layers + over) * lay.tnpl)
        lay = replace(lay, **{longer: grown})
    return replace(lay, src_range=bad, dst_range=bad, notes=(*lay.notes, f"range {bad} past the {side} end"))


@rule("ranges_length_differ", "layer_range", 3, min_tensors=2)
def _ranges_length_differ(draw: Any, lay: Layout, side: str) -> Layout:
    lay = _two_layers(lay)
    layers = _layers(lay)
    if draw(st.booleans(), label="one side default"):
        explicit = (0, draw(st.integers(1, layers - 1), label="explicit stop"))  # shorter than the default
        src, dst = (explicit, None) if side == "src" else (None, explicit)
    else:
        long = draw(st.integers(2, layers), label="longer")
        short = draw(st.integers(1, long - 1), label="shorter")
        src, dst = ((0, long), (0, short)) if side == "src" else ((0, short), (0, long))
    return replace(lay, src_range=src, dst_range=dst, notes=(*lay.notes, f"ranges {src} vs {dst}"))


def _two_layers(lay: Layout) -> Layout:
    """At least two layers (one tensor per layer divides any count), so that two ranges can differ."""
    return lay if _layers(lay) >= 2 else replace(lay, tnpl=1)


@rule("ranges_shifted", "layer_range", 3, min_tensors=2)
def _ranges_shifted(draw: Any, lay: Layout, side: str) -> Layout:
    lay = _two_layers(lay)
    layers = _layers(lay)
    length = draw(st.integers(1, max(1, layers - 1)), label="length")
    a = draw(st.integers(0, layers - length), label="src start")
    b = draw(st.integers(0, layers - length).filter(lambda x: x != a), label="dst start")
    return replace(lay, src_range=(a, a + length), dst_range=(b, b + length),
                   notes=(*lay.notes, f"shifted ranges {(a, a + length)} -> {(b, b + length)}"))


@rule("src_batch_past_end", "src_batch_index", 2)
def _src_batch_past_end(draw: Any, lay: Layout, side: str) -> Layout:
    b = lay.src.shape[0]
    bad = draw(st.one_of(st.integers(b, b + 8), st.just(2**32 - 1)), label="src_batch_index")
    return replace(lay, src_batch_index=bad, notes=(*lay.notes, f"src_batch_index {bad} of {b}"))


@rule("dst_batch_past_end", "dst_batch_index", 2)
def _dst_batch_past_end(draw: Any, lay: Layout, side: str) -> Layout:
    b = lay.dst.shape[0]
    top = max(b, lay.src.shape[0]) + 2  # often between the remote and the local batch size
    bad = draw(st.integers(b, top), label="dst batch_index")
    return replace(lay, dst_batch_index=bad, notes=(*lay.notes, f"dst batch_index {bad} of {b}"))


@rule("tnpl_not_divisor", "tensor_num_per_layer", 1, min_tensors=3)
def _tnpl_not_divisor(draw: Any, lay: Layout, side: str) -> Layout:
    total = lay.src.num_tensors
    bad = draw(st.sampled_from([t for t in range(2, total) if total % t]), label="tensor_num_per_layer")
    rng = (0, 1)  # the documentation's divisor rule applies with explicit ranges
    return replace(lay, tnpl=bad, src_range=rng, dst_range=rng, notes=(*lay.notes, f"tnpl {bad} of {total} tensors"))


@rule("tnpl_above_total", "tensor_num_per_layer", 1)
def _tnpl_above_total(draw: Any, lay: Layout, side: str) -> Layout:
    total = lay.src.num_tensors
    bad = draw(st.integers(total + 1, total + 8), label="tensor_num_per_layer")
    rng = draw(st.sampled_from([None, (0, 1)]), label="ranges")
    return replace(lay, tnpl=bad, src_range=rng, dst_range=rng, notes=(*lay.notes, f"tnpl {bad} > {total} tensors"))


@rule("size_not_default", "size", 2)
def _size_not_default(draw: Any, lay: Layout, side: str) -> Layout:
    bad = draw(st.one_of(st.sampled_from([0, -2, 1]), st.integers(2, 2**20), st.integers(-2**20, -2)), label="size")
    return replace(lay, size=bad, notes=(*lay.notes, f"size {bad}"))


@rule("src_entry_larger", "entry", 0)
def _src_entry_larger(draw: Any, lay: Layout, side: str) -> Layout:
    inner = lay.src.shape[1:] or (1,)
    grow = draw(st.integers(1, 3), label="extra elements per entry")
    flat = 1
    for d in inner:
        flat *= d
    src = replace(lay.src, shape=(lay.src.shape[0], flat + grow))
    dst = replace(lay.dst, shape=(lay.dst.shape[0], flat))
    return replace(lay, src=src, dst=dst, notes=(*lay.notes, f"src entry {flat + grow} > dst entry {flat} elements"))


def applicable_sides(rule_name: str, sides: list[str] | None) -> list[str]:
    """Layer-range rules run once per side named; the others once."""
    return list(sides or ["both"]) if RULES[rule_name].group == "layer_range" else ["-"]

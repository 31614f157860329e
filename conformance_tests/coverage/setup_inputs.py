"""The setup operations' inputs as coverage dimensions: ``bounds`` (a cache's rank, batch size, tensor and layer
counts and bytes per tensor, classed against the spec's own ``generation`` bound) and ``made`` (how the testbed
made a cache: allocate_cache without or with cache_keys, or alloc_memory + register_cache; a blocks cache by
allocate_blocks_cache, or alloc_memory + register_blocks_cache).

The values are read from what the kit built (the caches' shapes and counts, the call's tensor_num_per_layer), never
from the backend's answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..backend import capability_supported
from ..spec import Spec
from ..spec.model import Bounds, CoverageDimension

#: the kinds this module derives and measures
KINDS = ("bounds", "made")
#: the classes of a bounded quantity, in the order the report lists them
CLASSES = ("minimum", "interior", "maximum")
#: the ways the testbed makes a cache (conformance_tests/testbed/testbed.py make_cache records one in CacheInfo.made)
MADE_WAYS = ("allocate", "allocate_with_keys", "register", "allocate_blocks", "register_blocks")


def bound_of(spec: Spec, dim: CoverageDimension) -> Bounds:
    gen = spec.generation
    bound = getattr(gen, str(dim.params["bound"]), None) if gen is not None else None
    if not isinstance(bound, Bounds):
        raise ValueError(f"coverage dimension {dim.name}: the spec's generation section has no bound "
                         f"{dim.params['bound']!r}")
    return bound


def partitions(spec: Spec, signature: Any, dim: CoverageDimension) -> tuple[str, ...]:
    """A bound's classes (interior only where the bound leaves room for one), or the ways the spec lists; none in
    a release whose signature lacks the dimension's ``with_parameter``."""
    needed = dim.params.get("with_parameter")
    if needed is not None and needed not in {p.name for p in signature.declared}:
        return ()
    if dim.kind == "made":
        ways = tuple(dim.params["ways"])
        unknown = [w for w in ways if w not in MADE_WAYS]
        if unknown:
            raise ValueError(f"coverage dimension {dim.name}: unknown ways {unknown} (the testbed makes "
                             f"{list(MADE_WAYS)})")
        return ways
    b = bound_of(spec, dim)
    return tuple(c for c in CLASSES if c != "interior" or b.max - b.min >= 2)


def declared(dim: CoverageDimension, value: str, caps: Mapping[str, Any]) -> bool:
    """A way of making a cache is reachable on a backend that has every capability the spec lists for it."""
    if dim.kind != "made":
        return True
    return all(capability_supported(caps, c) for c in dim.params["ways"].get(value) or ())


def classes(value: int, bound: Bounds) -> list[str]:
    """The classes ``value`` falls in (none outside the bound: a value the generation rules never draw)."""
    if value < bound.min or value > bound.max:
        return []
    out = [c for c, hit in (("minimum", value == bound.min), ("maximum", value == bound.max)) if hit]
    return out or ["interior"]


def quantity(name: str, shape: Sequence[int], num_tensors: int, tensor_nbytes: int, tnpl: int | None) -> int | None:
    """The quantity a ``generation`` bound limits, of one cache (``tnpl``: the call's tensor_num_per_layer)."""
    if name == "rank":
        return len(shape)
    if name == "batch":
        return int(shape[0]) if shape else None
    if name == "tensors":
        return num_tensors
    if name == "layers":
        return num_tensors // tnpl if tnpl else None
    if name == "tensor_bytes":
        return tensor_nbytes
    return None


def cache_classes(spec: Spec, dim: CoverageDimension, shape: Sequence[int], num_tensors: int, tensor_nbytes: int,
                  tnpl: int | None) -> list[str]:
    """The classes one cache of ``shape``, ``num_tensors`` and ``tensor_nbytes`` bytes per tensor reaches in the
    bounds dimension ``dim``."""
    value = quantity(str(dim.params["bound"]), shape, num_tensors, tensor_nbytes, tnpl)
    return classes(value, bound_of(spec, dim)) if value is not None else []


def default_tnpl(signature: Any) -> int:
    """tensor_num_per_layer when a call leaves it out (as RunContext.default_tnpl: releases without the
    parameter count two tensors per layer, facts §8)."""
    default = signature.default("tensor_num_per_layer")
    return default if isinstance(default, int) else 2


def call_tnpl(signature: Any, call: Any) -> int | None:
    value = call.raw().get("tensor_num_per_layer", default_tnpl(signature))
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def facts(spec: Spec, signature: Any, dim: CoverageDimension, call: Any, sides: Mapping[str, Any]) -> list[str]:
    """What one push reached of a bounds or made dimension (``sides``: the testbed's CacheInfo per side)."""
    side = sides.get(str(dim.params["side"]))
    if side is None:
        return []
    if dim.kind == "made":
        made = getattr(side, "made", "")
        return [made] if made in dim.params["ways"] else []
    shape = getattr(side, "shape", None)
    if shape is None:
        return []
    return cache_classes(spec, dim, shape, side.num_tensors, side.nbytes, call_tnpl(signature, call))

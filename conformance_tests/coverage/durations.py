"""Durations as a domain: an injected delay over its node's llm.SyncKvCacheWaitTime, in the classes the spec's
``generation.histories.delays`` gives (``budget_fractions`` dimensions), and past the budget."""

from __future__ import annotations

from ..spec import Spec
from ..spec.model import Delays
from .keys import PAST, key

#: the dimension kind whose partitions these are
KIND = "budget_fractions"


def delays_of(spec: Spec) -> Delays | None:
    gen = spec.generation
    return gen.histories.delays if gen is not None and gen.histories is not None else None


def partitions(spec: Spec) -> tuple[str, ...]:
    """The within classes in the spec's order, then past."""
    delays = delays_of(spec)
    return tuple(c.name for c in delays.within) + (PAST,) if delays is not None else (PAST,)


def fraction_class(spec: Spec, fraction: float) -> str:
    """The partition a delay of ``fraction`` of its budget falls in."""
    delays = delays_of(spec)
    found = delays.class_of(fraction) if delays is not None else None
    return found if found is not None else PAST


def delay_keys(spec: Spec, fraction: float) -> set[str]:
    """The keys one delayed push reached: its class in every budget_fractions dimension."""
    cov = spec.coverage
    if cov is None:
        return set()
    value = fraction_class(spec, fraction)
    return {key(name, value) for name, dim in cov.dimensions.items() if dim.kind == KIND}

"""The memory-safety watch of a testbed: its guard bands and freed regions, read and compared with what they held.

Every guard band around every tensor of every registered cache (live or freed) must still hold the guard byte,
and memory freed since a snapshot must still hold what it held then, on every node still alive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..backend import call_each
from ..judging.differences import Difference, Where
from ..judging.oracle import diff
from .cache_making import GUARD
from .errors import HarnessError, describe_exception

if TYPE_CHECKING:
    from .testbed import Span, Testbed

T = TypeVar("T")


def by_node(items: Iterable[T], node_of: Callable[[T], str]) -> dict[str, list[T]]:
    """``items`` grouped by their node, each group in the order given."""
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(node_of(item), []).append(item)
    return groups


class MemoryWatch:
    """The guard bands and freed regions of ``bed``.  ``span`` is testbed.py's Span record, given rather than
    imported: the testbed imports this module, and the kit's imports form no circle."""

    def __init__(self, bed: Testbed, span: type[Span]) -> None:
        self.bed = bed
        self.span = span

    def guard_violations(self) -> list[Difference]:
        """Guard bands (around every tensor of every registered cache, live or freed) that changed."""
        return self.check_spans(self.guard_spans())

    def freed_violations(self) -> list[Difference]:
        """Freed memory (watched since it was freed) that changed."""
        return self.check_spans(self.freed_spans())

    def memory_violations(self) -> list[Difference]:
        """Guard bands and freed memory that changed, read together (one request per node)."""
        return self.check_spans(self.guard_spans() + self.freed_spans())

    def watch_freed(self) -> None:
        """Snapshot the freed regions now (a cache allocated since may have reused them)."""
        freed = self.bed.freed
        spans = [(f, a) for f in freed for a in f.addrs]
        for f in freed:
            f.before = []
        for node_name, group in by_node(spans, lambda fa: fa[0].info.node_name).items():
            for (f, _), got in zip(group, self.read_many(node_name, [(a, f.info.nbytes) for f, a in group]),
                                   strict=True):
                f.before.append(got)

    def guard_spans(self) -> list[Span]:
        bed = self.bed
        spans: list[Span] = []
        infos = list(bed.caches.values()) + [f.info for f in bed.freed]
        for info in infos:
            if info.node_name in bed.dead or (bed.focus is not None and info.name not in bed.focus):
                continue
            if info.region is None or not info.guarded:
                continue
            base, total = info.region
            guarded = info.guarded
            # every byte of the region outside the tensors is a guard byte: before the lowest tensor, between two
            # tensors in address order (the gaps may differ, the order need not be the tensors'), after the highest;
            # the bands alone are read, not the tensors between them
            order = sorted(range(len(guarded)), key=lambda t: guarded[t])
            starts = [guarded[t] - base for t in order]
            bands = [(f"before {info.name} tensor {order[0]}", 0, starts[0])]
            bands += [(f"between {info.name} tensors {order[i - 1]} and {order[i]}", starts[i - 1] + info.nbytes,
                       starts[i]) for i in range(1, len(starts))]
            bands.append((f"after {info.name} tensor {order[-1]}", starts[-1] + info.nbytes, total))
            spans += [self.span(info.node_name, base + lo, hi - lo, where, None) for where, lo, hi in bands if hi > lo]
        return spans

    def freed_spans(self) -> list[Span]:
        bed = self.bed
        if bed.focus is not None:
            return []
        return [self.span(f.info.node_name, a, f.info.nbytes, f"freed memory of {f.info.name}", f)
                for f in bed.freed if f.before and f.info.node_name not in bed.dead for a in f.addrs]

    def check_spans(self, spans: Sequence[Span]) -> list[Difference]:
        """Read every span (one request per node) and compare it: a guard band with the guard byte, freed memory
        with what it held when it was freed."""
        out: list[Difference] = []
        freed_now: dict[int, list[np.ndarray]] = {}
        for node_name, group in by_node(spans, lambda sp: sp.node_name).items():
            for sp, got in zip(group, self.read_many(node_name, [(sp.addr, sp.nbytes) for sp in group]),
                               strict=True):
                if sp.freed is None:
                    bad = np.flatnonzero(got != GUARD)
                    if bad.size:
                        out.append(Difference(Where.GUARD, f"guard bytes {sp.where} changed: {bad.size} of "
                                              f"{sp.nbytes} bytes, first at guard offset {int(bad[0])} "
                                              f"({GUARD:#04x} -> {int(got[bad[0]]):#04x})"))
                else:
                    freed_now.setdefault(id(sp.freed), []).append(got)
        for f in self.bed.freed:
            if id(f) in freed_now:
                out += diff(f.before, freed_now[id(f)], f"freed memory of {f.info.name}", where=Where.FREED)
        return out

    def read_many(self, node_name: str, spans: Sequence[tuple[int, int]]) -> list[np.ndarray]:
        """``read_memory`` of every (address, bytes) span, in one request where the node batches them."""
        if not spans:
            return []
        try:
            got = call_each(self.bed.node(node_name), "read_memory", [(a, n) for a, n in spans])
            return [np.asarray(g, dtype=np.uint8).ravel() for g in got]
        except Exception as exc:
            raise HarnessError(f"{node_name}.read_memory", describe_exception(exc)) from exc

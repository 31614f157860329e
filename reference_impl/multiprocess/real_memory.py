"""Node memory at real addresses of the node process, for the reference behind the vendor API.

The in-process reference simulates addresses (``reference_impl.memory``): nothing outside the model can
dereference them. Behind the vendor API (``reference_impl.multiprocess.datadist``) the node host reads and
writes a node's memory by the addresses in ``Cache.tensor_addrs``, and registers memory it allocated itself
(``register_cache`` with its addresses), as a user of the real package does. So here a segment's base is the
real address of its numpy buffer, and memory the reference did not allocate is adopted when it is registered:
the reference then trusts the caller's addresses, as the vendor does (facts §2 register_cache checks only
that an address is not 0). Every segment is handed to ``on_segment`` (the node's NIXL agent registers it).
"""

from __future__ import annotations

import bisect
import ctypes
from collections.abc import Callable

import numpy as np

from ..cache_manager import CacheManager
from ..engine import NodeEngine
from ..enums import LLMRole, Placement
from ..fabric import Fabric
from ..llm_datadist import LLMDataDist
from ..memory import MemorySpace, NodeMemory, Segment
from ..options import EngineOptions

OnSegment = Callable[[int, int], None]
#: where new segments' memory comes from: ``arena(nbytes)`` gives a zeroed buffer that is registered already (the
#: node's arenas, reused from cluster to cluster), or None (a new buffer, registered through ``on_segment``)
Arena = Callable[[int], np.ndarray]


class RealMemorySpace(MemorySpace):
    """A MemorySpace whose segments sit at their real addresses (kept sorted by base for ``find``)."""

    def __init__(self, placement: Placement, on_segment: OnSegment, arena: Arena | None = None) -> None:
        super().__init__(placement, base=0, span=1 << 64)
        self._on_segment = on_segment
        self._arena = arena

    def _insert(self, seg: Segment) -> Segment:
        with self._lock:
            i = bisect.bisect_right(self._bases, seg.base)
            self._bases = self._bases[:i] + (seg.base,) + self._bases[i:]
            self._segments = self._segments[:i] + (seg,) + self._segments[i:]
        self._on_segment(seg.base, seg.data.size)
        return seg

    def allocate_segment(self, nbytes: int) -> Segment:
        if nbytes <= 0:
            raise ValueError(f"segment size must be > 0, got {nbytes}")
        data = self._arena(int(nbytes)) if self._arena is not None else np.zeros(int(nbytes), dtype=np.uint8)
        return self._insert(Segment(int(data.ctypes.data), data))

    def adopt(self, addr: int, nbytes: int) -> None:
        """Memory this process owns elsewhere (the caller vouches for it): a segment over it, not a copy."""
        if self.contains(addr, nbytes):
            return
        data = np.ctypeslib.as_array((ctypes.c_uint8 * int(nbytes)).from_address(int(addr)))
        self._insert(Segment(int(addr), data))


class RealNodeMemory(NodeMemory):
    def __init__(self, on_segment: OnSegment, arena: Arena | None = None) -> None:  # noqa: D107 - no simulated slot
        self.device = RealMemorySpace(Placement.DEVICE, on_segment, arena)
        self.host = RealMemorySpace(Placement.HOST, on_segment, arena)


class RealNodeEngine(NodeEngine):
    """NodeEngine whose memory and pools are real process memory."""

    def __init__(self, fabric: Fabric, cluster_id: int, role: LLMRole, slot: int, options: object,
                 on_segment: OnSegment, arena: Arena | None = None) -> None:
        self._on_segment, self._arena = on_segment, arena  # before the base class makes the memory and pools
        super().__init__(fabric, cluster_id, role, slot, options)  # type: ignore[arg-type]

    def _make_memory(self, slot: int) -> NodeMemory:
        return RealNodeMemory(self._on_segment, self._arena)


class RealMemoryLLMDataDist(LLMDataDist):
    """The reference LLMDataDist on a RealNodeEngine (its own Fabric: links go over the control plane)."""

    def __init__(self, role: LLMRole, cluster_id: int, *, cache_manager_cls: type[CacheManager],
                 on_segment: OnSegment, arena: Arena | None = None) -> None:
        super().__init__(role, cluster_id, fabric=Fabric(), cache_manager_cls=cache_manager_cls)
        self._on_segment = on_segment
        self._arena = arena

    def _make_engine(self, fabric: Fabric, parsed: EngineOptions) -> NodeEngine:
        """``LLMDataDist.init`` with a RealNodeEngine: memory at real addresses, each segment reported."""
        return RealNodeEngine(fabric, self._cluster_id, self._role, fabric.new_slot(), parsed, self._on_segment,
                              self._arena)


def adopt_registered(engine: NodeEngine, placement: Placement, addrs: list[int], nbytes: int) -> None:
    """Before ``register_cache``: adopt each tensor's memory if the engine's memory is real."""
    space = engine.memory.space(placement)
    if isinstance(space, RealMemorySpace):
        for addr in addrs:
            if isinstance(addr, int) and addr > 0:
                space.adopt(addr, nbytes)

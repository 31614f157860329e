"""Simulated memory: address spaces made of numpy ``uint8`` segments.

Each node has one host and one device space. Segments get distinct, non-adjacent address ranges (a gap
separates them), so an address is valid only inside a segment and an access can never spill into a
neighbouring allocation.
"""

from __future__ import annotations

import bisect
import mmap
import threading
from dataclasses import dataclass

import numpy as np

from .enums import Placement

DEVICE_BASE = 0x1000_0000_0000
HOST_BASE = 0x7000_0000_0000
NODE_SPAN = 0x0010_0000_0000  # 64 GiB of address space per node and placement
SEGMENT_ALIGN = 1 << 21  # 2 MiB, like HCCS-registered device memory
SEGMENT_GAP = 1 << 16


#: segments from this size on are anonymous mappings: zero pages the kernel maps on first touch
MAPPED_FROM = 1 << 20


def _zeroed(nbytes: int) -> np.ndarray:
    """``nbytes`` zero bytes.  A large one is an anonymous mapping, so a pool costs nothing until its pages are
    used (np.zeros of a size the allocator recycles from its heap is a memset of all of it)."""
    if nbytes < MAPPED_FROM:
        return np.zeros(nbytes, dtype=np.uint8)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=np.uint8)


class AddressError(ValueError):
    """An address range that lies outside every segment of a space."""


@dataclass(frozen=True, slots=True)
class Segment:
    base: int
    data: np.ndarray  # 1-D uint8

    @property
    def end(self) -> int:
        return self.base + self.data.size


def _within(seg: Segment, addr: int, nbytes: int) -> np.ndarray:
    """The view of ``[addr, addr + nbytes)`` in ``seg``, which holds it."""
    off = addr - seg.base
    return seg.data[off:off + nbytes]


class MemorySpace:
    """One placement's memory on one node: segments allocated by a bump pointer, never reused."""

    def __init__(self, placement: Placement, base: int, span: int = NODE_SPAN) -> None:
        self.placement = placement
        self.base = base
        self.limit = base + span
        self._next = base
        self._lock = threading.Lock()
        self._bases: tuple[int, ...] = ()
        self._segments: tuple[Segment, ...] = ()

    def allocate_segment(self, nbytes: int) -> Segment:
        if nbytes <= 0:
            raise ValueError(f"segment size must be > 0, got {nbytes}")
        with self._lock:
            base = self._next
            end = base + nbytes
            if end > self.limit:
                raise AddressError(f"{self.placement.name} address space exhausted")
            seg = Segment(base, _zeroed(nbytes))
            self._next = -(-(end + SEGMENT_GAP) // SEGMENT_ALIGN) * SEGMENT_ALIGN
            self._bases = self._bases + (base,)
            self._segments = self._segments + (seg,)
        return seg

    def find(self, addr: int, nbytes: int) -> Segment | None:
        """The segment holding ``[addr, addr + nbytes)`` entirely, or None."""
        bases, segments = self._bases, self._segments
        i = bisect.bisect_right(bases, addr) - 1
        if i < 0:
            return None
        seg = segments[i]
        if nbytes < 0 or addr + nbytes > seg.end:
            return None
        return seg

    def contains(self, addr: int, nbytes: int) -> bool:
        return self.find(addr, nbytes) is not None

    def view(self, addr: int, nbytes: int) -> np.ndarray:
        """A writable uint8 view of ``[addr, addr + nbytes)``; AddressError if it is not inside one segment."""
        seg = self.find(addr, nbytes)
        if seg is None:
            raise AddressError(f"[{addr:#x}, +{nbytes}) is not inside {self.placement.name} memory")
        return _within(seg, addr, nbytes)

    def view_upto(self, addr: int, nbytes: int) -> np.ndarray:
        """A writable view of ``[addr, addr + nbytes)`` cut at the end of the segment holding ``addr``: what
        lies past a segment is not modelled memory (a gap), so bytes meant for it go nowhere. AddressError if
        ``addr`` itself is outside every segment."""
        seg = self.find(addr, 0)
        if seg is None or nbytes < 0:
            raise AddressError(f"{addr:#x} is not inside {self.placement.name} memory")
        off = addr - seg.base
        return seg.data[off:off + nbytes]

    def release_all(self) -> None:
        with self._lock:
            self._bases = ()
            self._segments = ()


class NodeMemory:
    """The host and device spaces of one node."""

    def __init__(self, slot: int) -> None:
        self.device = MemorySpace(Placement.DEVICE, DEVICE_BASE + slot * NODE_SPAN)
        self.host = MemorySpace(Placement.HOST, HOST_BASE + slot * NODE_SPAN)

    def space(self, placement: Placement) -> MemorySpace:
        return self.device if placement == Placement.DEVICE else self.host

    def view(self, addr: int, nbytes: int) -> np.ndarray:
        """A view in whichever space holds the address."""
        for space in (self.device, self.host):
            seg = space.find(addr, nbytes)  # once per space: every tensor the kit reads or writes comes here
            if seg is not None:
                return _within(seg, addr, nbytes)
        raise AddressError(f"[{addr:#x}, +{nbytes}) is not inside this node's memory")

    def view_upto(self, addr: int, nbytes: int) -> np.ndarray:
        """``MemorySpace.view_upto`` in whichever space holds ``addr``."""
        for space in (self.device, self.host):
            if space.contains(addr, 0):
                return space.view_upto(addr, nbytes)
        raise AddressError(f"{addr:#x} is not inside this node's memory")

    def release_all(self) -> None:
        self.device.release_all()
        self.host.release_all()

"""Node memory that the parent reads and writes without a round trip: shared memory mapped in both processes.

A judgement reads every byte the kit can see after every push, and a certification through the node host sent
1.9 GB of tensor bytes through the pipes, a request per node and step. Where a node process runs on the parent's
host, the memory the node host reads and writes by address (its own allocations for ``alloc_memory``, and the
reference's pool arenas) is made here instead of by numpy: each buffer is a ``memfd`` mapped in the node
(:class:`SharedHeap`), which the parent maps too, through ``/proc/<pid>/fd`` (:class:`SharedView`). Only bytes
are shared; what the memory means (which cache, which tensor) still comes from the node's replies.

Rules that keep a mapping from being stale:

* the node frees a shared buffer only in a reset (``free``), and a parent's view lives for one cluster (a
  :class:`SharedView` per node of a cluster), so no address the view maps can be freed and reused while it is used;
* a segment is named by its address, size, fd and inode; the parent maps the fd only when the inode and size it
  finds are the ones named (an fd number reused for another buffer is refused);
* whatever the view cannot serve (an address outside every segment, a process on another host, a dead node, a
  call the node would refuse) goes to the node as before, which answers it or raises what it raises.
"""

from __future__ import annotations

import bisect
import mmap
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

#: what a segment is on the wire: [address in the node, bytes, fd in the node, inode]
Segment = list[int]


class SharedHeap:
    """Zeroed buffers of a node process, each a memfd of its own that the parent can map."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, tuple[int, int, int]] = {}  # address -> (bytes, fd, inode)
        self._bases: list[int] = []  # the live buffers' addresses, sorted (``containing`` is a binary search)
        self._on_free: list[Callable[[int, int], None]] = []

    def on_free(self, hook: Callable[[int, int], None]) -> None:
        """``hook(address, bytes)`` runs before a buffer is freed (while it is still mapped): an implementation that
        registered it whole (with its transfer engine) deregisters it."""
        self._on_free.append(hook)

    @staticmethod
    def available() -> bool:
        return hasattr(os, "memfd_create")

    def alloc(self, nbytes: int) -> np.ndarray:
        """A zeroed uint8 buffer of ``nbytes`` (a memfd's pages are zero until written)."""
        fd = os.memfd_create("nodehost-shared", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, nbytes)
            buf = np.frombuffer(mmap.mmap(fd, nbytes), dtype=np.uint8)
        except BaseException:
            os.close(fd)
            raise
        addr = int(buf.ctypes.data)
        with self._lock:
            self._live[addr] = (int(nbytes), fd, os.fstat(fd).st_ino)
            bisect.insort(self._bases, addr)
        return buf

    def free(self, buf: np.ndarray) -> None:
        """Stop sharing ``buf`` (the pages go once every mapping of it, the parent's included, is gone)."""
        addr = int(buf.ctypes.data)
        with self._lock:
            got = self._live.pop(addr, None)
            if got is not None:
                del self._bases[bisect.bisect_left(self._bases, addr)]
        if got is not None:
            for hook in self._on_free:
                hook(addr, got[0])
            os.close(got[1])

    def segment_at(self, addr: int) -> Segment | None:
        """The segment of the buffer at ``addr`` (its start), if it is shared."""
        with self._lock:
            got = self._live.get(addr)
        return None if got is None else [addr, *got]

    def containing(self, addr: int, nbytes: int) -> tuple[int, int] | None:
        """(start, bytes) of the buffer holding all of ``[addr, addr + nbytes)``, if one does."""
        with self._lock:
            i = bisect.bisect_right(self._bases, addr) - 1
            if i < 0:
                return None
            base = self._bases[i]
            n = self._live[base][0]
        return (base, n) if addr + nbytes <= base + n else None

    def segments(self) -> list[Segment]:
        with self._lock:
            return [[addr, n, fd, ino] for addr, (n, fd, ino) in sorted(self._live.items())]


_HEAP: SharedHeap | None = None
_HEAP_LOCK = threading.Lock()


def heap() -> SharedHeap | None:
    """This process's heap (None where memfd is not available: buffers are then numpy's own)."""
    global _HEAP
    with _HEAP_LOCK:
        if _HEAP is None and SharedHeap.available():
            _HEAP = SharedHeap()
        return _HEAP


def zeros(nbytes: int) -> np.ndarray:
    """A zeroed buffer of this process's heap, or numpy's where there is none."""
    h = heap()
    return h.alloc(nbytes) if h is not None else np.zeros(nbytes, dtype=np.uint8)


def free(buf: np.ndarray) -> None:
    h = heap()
    if h is not None:
        h.free(buf)


def clear(buf: np.ndarray) -> None:
    """Zero ``buf`` again: a shared buffer's pages are given back (they read as zero, and cost nothing until
    written), another buffer is filled with zeros."""
    base = getattr(buf.base, "obj", buf.base)  # np.frombuffer's base is a memoryview of the mapping
    if isinstance(base, mmap.mmap) and len(base) == buf.size and hasattr(mmap, "MADV_REMOVE"):
        try:
            base.madvise(mmap.MADV_REMOVE)
            return
        except OSError:
            pass
    buf[:] = 0


class SharedView:
    """The parent's mappings of one node process's segments, for one cluster: bytes by the node's addresses.

    ``update(segments)`` takes the node's list; a segment is mapped the first time an access falls in it.
    ``span(addr, nbytes)`` is a writable view of those bytes, or None when no segment holds all of them."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._lock = threading.Lock()
        self._bases: list[int] = []
        self._ends: list[int] = []
        self._named: list[Segment] = []
        self._maps: dict[int, np.ndarray | None] = {}  # address -> the mapping (None: it could not be mapped)

    def update(self, segments: list[Any]) -> None:
        rows = sorted((list(s) for s in segments if _is_segment(s)), key=lambda s: s[0])
        with self._lock:
            self._named = rows
            self._bases = [s[0] for s in rows]
            self._ends = [s[0] + s[1] for s in rows]
            known = {s[0]: s for s in rows}
            self._maps = {a: m for a, m in self._maps.items() if a in known}

    def add(self, segment: Any) -> None:
        """One more segment of the node's (an allocation's reply names it)."""
        with self._lock:
            rows = [s for s in self._named if s[0] != (segment[0] if _is_segment(segment) else None)]
        self.update([*rows, segment])

    def span(self, addr: int, nbytes: int) -> np.ndarray | None:
        if type(addr) is not int or type(nbytes) is not int or addr <= 0 or nbytes < 0:
            return None
        with self._lock:
            i = bisect.bisect_right(self._bases, addr) - 1
            if i < 0 or addr + nbytes > self._ends[i]:
                return None
            seg = self._named[i]
            if seg[0] in self._maps:
                mapped = self._maps[seg[0]]
            else:
                mapped = self._maps[seg[0]] = self._map(seg)
        if mapped is None:
            return None
        off = addr - seg[0]
        return mapped[off:off + nbytes]

    def _map(self, seg: Segment) -> np.ndarray | None:
        addr, nbytes, fd, ino = seg
        try:
            own = os.open(f"/proc/{self.pid}/fd/{fd}", os.O_RDWR)
        except OSError:
            return None
        try:
            st = os.fstat(own)
            if st.st_ino != ino or st.st_size != nbytes:  # the fd number names another buffer now
                return None
            return np.frombuffer(mmap.mmap(own, nbytes), dtype=np.uint8)
        except (OSError, ValueError):
            return None
        finally:
            os.close(own)


def _is_segment(s: Any) -> bool:
    return (isinstance(s, (list, tuple)) and len(s) == 4 and all(type(v) is int for v in s) and s[0] > 0
            and s[1] > 0 and s[2] >= 0)

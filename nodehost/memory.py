"""Memory accessors: how the node host reads, writes and allocates a node's memory, by address.

The vendor API hands out memory only as addresses (``Cache.tensor_addrs``) and takes raw memory as addresses
(``register_cache(desc, addrs)``); it has no call to read or write it. So the host brings its own access, one
accessor per placement:

* :class:`HostMemory`: host memory of the node process, by address (``ctypes.memmove``); allocations are shared
  buffers (:mod:`nodehost.shared`: a parent on this host maps them) of power-of-two sizes, kept until
  ``release_all`` and then, one release later, served again zeroed or freed.
* :class:`AclDeviceMemory`: NPU memory through pyACL (``acl.rt.malloc`` / ``acl.rt.memcpy``) when ``acl`` imports;
  written from the CANN documentation of pyACL and not run here (no NPU on the project's machines).

Which accessor serves DEVICE placement is chosen by :func:`device_accessor`: ``acl`` when it imports; host
memory when the implementation says that its "device" memory is host memory (a CPU emulator); otherwise none,
and the backend then declares HOST placement only.
"""

from __future__ import annotations

import bisect
import ctypes
import importlib
import threading
from typing import Any, Protocol

import numpy as np

from . import shared

#: environment variable: "auto" (default), "acl", "host" or "none": who serves DEVICE memory
DEVICE_MEMORY_ENV = "NODEHOST_DEVICE_MEMORY"


class Intervals:
    """A set of addresses kept as sorted, disjoint [lo, hi) intervals (overlapping or touching ones merged): which
    memory is a placement's. ``covers`` is a binary search, so a batch of reads costs no more with every cache a long
    history allocates (a scan over every tensor's range did: 30 ms for 128 reads beside 30 caches)."""

    def __init__(self) -> None:
        self._lo: list[int] = []
        self._hi: list[int] = []

    def add(self, lo: int, hi: int) -> None:
        if hi <= lo:
            return
        # every interval that overlaps or touches [lo, hi) is merged into it
        first = bisect.bisect_left(self._hi, lo)
        last = bisect.bisect_right(self._lo, hi)
        if first < last:
            lo, hi = min(lo, self._lo[first]), max(hi, self._hi[last - 1])
        self._lo[first:last] = [lo]
        self._hi[first:last] = [hi]

    def covers(self, lo: int, hi: int) -> bool:
        """Whether every address of [lo, hi) is in the set (an empty span: whether ``lo`` is)."""
        i = bisect.bisect_right(self._lo, lo) - 1
        return i >= 0 and max(hi, lo + 1) <= self._hi[i]

    def clear(self) -> None:
        self._lo.clear()
        self._hi.clear()

    def __len__(self) -> int:
        return len(self._lo)


class MemoryAccessor(Protocol):
    kind: str

    def alloc(self, nbytes: int) -> int: ...

    def read(self, addr: int, nbytes: int) -> np.ndarray: ...

    def write(self, addr: int, data: np.ndarray) -> None: ...

    def release_all(self) -> None: ...


#: free buffers of one size class a node keeps between clusters
KEPT_PER_SIZE = 8


def _size_class(nbytes: int) -> int:
    """The size an allocation of ``nbytes`` is served with: a power of two (at least a page), so buffers serve
    again for the many sizes a certification asks for."""
    return max(4096, 1 << (nbytes - 1).bit_length())


class HostMemory:
    """Host memory of this process, by address."""

    kind = "host"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owned: dict[int, np.ndarray] = {}
        self._retired: dict[int, np.ndarray] = {}
        self._free: dict[int, list[np.ndarray]] = {}  # zeroed buffers of a size class, for the next allocations

    def alloc(self, nbytes: int) -> int:
        if int(nbytes) <= 0:
            raise ValueError(f"nbytes must be > 0, got {nbytes}")
        size = _size_class(int(nbytes))
        with self._lock:
            free = self._free.get(size)
            buf = free.pop() if free else None
        if buf is None:
            buf = shared.zeros(size)  # a parent on this host reads and writes it without a round trip
        addr = int(buf.ctypes.data)
        with self._lock:
            self._owned[addr] = buf
        return addr

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        if not addr:
            raise ValueError("address 0")
        return np.frombuffer(ctypes.string_at(int(addr), int(nbytes)), dtype=np.uint8).copy()

    def write(self, addr: int, data: np.ndarray) -> None:
        if not addr:
            raise ValueError("address 0")
        arr = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1)
        ctypes.memmove(int(addr), arr.ctypes.data, arr.size)

    def count(self) -> int:
        with self._lock:
            return len(self._owned)

    def release_all(self) -> None:
        """Give up every allocation. The buffers serve again (zeroed) or are freed one release later: a peer of the
        cluster that just ended may still have a transfer in flight into them, and they would be the next
        cluster's. Serving again keeps a buffer's address, so an implementation that registered it with its
        transfer engine need not register it again (nor tell its peers)."""
        with self._lock:
            gone, self._retired, self._owned = self._retired, self._owned, {}
        for buf in gone.values():
            with self._lock:
                room = len(self._free.get(buf.size, ())) < KEPT_PER_SIZE
            if not room:
                shared.free(buf)
                continue
            shared.clear(buf)
            with self._lock:
                self._free.setdefault(buf.size, []).append(buf)


class AclDeviceMemory:
    """NPU memory through pyACL (CANN). Every call runs in the device context made at construction."""

    kind = "acl"
    _HUGE_FIRST = 0  # ACL_MEM_MALLOC_HUGE_FIRST
    _H2D = 1  # ACL_MEMCPY_HOST_TO_DEVICE
    _D2H = 2  # ACL_MEMCPY_DEVICE_TO_HOST

    def __init__(self, acl: Any, device_id: int) -> None:
        self._acl = acl
        self._lock = threading.Lock()
        self._owned: list[int] = []
        self._check(acl.rt.set_device(device_id), "acl.rt.set_device")
        self._context, ret = acl.rt.get_context()
        self._check(ret, "acl.rt.get_context")

    @staticmethod
    def _check(ret: int, what: str) -> None:
        if ret != 0:
            raise RuntimeError(f"{what} failed with ACL error {ret}")

    def _enter(self) -> None:
        self._check(self._acl.rt.set_context(self._context), "acl.rt.set_context")

    def alloc(self, nbytes: int) -> int:
        self._enter()
        ptr, ret = self._acl.rt.malloc(int(nbytes), self._HUGE_FIRST)
        self._check(ret, "acl.rt.malloc")
        with self._lock:
            self._owned.append(ptr)
        return int(ptr)

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        self._enter()
        out = np.empty(int(nbytes), dtype=np.uint8)
        self._check(self._acl.rt.memcpy(out.ctypes.data, out.size, int(addr), out.size, self._D2H), "acl.rt.memcpy")
        return out

    def write(self, addr: int, data: np.ndarray) -> None:
        self._enter()
        arr = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1)
        self._check(self._acl.rt.memcpy(int(addr), arr.size, arr.ctypes.data, arr.size, self._H2D), "acl.rt.memcpy")

    def release_all(self) -> None:
        with self._lock:
            owned, self._owned = self._owned, []
        if owned:
            self._enter()
        for ptr in owned:
            self._acl.rt.free(ptr)


def acl_missing() -> str | None:
    """None when pyACL imports, else why not."""
    try:
        importlib.import_module("acl")
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return f"{type(exc).__name__}: {exc}"
    return None


def device_accessor_kind(policy: str, implementation_says_host: bool) -> str | None:
    """"acl", "host" or None (no DEVICE memory access) for a policy from NODEHOST_DEVICE_MEMORY."""
    policy = (policy or "auto").strip().lower()
    if policy not in ("auto", "acl", "host", "none"):
        raise ValueError(f"{DEVICE_MEMORY_ENV} must be auto, acl, host or none, got {policy!r}")
    if policy == "none":
        return None
    if policy == "host":
        return "host"
    if policy == "acl":
        return "acl"
    if implementation_says_host:
        return "host"
    return "acl" if acl_missing() is None else None


def make_device_accessor(kind: str | None, device_id: int, host: HostMemory) -> MemoryAccessor | None:
    if kind is None:
        return None
    if kind == "host":
        return host
    return AclDeviceMemory(importlib.import_module("acl"), device_id)

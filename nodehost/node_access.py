"""The protocol's node methods in the parent: each is a request to the node's process, or, where the node's memory
is shared with the parent (:mod:`nodehost.shared`), a copy from or into that memory with no request at all.

The shared path serves an access only when it gives what the node would: the node reads DEVICE memory as host
memory (else its DEVICE accesses go elsewhere, or are refused), the node is the cluster's and alive, a tensor is
one of this node's own caches with a valid index, every byte lies in one shared segment, and a write passes the
node's own checks. Anything else goes to the node, which answers or raises what it raises.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from datawire import WireError

from .shared import SharedView

#: the node methods a node process runs in a batch (``node_each``)
NODE_EACH = ("write_tensor", "read_tensor", "alloc_memory", "read_memory", "write_memory")
#: those whose results a node sends joined in one buffer (``node_read``: one array on the wire, not one per read)
JOINED_READS = ("read_tensor", "read_memory")


class ProcessNode:
    """The protocol's node methods, each forwarded to the node's process (``self.proc``); the backends add
    their own ``cache_manager`` and ``__repr__``, and ``shared`` where the node's memory is mapped here."""

    proc: Any
    #: the node's shared memory mapped in this process, or None (every access is a request); each allocation's
    #: reply names its segment (``node_alloc``)
    shared: SharedView | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return not self.proc.dead.is_set()

    # ---- the shared path --------------------------------------------------------------------------------
    def owns(self, cache: Any) -> bool:
        """Whether ``cache`` is one of this node's (its addresses are this node's); the backend says."""
        return False

    def _span(self, addr: Any, nbytes: Any) -> np.ndarray | None:
        view = self.shared
        if view is None or type(addr) is not int or type(nbytes) is not int or not self.proc.current \
                or self.proc.dead.is_set():
            return None
        return view.span(addr, nbytes)

    def _tensor_span(self, cache: Any, index: Any) -> np.ndarray | None:
        if self.shared is None or type(index) is not int or not self.owns(cache):
            return None
        addrs, size = cache.tensor_addrs, cache.cache_desc.size
        if not 0 <= index < len(addrs):
            return None
        return self._span(addrs[index], int(size))

    def _write_tensor_shared(self, cache: Any, index: Any, data: Any) -> bool:
        span = self._tensor_span(cache, index)
        if span is None:
            return False
        arr = np.asarray(data)
        if arr.dtype != np.uint8 or arr.size != span.size:  # the node refuses it: its error is the answer
            return False
        span[:] = arr.reshape(-1)
        return True

    def _read_tensor_shared(self, cache: Any, index: Any) -> np.ndarray | None:
        span = self._tensor_span(cache, index)
        return None if span is None else span.copy()

    def _read_memory_shared(self, addr: Any, nbytes: Any) -> np.ndarray | None:
        span = self._span(addr, nbytes)
        return None if span is None else span.copy()

    def _write_memory_shared(self, addr: Any, data: Any) -> bool:
        if self.shared is None:
            return False
        try:
            arr = np.asarray(data, dtype=np.uint8).reshape(-1)
        except (TypeError, ValueError):  # the node says what is wrong with it
            return False
        span = self._span(addr, int(arr.size))
        if span is None:
            return False
        span[:] = arr
        return True

    def _shared(self, method: str, args: Sequence[Any]) -> tuple[bool, Any]:
        """(served, result) of one call through shared memory; (False, None) when the node must serve it."""
        if len(args) == 2 and method == "read_tensor":
            got = self._read_tensor_shared(*args)
            return got is not None, got
        if len(args) == 2 and method == "read_memory":
            got = self._read_memory_shared(*args)
            return got is not None, got
        if len(args) == 3 and method == "write_tensor":
            return self._write_tensor_shared(*args), None
        if len(args) == 2 and method == "write_memory":
            return self._write_memory_shared(*args), None
        return False, None

    # ---- the protocol's methods -------------------------------------------------------------------------
    def write_tensor(self, cache: Any, index: int, data: np.ndarray) -> None:
        if not self._write_tensor_shared(cache, index, data):
            self.proc.call("node", "write_tensor", (cache, index, np.asarray(data)))

    def read_tensor(self, cache: Any, index: int) -> np.ndarray:
        got = self._read_tensor_shared(cache, index)
        return got if got is not None else self.proc.call("node", "read_tensor", (cache, index))

    def alloc_memory(self, placement: str, nbytes: int) -> int:
        return self._alloc([(placement, nbytes)])[0]

    def _alloc(self, calls: Sequence[Sequence[Any]]) -> list[int]:
        """``alloc_memory`` of each, in one request whose reply names each allocation's segment where it is shared
        (the view maps it at its first access)."""
        out = []
        for addr, segment in self.proc.call("node_alloc", list(calls)):
            if self.shared is not None and segment is not None:
                self.shared.add(segment)
            out.append(addr)
        return out

    def read_memory(self, addr: int, nbytes: int) -> np.ndarray:
        got = self._read_memory_shared(addr, nbytes)
        return got if got is not None else self.proc.call("node", "read_memory", (addr, nbytes))

    def write_memory(self, addr: int, data: np.ndarray) -> None:
        if not self._write_memory_shared(addr, data):
            self.proc.call("node", "write_memory", (addr, np.asarray(data)))

    def call_each(self, method: str, arg_lists: Sequence[Sequence[Any]]) -> list[Any]:
        """The kit's optional batch (conformance_tests.backend.BATCH_METHOD): ``method`` once per argument list, in
        order, stopping at the first exception; through shared memory while it serves the calls, and the rest in one
        request to the node's process."""
        if method not in NODE_EACH:
            raise ValueError(f"call_each: {method!r} is not one of {NODE_EACH}")
        calls = [tuple(args) for args in arg_lists]
        if method == "alloc_memory":
            return self._alloc(calls)
        out: list[Any] = []
        if self.shared is not None:
            for args in calls:
                served, result = self._shared(method, args)
                if not served:
                    break
                out.append(result)
        rest = calls[len(out):]
        if not rest:
            return out
        if method not in JOINED_READS:
            return out + list(self.proc.call("node_each", method, rest))
        sizes, data = self.proc.call("node_read", method, rest)
        if not (isinstance(sizes, list) and len(sizes) == len(rest) and all(type(n) is int and n >= 0 for n in sizes)
                and isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 1
                and sum(sizes) == data.size):
            raise WireError(f"call_each({method!r}): the node's joined reads are not one size per read and their bytes")
        ends = itertools.accumulate(sizes)
        return out + [data[end - n:end] for n, end in zip(sizes, ends, strict=True)]

    def inject(self, fault: Mapping[str, Any]) -> None:
        if not isinstance(fault, Mapping):
            raise TypeError(f"fault must be a mapping, got {type(fault).__name__}")
        if fault.get("kind") == "kill_node":
            self.proc.kill()
            return
        self.proc.call("node", "inject", (dict(fault),))

    def stats(self) -> dict[str, Any]:
        return self.proc.call("stats")

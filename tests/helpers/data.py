"""Bytes in a node's caches and raw memory, through any backend's node (``write_tensor``, ``read_memory``, ...)."""

from __future__ import annotations

from typing import Any

import numpy as np

#: what a destination holds before a push, so that a byte the push wrote (or failed to write) shows
SENTINEL = 0xA5
#: what fills ``GUARD_BYTES`` before and after each tensor of a ``guarded_cache``
GUARD = 0xCC
GUARD_BYTES = 64


def fill_random(node: Any, cache: Any, seed: int = 0) -> list[np.ndarray]:
    """Write random bytes into every tensor of ``cache``; returns what was written."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(cache.cache_desc.num_tensors):
        data = rng.integers(0, 256, cache.cache_desc.size, dtype=np.uint8)
        node.write_tensor(cache, t, data)
        out.append(data)
    return out


def fill_sentinel(node: Any, cache: Any) -> list[np.ndarray]:
    """Write SENTINEL into every byte of ``cache``; returns what was written."""
    out = []
    for t in range(cache.cache_desc.num_tensors):
        data = np.full(cache.cache_desc.size, SENTINEL, dtype=np.uint8)
        node.write_tensor(cache, t, data)
        out.append(data)
    return out


def snapshot(node: Any, cache: Any) -> list[np.ndarray]:
    """Every tensor of ``cache``, as bytes."""
    return [node.read_tensor(cache, t) for t in range(cache.cache_desc.num_tensors)]


def guarded_cache(node: Any, desc: Any) -> tuple[Any, list[int]]:
    """A cache registered in raw memory with GUARD bytes before and after every tensor; with its tensors'
    addresses."""
    nbytes = desc.size
    addrs = []
    for _ in range(desc.num_tensors):
        base = node.alloc_memory(desc.placement.name, nbytes + 2 * GUARD_BYTES)
        node.write_memory(base, np.full(nbytes + 2 * GUARD_BYTES, GUARD, dtype=np.uint8))
        addrs.append(base + GUARD_BYTES)
    return node.cache_manager.register_cache(desc, addrs, remote_accessible=True), addrs


def guards_intact(node: Any, addrs: list[int], nbytes: int) -> bool:
    """True when the guard bytes around each tensor of a ``guarded_cache`` (at ``addrs``) are all GUARD."""
    for a in addrs:
        for where in (a - GUARD_BYTES, a + nbytes):
            if not (node.read_memory(where, GUARD_BYTES) == GUARD).all():
                return False
    return True

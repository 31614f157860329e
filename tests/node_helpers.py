"""Helpers shared by the reference's in-process and multi-process self-tests (any backend Node/Cluster)."""

from __future__ import annotations

from typing import Any

import numpy as np


def fill_random(node: Any, cache: Any, seed: int = 0) -> list[np.ndarray]:
    """Write random bytes into every tensor of ``cache``; returns what was written."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(cache.cache_desc.num_tensors):
        data = rng.integers(0, 256, cache.cache_desc.size, dtype=np.uint8)
        node.write_tensor(cache, t, data)
        out.append(data)
    return out


def snapshot(node: Any, cache: Any) -> list[np.ndarray]:
    return [node.read_tensor(cache, t) for t in range(cache.cache_desc.num_tensors)]


def relink(cluster: Any, client: int = 1, server: int = 2) -> None:
    """Re-establish client -> server so the next push syncs the server's cache table afresh.

    A link syncs the remote cache table once, at its first transfer: caches the remote allocates or registers
    after that are invisible over the link (LLM_KV_CACHE_NOT_EXIST) until it is re-established.
    """
    cluster.unlink(client, server)
    cluster.link(client, server)

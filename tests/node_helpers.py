"""Helpers shared by the reference's in-process and multi-process self-tests (any backend Node/Cluster)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

NIXL_INSTALL = "pip install --no-deps nixl==1.5.1 nixl-cu12==1.5.1"


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


def skip_without_nixl(items: list[Any], folder: str, needs: str,
                      selected: Callable[[Any], bool] = lambda item: True) -> None:
    """Mark the ``selected`` tests under ``folder`` skipped, with the reason, when NIXL does not import
    (``needs``: what needs it)."""
    from reference_impl.multiprocess import nixl_available

    why = nixl_available()
    if why is None:
        return
    mark = pytest.mark.skip(reason=f"NIXL is not installed ({NIXL_INSTALL}); {needs} ({why})")
    for item in items:
        if str(item.fspath).startswith(folder) and selected(item):
            item.add_marker(mark)

"""Fixtures for the multi-process (NIXL) reference backend; every test here needs NIXL installed."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tests.node_helpers import fill_random, relink, skip_without_nixl, snapshot

TIMEOUT_MS = 300
SENTINEL = 0xA5
GUARD = 0xCC
GUARD_BYTES = 64


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    skip_without_nixl(items, os.path.dirname(__file__), "the multi-process backend needs it")


def pool(nbytes: int = 1 << 22) -> str:
    return json.dumps({"memory_size": nbytes, "page_shift": 16})


def node_options(timeout_ms: int = TIMEOUT_MS) -> dict[str, str]:
    return {
        "llm.EnableCacheManager": "1",
        "llm.EnableRemoteCacheAccessible": "1",
        "llm.MemPoolConfig": pool(),
        "llm.HostMemPoolConfig": pool(),
        "llm.SyncKvCacheWaitTime": str(timeout_ms),
    }


def specs(*ids: int, timeout_ms: int = TIMEOUT_MS) -> list[dict[str, Any]]:
    roles = {0: "PROMPT"}
    return [{"cluster_id": cid, "role": roles.get(i, "DECODER"), "options": node_options(timeout_ms)}
            for i, cid in enumerate(ids)]


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody waited for)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True




def fill_sentinel(node: Any, cache: Any) -> list[np.ndarray]:
    out = []
    for t in range(cache.cache_desc.num_tensors):
        data = np.full(cache.cache_desc.size, SENTINEL, dtype=np.uint8)
        node.write_tensor(cache, t, data)
        out.append(data)
    return out




def guarded_cache(node: Any, desc: Any) -> tuple[Any, list[int]]:
    """A cache registered in raw memory with GUARD bytes before and after every tensor."""
    nbytes = desc.size
    addrs = []
    for _ in range(desc.num_tensors):
        base = node.alloc_memory(desc.placement.name, nbytes + 2 * GUARD_BYTES)
        node.write_memory(base, np.full(nbytes + 2 * GUARD_BYTES, GUARD, dtype=np.uint8))
        addrs.append(base + GUARD_BYTES)
    return node.cache_manager.register_cache(desc, addrs, remote_accessible=True), addrs




def guards_intact(node: Any, addrs: list[int], nbytes: int) -> bool:
    for a in addrs:
        for where in (a - GUARD_BYTES, a + nbytes):
            if not (node.read_memory(where, GUARD_BYTES) == GUARD).all():
                return False
    return True


@pytest.fixture
def make_cluster() -> Iterator[Callable[..., Any]]:
    """make_cluster(1, 2, link=[(1, 2)], timeout_ms=300): clusters closed at teardown."""
    from reference_impl.multiprocess.backend import backend

    made: list[Any] = []

    def factory(*ids: int, link: Any = ((1, 2),), timeout_ms: int = TIMEOUT_MS) -> Any:
        cluster = backend.open_cluster(specs(*(ids or (1, 2)), timeout_ms=timeout_ms))
        made.append(cluster)
        for client, server in link:
            cluster.link(client, server)
        return cluster

    yield factory
    for cluster in made:
        cluster.close()


@pytest.fixture(scope="session")
def h() -> SimpleNamespace:
    """Helpers (the tests run with --import-mode=importlib, so they cannot import this module)."""
    return SimpleNamespace(
        fill_random=fill_random, fill_sentinel=fill_sentinel, snapshot=snapshot, guarded_cache=guarded_cache,
        guards_intact=guards_intact, process_gone=process_gone, relink=relink, specs=specs, TIMEOUT_MS=TIMEOUT_MS,
        SENTINEL=SENTINEL, GUARD_BYTES=GUARD_BYTES,
    )

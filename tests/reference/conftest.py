"""Fixtures for the reference backend's unit tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reference_impl.backend import ReferenceBackend, ReferenceCluster
from tests.node_helpers import fill_random, relink, snapshot

TIMEOUT_MS = 200


def pool(nbytes: int = 1 << 24, page_shift: int = 16) -> str:
    return json.dumps({"memory_size": nbytes, "page_shift": page_shift})


def node_options(**overrides: str | None) -> dict[str, str]:
    """Options of a push-capable node; pass a key with value None to drop it."""
    opts: dict[str, str | None] = {
        "llm.EnableCacheManager": "1",
        "llm.EnableRemoteCacheAccessible": "1",
        "llm.MemPoolConfig": pool(),
        "llm.HostMemPoolConfig": pool(),
        "llm.SyncKvCacheWaitTime": str(TIMEOUT_MS),
    }
    for key, value in overrides.items():
        opts[key.replace("__", ".")] = value
    return {k: v for k, v in opts.items() if v is not None}


ClusterFactory = Callable[..., ReferenceCluster]


@pytest.fixture
def make_cluster() -> Iterator[ClusterFactory]:
    """Build clusters that are closed at teardown: make_cluster(spec, spec, ..., link=[(1, 2)])."""
    made: list[ReferenceCluster] = []

    def factory(*specs: dict[str, Any], link: tuple[tuple[int, int], ...] = ((1, 2),),
                backend: ReferenceBackend | None = None) -> ReferenceCluster:
        if not specs:
            specs = ({"cluster_id": 1, "role": "PROMPT", "options": node_options()},
                     {"cluster_id": 2, "role": "DECODER", "options": node_options()})
        cluster = (backend or ReferenceBackend()).open_cluster(list(specs))
        made.append(cluster)
        for client, server in link:
            cluster.link(client, server)
        return cluster

    yield factory
    for cluster in made:
        cluster.close()


@pytest.fixture
def pair(make_cluster: ClusterFactory) -> ReferenceCluster:
    """Nodes 1 (PROMPT) and 2 (DECODER), both with device and host pools, linked 1 -> 2."""
    return make_cluster()






def open_pair(backend: ReferenceBackend | None = None, **overrides: str | None) -> ReferenceCluster:
    """A linked 1 -> 2 cluster outside any fixture (for hypothesis tests); the caller closes it."""
    opts = node_options(**overrides)
    cluster = (backend or ReferenceBackend()).open_cluster(
        [{"cluster_id": 1, "role": "PROMPT", "options": opts},
         {"cluster_id": 2, "role": "DECODER", "options": opts}])
    cluster.link(1, 2)
    return cluster




@pytest.fixture(scope="session")
def h() -> Any:
    """Helper functions (test modules cannot import conftest under --import-mode=importlib)."""
    from types import SimpleNamespace

    return SimpleNamespace(pool=pool, node_options=node_options, fill_random=fill_random, snapshot=snapshot,
                           open_pair=open_pair, relink=relink, TIMEOUT_MS=TIMEOUT_MS)

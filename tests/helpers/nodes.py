"""Nodes and clusters of any backend (the reference in one process, node processes, the node host): node options
and specs, the factory behind every ``make_cluster`` fixture, relinking."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

#: a push's timeout (llm.SyncKvCacheWaitTime) and each pool's size, with a process per node
#: (tests/multiprocess, tests/nodehost)
TIMEOUT_MS = 300
POOL_BYTES = 1 << 22
#: the same with every node in the test's process (tests/reference): ``node_options(**ONE_PROCESS)``
ONE_PROCESS: dict[str, Any] = {"timeout_ms": 200, "pool_bytes": 1 << 24}


def pool(nbytes: int = POOL_BYTES, page_shift: int = 16) -> str:
    """A memory pool option (llm.MemPoolConfig, llm.HostMemPoolConfig)."""
    return json.dumps({"memory_size": nbytes, "page_shift": page_shift})


def node_options(timeout_ms: int = TIMEOUT_MS, pool_bytes: int = POOL_BYTES, **overrides: str | None) -> dict[str, str]:
    """Options of a push-capable node with a device and a host pool; an override spells the key's dots as ``__``
    (``llm__MemPoolConfig``), and None drops the key."""
    opts: dict[str, str | None] = {
        "llm.EnableCacheManager": "1",
        "llm.EnableRemoteCacheAccessible": "1",
        "llm.MemPoolConfig": pool(pool_bytes),
        "llm.HostMemPoolConfig": pool(pool_bytes),
        "llm.SyncKvCacheWaitTime": str(timeout_ms),
    }
    for key, value in overrides.items():
        opts[key.replace("__", ".")] = value
    return {k: v for k, v in opts.items() if v is not None}


def specs(*ids: int, **options: Any) -> list[dict[str, Any]]:
    """A node spec per cluster id, the first PROMPT and the others DECODER, each with ``node_options(**options)``."""
    return [{"cluster_id": cid, "role": "PROMPT" if i == 0 else "DECODER", "options": node_options(**options)}
            for i, cid in enumerate(ids)]


ClusterFactory = Callable[..., Any]


@contextmanager
def clusters(backend: Any, **options: Any) -> Iterator[ClusterFactory]:
    """``make(*nodes, link=((1, 2),), backend=backend, **options)`` opens a cluster and links each (client,
    server) in ``link``; every cluster it opened is closed when the block ends (a fixture's teardown).

    ``nodes`` are node specs, or cluster ids made into ``specs(*ids, **options)`` (the call's options over the
    block's); no nodes: 1 and 2.
    """
    made: list[Any] = []

    def make(*nodes: int | Mapping[str, Any], link: Iterable[tuple[int, int]] = ((1, 2),), backend: Any = backend,
             **kw: Any) -> Any:
        if all(isinstance(n, int) for n in nodes):
            nodes = tuple(specs(*(nodes or (1, 2)), **{**options, **kw}))  # type: ignore[arg-type]
        elif kw:
            raise TypeError(f"options {sorted(kw)} go with cluster ids, not with node specs")
        cluster = backend.open_cluster(list(nodes))
        made.append(cluster)
        for client, server in link:
            cluster.link(client, server)
        return cluster

    try:
        yield make
    finally:
        for cluster in made:
            cluster.close()


def relink(cluster: Any, client: int = 1, server: int = 2) -> None:
    """Re-establish client -> server so the next push syncs the server's cache table afresh.

    A link syncs the remote cache table once, at its first transfer: caches the remote allocates or registers
    after that are invisible over the link (LLM_KV_CACHE_NOT_EXIST) until it is re-established.
    """
    cluster.unlink(client, server)
    cluster.link(client, server)

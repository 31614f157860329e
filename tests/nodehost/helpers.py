"""Node specs for the node host's self-tests (importable by the tests; conftest is not)."""

from __future__ import annotations

import json
from typing import Any

TIMEOUT_MS = 300


def node_options(timeout_ms: int = TIMEOUT_MS, host_pool: bool = True) -> dict[str, str]:
    pool = json.dumps({"memory_size": 1 << 22, "page_shift": 16})
    opts = {"llm.EnableCacheManager": "1", "llm.EnableRemoteCacheAccessible": "1", "llm.MemPoolConfig": pool,
            "llm.SyncKvCacheWaitTime": str(timeout_ms)}
    if host_pool:
        opts["llm.HostMemPoolConfig"] = pool
    return opts


def specs(*ids: int, timeout_ms: int = TIMEOUT_MS, host_pool: bool = True) -> list[dict[str, Any]]:
    return [{"cluster_id": cid, "role": "PROMPT" if i == 0 else "DECODER",
             "options": node_options(timeout_ms, host_pool)} for i, cid in enumerate(ids)]

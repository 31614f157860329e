"""Fake backend that declares only device placement: no host caches, blocks caches, raw memory or faults."""

from __future__ import annotations

from typing import Any

from _proxy import ProxyBackend


class MinimalBackend(ProxyBackend):
    def capabilities(self) -> dict[str, Any]:
        caps = super().capabilities()
        return {"placements": ["DEVICE"], "spec_versions": caps.get("spec_versions", [])}


backend = MinimalBackend("fake-minimal")

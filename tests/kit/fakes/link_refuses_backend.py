"""Fake backend whose links refuse after the first cluster (the smoke check's): every scenario that links fails
before the call under test, which must give error rows naming the step, never a verdict."""

from __future__ import annotations

from typing import Any

from _proxy import ProxyBackend, ProxyCluster


class RefusingCluster(ProxyCluster):
    def link(self, client: int, server: int) -> None:
        raise RuntimeError(f"link {client} -> {server} refused (fake: the transport is down)")


class LinkRefusesBackend(ProxyBackend):
    def __init__(self) -> None:
        super().__init__("fake-link-refuses")
        self.opened = 0

    def open_cluster(self, node_specs: Any) -> Any:
        self.opened += 1
        cluster = super().open_cluster(node_specs)
        return cluster if self.opened == 1 else RefusingCluster(cluster._inner)


backend = LinkRefusesBackend()

"""Fake backend whose nodes offer the protocol's optional batch, ``call_each``, and count the batches they
answered (``node.batches``), so a test can see the kit use it, in process and through the isolation child."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from _proxy import ProxyBackend, ProxyCluster, ProxyNode


class BatchingNode(ProxyNode):
    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.batches: list[tuple[str, int]] = []

    def call_each(self, method: str, arg_lists: Sequence[Sequence[Any]]) -> list[Any]:
        self.batches.append((method, len(arg_lists)))
        fn = getattr(self._inner, method)
        return [fn(*args) for args in arg_lists]


class BatchingCluster(ProxyCluster):
    node_cls = BatchingNode


class BatchingBackend(ProxyBackend):
    cluster_cls = BatchingCluster


backend = BatchingBackend("fake-batching")

"""Fixtures for the node host; tests that run node processes over the reference need NIXL installed."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.node_helpers import skip_without_nixl
from tests.nodehost.helpers import specs


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    skip_without_nixl(items, os.path.dirname(__file__), "the reference behind the node host moves bytes with it",
                      lambda item: item.get_closest_marker("nixl") is not None)


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "nixl: needs NIXL (node processes running the multi-process reference)")


@pytest.fixture
def host_backend() -> Iterator[Any]:
    """The multi-process reference behind the vendor API, with a pool of its own (ended at teardown)."""
    from nodehost.backend import NodeHostBackend
    from nodehost.process import NodePool

    pool = NodePool(max_idle=4)
    try:
        yield NodeHostBackend("reference_impl.multiprocess.datadist", name="reference-nodehost-test", pool=pool)
    finally:
        pool.close()


@pytest.fixture
def open_cluster(host_backend: Any) -> Iterator[Callable[..., Any]]:
    made: list[Any] = []

    def factory(*ids: int, link: Any = ((1, 2),), **kw: Any) -> Any:
        cluster = host_backend.open_cluster(specs(*(ids or (1, 2)), **kw))
        made.append(cluster)
        for client, server in link:
            cluster.link(client, server)
        return cluster

    yield factory
    for cluster in made:
        cluster.close()

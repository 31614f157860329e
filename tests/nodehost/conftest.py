"""Fixtures for the node host; tests that run node processes over the reference need NIXL installed."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.nodehost.helpers import specs

NIXL_SKIP = ("NIXL is not installed (pip install --no-deps nixl==1.5.1 nixl-cu12==1.5.1); the reference "
             "behind the node host moves bytes with it")


def nixl_missing() -> str | None:
    from reference_impl.multiprocess import nixl_available

    return nixl_available()


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    why = nixl_missing()
    if why is None:
        return
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here) and item.get_closest_marker("nixl") is not None:
            item.add_marker(pytest.mark.skip(reason=f"{NIXL_SKIP} ({why})"))


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

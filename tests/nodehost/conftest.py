"""Fixtures for the node host; tests that run node processes over the reference need NIXL installed (their
helpers: tests/helpers)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.nixl import skip_without_nixl
from tests.helpers.nodes import ClusterFactory, clusters


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    skip_without_nixl(items, os.path.dirname(__file__), "the reference behind the node host moves bytes with it",
                      lambda item: item.get_closest_marker("nixl") is not None)


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "nixl: needs NIXL (node processes running the multi-process reference)")
    config.addinivalue_line("markers", "ssh: starts SSH servers (other hosts on loopback addresses)")


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
def make_cluster(host_backend: Any) -> Iterator[ClusterFactory]:
    """make_cluster(1, 2, link=[(1, 2)], timeout_ms=300): clusters on ``host_backend``, closed at teardown."""
    with clusters(host_backend) as make:
        yield make

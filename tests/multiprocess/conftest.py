"""Fixtures for the multi-process (NIXL) reference backend; every test here needs NIXL installed (their helpers:
tests/helpers)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.nixl import skip_without_nixl
from tests.helpers.nodes import ClusterFactory, clusters


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    skip_without_nixl(items, os.path.dirname(__file__), "the multi-process backend needs it")


@pytest.fixture
def make_cluster() -> Iterator[ClusterFactory]:
    """make_cluster(1, 2, link=[(1, 2)], timeout_ms=300): clusters of node processes, closed at teardown."""
    from reference_impl.multiprocess.backend import backend

    with clusters(backend) as make:
        yield make

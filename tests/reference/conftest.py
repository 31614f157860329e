"""Fixtures for the reference backend's unit tests (their helpers: tests/helpers)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reference_impl.backend import ReferenceCluster, backend
from tests.helpers.nodes import ONE_PROCESS, ClusterFactory, clusters


@pytest.fixture
def make_cluster() -> Iterator[ClusterFactory]:
    """Reference clusters, closed at teardown: make_cluster(spec, spec, ..., link=[(1, 2)], backend=...)."""
    with clusters(backend, **ONE_PROCESS) as make:
        yield make


@pytest.fixture
def pair(make_cluster: ClusterFactory) -> ReferenceCluster:
    """Nodes 1 (PROMPT) and 2 (DECODER), both with device and host pools, linked 1 -> 2."""
    return make_cluster()

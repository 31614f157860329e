"""Fake backends whose node.api the kit cannot take whole (run them isolated): the kit must say what the
backend's process sent and where, not fail later on a name it lacks.

* ``unreadable``: reading ``node.api.CacheDesc`` raises in the backend's process;
* ``unhashable``: the backend's process describes ``DataType`` with a member whose value is a list (around the
  kit's description of node.api, as a hostile process could: a real enum's odd value crosses as its repr).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from _proxy import ProxyBackend, ProxyCluster, ProxyNode

from conformance_tests.isolation.processes import MARK_ENV


class UnreadableApi:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def CacheDesc(self) -> Any:  # noqa: N802 - the API's name
        raise RuntimeError("CacheDesc is not available in this build")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class UnreadableNode(ProxyNode):
    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.api = UnreadableApi(inner.api)


class UnreadableCluster(ProxyCluster):
    node_cls = UnreadableNode


class UnreadableBackend(ProxyBackend):
    cluster_cls = UnreadableCluster


def _describe_with_a_list() -> None:
    child = sys.modules["__main__"]  # the backend's process runs conformance_tests.isolation.child as __main__
    describe = child.describe

    def with_a_list(api: Any) -> Any:
        description, enums = describe(api)
        members = description["enums"]["DataType"][1]
        members[0] = [members[0][0], [1, 2]]
        return description, enums

    child.describe = with_a_list  # type: ignore[assignment]


unreadable = UnreadableBackend("fake-unreadable-api")
unhashable = ProxyBackend("fake-unhashable-api")

# only the backend's process (marked by the kit) describes node.api
if os.environ.get(MARK_ENV) and os.environ.get("ODD_API") == "unhashable":
    _describe_with_a_list()

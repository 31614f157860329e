"""The backend protocol: what a backend, its clusters and its nodes offer, checked structurally.

A backend is any object with the members of :class:`Backend`; the kit never imports a backend's package except
through :mod:`conformance_tests.resolution`.  See ``docs/architecture.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

#: members every backend object must have (attributes, then callables)
BACKEND_ATTRS = ("name", "version")
BACKEND_METHODS = ("capabilities", "open_cluster")
NODE_ATTRS = ("cluster_id", "api", "cache_manager")
NODE_METHODS = ("write_tensor", "read_tensor")
RAW_MEMORY_METHODS = ("alloc_memory", "read_memory", "write_memory")
#: optional node member: ``call_each(method, arg_lists)`` calls one of the node's observation methods
#: (:data:`BATCHABLE`) once per argument list, in order, stopping at the first exception, and returns the
#: results; a backend whose nodes live in other processes answers the per-tensor steps in one round trip
BATCH_METHOD = "call_each"
BATCHABLE = NODE_METHODS + RAW_MEMORY_METHODS


@runtime_checkable
class Node(Protocol):
    cluster_id: int
    api: Any
    cache_manager: Any

    def write_tensor(self, cache: Any, index: int, data: np.ndarray) -> None: ...

    def read_tensor(self, cache: Any, index: int) -> np.ndarray: ...


@runtime_checkable
class Cluster(Protocol):
    def node(self, cluster_id: int) -> Node: ...

    def link(self, client: int, server: int) -> None: ...

    def unlink(self, client: int, server: int) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class Backend(Protocol):
    name: str
    version: str

    def capabilities(self) -> Mapping[str, Any]: ...

    def open_cluster(self, node_specs: Sequence[Mapping[str, Any]]) -> Cluster: ...


def call_each(node: Any, method: str, arg_lists: Sequence[Sequence[Any]]) -> list[Any]:
    """``[getattr(node, method)(*args) for args in arg_lists]``: through the node's :data:`BATCH_METHOD` when it
    has one (the same calls in the same order, one round trip), else one call at a time."""
    if method not in BATCHABLE:
        raise ValueError(f"call_each: {method!r} is not one of the node methods {BATCHABLE}")
    batch = getattr(node, BATCH_METHOD, None)
    if callable(batch):
        return list(batch(method, [tuple(a) for a in arg_lists]))
    fn = getattr(node, method)
    return [fn(*args) for args in arg_lists]


def missing_members(obj: Any, attrs: Sequence[str], methods: Sequence[str]) -> list[str]:
    """Names of protocol members ``obj`` lacks (attributes missing, or methods not callable)."""
    missing = [a for a in attrs if not hasattr(obj, a)]
    missing += [m for m in methods if not callable(getattr(obj, m, None))]
    return missing


def capability_supported(caps: Mapping[str, Any], requirement: str) -> bool:
    """Whether ``caps`` declares ``requirement`` ("blocks_cache", "faults.delay", "placements.HOST")."""
    head, _, tail = requirement.partition(".")
    value = caps.get(head)
    if not tail:
        return bool(value)
    if isinstance(value, Mapping):
        return bool(value.get(tail))
    if isinstance(value, (list, tuple, set, frozenset)):
        return tail in value
    return False

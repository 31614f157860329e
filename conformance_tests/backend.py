"""The backend protocol and backend resolution.

A backend is any object with the members of :class:`Backend`; the suite checks them structurally and never
imports a backend's package except through :func:`resolve_backend`.  See ``docs/architecture.md``.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any, Protocol, runtime_checkable

import numpy as np

ENTRY_POINT_GROUP = "push_cache_conformance.backends"
ENV_VAR = "PUSH_CACHE_BACKEND"
DEFAULT_BACKEND = "reference"

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
#: names the tests build arguments from, through ``node.api``
API_NAMES = (
    "CacheDesc",
    "CacheKey",
    "CacheKeyByIdAndIndex",
    "BlocksCacheKey",
    "Cache",
    "Placement",
    "DataType",
    "LLMException",
    "LLMStatusCode",
)


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


class BackendError(Exception):
    """A backend could not be resolved or does not satisfy the protocol (one-line message)."""


def available_backends() -> dict[str, str]:
    """Entry-point backends: name -> "module:attr"."""
    try:
        eps = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # pragma: no cover - broken metadata
        return {}
    return {ep.name: ep.value for ep in sorted(eps, key=lambda e: e.name)}


def _available_line() -> str:
    names = available_backends()
    listing = ", ".join(f"{n} ({v})" for n, v in names.items()) or "none installed"
    return f"available backends (entry points in {ENTRY_POINT_GROUP}): {listing}"


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


def _import_target(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    attr = attr or "backend"
    if not module_name:
        raise BackendError(f"backend '{target}' has no module part; use package.module:attr. {_available_line()}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        # like `python -m`: a backend module in the working directory can be named directly
        sys.path.append(cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise BackendError(
                f"backend '{target}': no module named '{exc.name}'. {_available_line()}"
            ) from None
        raise BackendError(
            f"backend '{target}': importing module '{module_name}' failed: "
            f"{type(exc).__name__}: {exc}. {_available_line()}"
        ) from None
    except BaseException as exc:  # noqa: BLE001 - any import-time failure is a usage error
        if isinstance(exc, KeyboardInterrupt):
            raise
        msg = str(exc).splitlines()[0] if str(exc) else ""
        raise BackendError(
            f"backend '{target}': importing module '{module_name}' failed: "
            f"{type(exc).__name__}: {msg}. {_available_line()}"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise BackendError(
                f"backend '{target}': module '{module_name}' has no attribute '{attr}'. {_available_line()}"
            )
        obj = getattr(obj, part)
    if inspect.isclass(obj):
        try:
            obj = obj()
        except Exception as exc:  # noqa: BLE001
            raise BackendError(
                f"backend '{target}': instantiating class {attr} failed: {type(exc).__name__}: {exc}"
            ) from None
    return obj


#: the backends the kit runs in its own process by default (``--isolation auto``): its own reference
IN_PROCESS_BY_DEFAULT = frozenset({"reference_impl.backend:backend", "reference_impl.backend:vendor_backend"})


def backend_target(spec: str | None = None) -> str:
    """The ``module:attr`` that ``spec`` names (``--backend``, else ``$PUSH_CACHE_BACKEND``, else "reference"),
    found without importing the backend.  Raises :class:`BackendError` (one line)."""
    name = (spec or os.environ.get(ENV_VAR) or DEFAULT_BACKEND).strip()
    if not name:
        name = DEFAULT_BACKEND
    entry_points = available_backends()
    if name in entry_points:
        target = entry_points[name]
    elif ":" in name or "." in name:
        target = name
    else:
        # a bare name: an entry point first; a top-level module of that name otherwise
        try:
            found = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise BackendError(
                f"unknown backend '{name}': not an entry point and no module of that name. {_available_line()}"
            )
        target = name
    return target if ":" in target else f"{target}:backend"


def resolve_backend(spec: str | None = None) -> tuple[Any, str]:
    """Import the backend named by ``spec`` (see :func:`backend_target`) in this process.

    ``spec`` is ``package.module[:attr]`` (attr defaults to ``backend``; a class is instantiated) or the name
    of an entry point in group ``push_cache_conformance.backends``.  Returns ``(backend, spec_string)`` where
    spec_string is the ``module:attr`` actually imported.  Raises :class:`BackendError` (one line).
    """
    target = backend_target(spec)
    backend = _import_target(target)
    missing = missing_members(backend, BACKEND_ATTRS, BACKEND_METHODS)
    if missing:
        raise BackendError(
            f"backend '{target}' ({type(backend).__name__}) does not satisfy the protocol: "
            f"missing {', '.join(missing)}. {_available_line()}"
        )
    return backend, target


def backend_capabilities(backend: Any) -> dict[str, Any]:
    """``backend.capabilities()`` as a plain dict (BackendError when it fails or is not a mapping)."""
    try:
        caps = backend.capabilities()
    except Exception as exc:  # noqa: BLE001
        raise BackendError(f"backend.capabilities() failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(caps, Mapping):
        raise BackendError(f"backend.capabilities() returned {type(caps).__name__}, not a mapping")
    return dict(caps)

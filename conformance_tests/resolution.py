"""Which backend a name means, and the backend itself: an installed entry point, a module on the path
(``package.module[:attr]``; PYTHONPATH or the working directory) or a file (``path/to/adapter.py[:attr]``).

Every problem is a :class:`BackendError` of one line that says what went wrong and how a backend can be named.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from .backend import BACKEND_ATTRS, BACKEND_METHODS, missing_members

ENTRY_POINT_GROUP = "push_cache_conformance.backends"
ENV_VAR = "PUSH_CACHE_BACKEND"
DEFAULT_BACKEND = "reference"
#: the attribute a target names when it names none
DEFAULT_ATTR = "backend"
#: the backends the kit runs in its own process by default (``--isolation auto``): its own reference, in process
#: or with every node in a process of the kit's node host (whose node processes keep the implementation out of the
#: kit's process already: a backend process around the node host would add a round trip to every call, and no
#: protection)
IN_PROCESS_BY_DEFAULT = frozenset({"reference_impl.backend:backend", "reference_impl.backend:vendor_backend",
                                   "reference_impl.multiprocess.backend:backend", "nodehost.backend:reference",
                                   "nodehost.backend:reference_vendor"})


class BackendError(Exception):
    """A backend could not be resolved or does not satisfy the protocol (one-line message)."""


def available_backends() -> dict[str, str]:
    """Entry-point backends: name -> "module:attr"."""
    try:
        eps = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # pragma: no cover - broken metadata
        return {}
    return {ep.name: ep.value for ep in sorted(eps, key=lambda e: e.name)}


def how_to_name() -> str:
    """The three forms of a backend name, with the installed entry points."""
    names = ", ".join(available_backends()) or "none installed"
    return (f"name a backend as an installed entry point ({names}), a module on the path (package.module[:attr]; "
            "PYTHONPATH or the working directory) or a file (path/to/adapter.py[:attr])")


def _fail(name: str, problem: str) -> BackendError:
    return BackendError(f"backend '{name}': {problem}; {how_to_name()}")


def is_file_target(name: str) -> bool:
    """A file, not a module: a path ending in .py (before an optional :attr), or one with a path separator."""
    path = name.rsplit(":", 1)[0] if name.count(":") and not name.endswith(".py") else name
    return path.endswith(".py") or os.sep in path or "/" in path


def split_target(target: str) -> tuple[str, str]:
    """(module or file, attribute) of a target; a file path may hold a drive colon, its attribute comes last."""
    head, sep, attr = target.rpartition(":")
    if not sep or "/" in attr or os.sep in attr or attr.endswith(".py"):
        return target, DEFAULT_ATTR
    return head, attr or DEFAULT_ATTR


def backend_target(spec: str | None = None) -> str:
    """The ``module:attr`` (or ``/absolute/file.py:attr``) that ``spec`` names (``--backend``, else
    ``$PUSH_CACHE_BACKEND``, else "reference"), found without importing the backend. Raises BackendError."""
    name = (spec or os.environ.get(ENV_VAR) or DEFAULT_BACKEND).strip() or DEFAULT_BACKEND
    entry_points = available_backends()
    if name in entry_points:
        module, attr = split_target(entry_points[name])
        return f"{module}:{attr}"
    if is_file_target(name):
        file, attr = split_target(name)
        path = Path(file).expanduser()
        if not path.is_file():
            raise _fail(name, f"no file {path}")
        # absolute: the isolation child and a reproduction script find it wherever they run
        return f"{path.resolve()}:{attr}"
    module, attr = split_target(name)
    try:
        found = importlib.util.find_spec(module.split(".")[0]) or _in_working_directory(module)
    except (ImportError, ValueError):
        found = None
    if not found:
        raise _fail(name, f"not an entry point, and no module named '{module.split('.')[0]}' on the path")
    return f"{module}:{attr}"


def _in_working_directory(module: str) -> bool:
    top = Path.cwd() / module.split(".")[0]
    return top.with_suffix(".py").is_file() or (top / "__init__.py").is_file()


def _load_file(path: Path) -> Any:
    """A backend file, loaded as a module of its own (its folder on the path, for its sibling modules)."""
    name = f"push_cache_backend_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BackendError(f"backend '{path}': not a Python file")
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _import(target: str) -> Any:
    module_name, attr = split_target(target)
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        # like `python -m`: a backend module in the working directory can be named directly
        sys.path.append(cwd)
    try:
        module = _load_file(Path(module_name)) if is_file_target(module_name) else importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise _fail(target, f"no module named '{exc.name}'") from None
        raise _fail(target, f"importing '{module_name}' failed: {type(exc).__name__}: {exc}") from None
    except BaseException as exc:  # noqa: BLE001 - any import-time failure is a usage error
        if isinstance(exc, KeyboardInterrupt):
            raise
        msg = str(exc).splitlines()[0] if str(exc) else ""
        raise _fail(target, f"importing '{module_name}' failed: {type(exc).__name__}: {msg}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise _fail(target, f"'{module_name}' has no attribute '{attr}'")
        obj = getattr(obj, part)
    if inspect.isclass(obj):
        try:
            obj = obj()
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"backend '{target}': instantiating class {attr} failed: "
                               f"{type(exc).__name__}: {exc}") from None
    return obj


def resolve_backend(spec: str | None = None) -> tuple[Any, str]:
    """Import the backend ``spec`` names (see :func:`backend_target`) in this process; a class is instantiated.
    Returns ``(backend, target)``. Raises :class:`BackendError` (one line)."""
    target = backend_target(spec)
    backend = _import(target)
    missing = missing_members(backend, BACKEND_ATTRS, BACKEND_METHODS)
    if missing:
        raise BackendError(f"backend '{target}' ({type(backend).__name__}) does not satisfy the protocol: "
                           f"missing {', '.join(missing)} (conformance_tests/backend.py)")
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

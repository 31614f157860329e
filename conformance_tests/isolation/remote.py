"""The kit's side of objects that live in the backend's process, and the isolated backend itself."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from ..running.deadlines import Deadlines
from .executor import BackendLost, Executor


class Remote:
    """A handle to an object in the backend's process: attribute reads and calls are requests."""

    __slots__ = ("_executor", "_hid", "_type", "_generation", "_methods", "__weakref__")

    _executor: Executor
    _hid: int
    _type: str
    _generation: int

    @classmethod
    def of(cls, executor: Executor, hid: int, type_name: str) -> Remote:
        # one handle object per remote object, so identity in the kit follows identity in the backend
        known = executor.handles.get((executor.generation, hid))
        if known is not None:
            return known
        executor.unrelease(hid)  # an earlier handle to it was dropped, but the object is in use again
        self = object.__new__(cls)
        object.__setattr__(self, "_executor", executor)
        object.__setattr__(self, "_hid", hid)
        object.__setattr__(self, "_type", type_name)
        object.__setattr__(self, "_generation", executor.generation)
        object.__setattr__(self, "_methods", {})
        executor.handles[(executor.generation, hid)] = self
        return self

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        method = self._methods.get(name)
        if method is not None:
            return method
        known = self._executor.methods.get((self._type, name))
        if known is None:
            kind, value = self._executor.request(self, "getattr", name)
            if kind != "method":
                return value
            if value[2] is None:
                # a method the object forwards (its class does not define it): its signature, but held for no
                # object, not even this one (what __getattr__ hands out may change); still called by name
                return RemoteMethod(self, name, value[1])
            known = self._executor.methods[(self._type, name)] = value[1]
        # a method of the object's class stays its method (as a bound method would in process): looked up once
        # per class, not once per object
        method = self._methods[name] = RemoteMethod(self, name, known)
        return method

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot set {name} on a {self._type} that lives in the backend's process")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._executor.request(self, "call", None, args, kwargs)[1]

    def __repr__(self) -> str:
        return f"<{self._type} #{self._hid} in the backend's process>"


    def __del__(self) -> None:
        try:
            # a handle in a reference cycle (with its methods) may die after a newer one to the same object
            newer = self._executor.handles.get((self._generation, self._hid))
            if newer is None or newer is self:
                self._executor.release(self._hid, self._generation)
        except Exception:  # noqa: BLE001 - at interpreter exit the executor may be gone
            pass


class RemoteMethod:
    """A method of a remote object; one request per call.  :meth:`conformance_tests.running.deadlines.Deadlines.call` bounds it
    in the kit's process (``bounded_by_caller``) instead of on a thread."""

    bounded_by_caller = True

    def __init__(self, owner: Remote, name: str, signature: inspect.Signature | None = None) -> None:
        self.owner = owner
        self.__name__ = name
        if signature is not None:
            self.__signature__ = signature  # what inspect.signature() reports: the backend's own method's

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.owner._executor.request(self.owner, "call", self.__name__, args, kwargs)[1]

    def __repr__(self) -> str:
        return f"<method {self.__name__} of {self.owner!r}>"


class _Wrapped:
    """A protocol object around its handle: sent back as the handle, shown as the handle."""

    _remote: Remote

    def __repr__(self) -> str:
        return repr(self._remote)


class ProtocolCluster(_Wrapped):
    """The protocol's cluster (``conformance_tests/backend.py``): ``node(cluster_id)`` names one node, so its
    handle is looked up once."""

    def __init__(self, remote: Remote) -> None:
        self._remote = remote
        self._nodes: dict[int, ProtocolNode] = {}

    def node(self, cluster_id: int) -> ProtocolNode:
        node = self._nodes.get(cluster_id)
        if node is None:
            node = self._nodes[cluster_id] = ProtocolNode(self._remote.node(cluster_id))
        return node

    def __getattr__(self, name: str) -> Any:
        return getattr(self._remote, name)


class ProtocolNode(_Wrapped):
    """The protocol's node: ``cluster_id``, ``api`` and ``cache_manager`` are attributes of the node (read once;
    ``api`` is built in the kit from the backend's description of it, :mod:`.api`); everything else is asked of
    the backend's process each time."""

    _FIXED = ("cluster_id", "api", "cache_manager")

    def __init__(self, remote: Remote) -> None:
        self._remote = remote
        self._fixed: dict[str, Any] = {}

    def call_each(self, method: str, arg_lists: Sequence[Sequence[Any]]) -> list[Any]:
        """The protocol's optional batch (``backend.call_each``): one request to the backend's process, which
        passes it on to the node's own batch when it has one."""
        return self._remote._executor.request(self._remote, "each", method, (list(map(tuple, arg_lists)),))[1]

    def __getattr__(self, name: str) -> Any:
        if name in ProtocolNode._FIXED:
            if name not in self._fixed:
                self._fixed[name] = (self._remote._executor.request(self._remote, "api", None)[1] if name == "api"
                                     else getattr(self._remote, name))
            return self._fixed[name]
        return getattr(self._remote, name)


class IsolatedBackend:
    """A backend run in its own process (``--isolation process``): same protocol, crash- and hang-proof."""

    def __init__(self, target: str, deadlines: Deadlines | None = None) -> None:
        self.executor = Executor(target, deadlines or Deadlines(), Remote.of, handle_id)
        info = self.executor.info
        self.name: str = info["name"]
        self.version: str = info["version"]
        self.target: str = info["target"]
        self._caps: dict[str, Any] = dict(info["caps"])
        #: capabilities the backend declared that are not data: left out (one line each, in the session header)
        self.caps_left_out: list[str] = [str(x) for x in info.get("caps_left_out") or []]

    @property
    def root(self) -> Remote:
        return Remote.of(self.executor, 0, "backend")

    def capabilities(self) -> Mapping[str, Any]:
        return dict(self._caps)

    def open_cluster(self, node_specs: Sequence[Mapping[str, Any]]) -> Any:
        return ProtocolCluster(self.root.open_cluster(node_specs))

    def revive(self) -> bool:
        """A new backend process if the last one was lost (called before each test)."""
        return self.executor.revive()

    def close(self) -> None:
        self.executor.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.root, name)

    def __repr__(self) -> str:
        return f"<isolated backend {self.target}>"


def handle_id(obj: Any) -> int | None:
    """The handle number a handle (or a protocol object around one) is sent back as; None for any other value.
    A handle of a backend process that has ended cannot be sent."""
    if isinstance(obj, _Wrapped):
        obj = obj._remote
    if not isinstance(obj, Remote):
        return None
    if obj._generation != obj._executor.generation:
        raise BackendLost("sending an argument", f"the {obj._type} belongs to a backend process that has ended")
    return obj._hid

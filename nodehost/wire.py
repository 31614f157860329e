"""What travels between the parent and a node process of a vendor-API implementation.

Messages are pickles. The implementation's ``Cache`` objects never leave their node: the node's pickler sends
a handle ``("cache", owner cluster_id, handle, snapshot)`` and the parent's unpickler turns it into a proxy,
an instance of a subclass of the same ``Cache`` class whose public properties (``cache_id``, ``cache_desc``,
``tensor_addrs``, ``is_blocks_cache``) read the snapshot that the latest reply carried. A proxy passed back
becomes the node's real Cache; a proxy of another node's cache (or of an earlier cluster: handles never
repeat within a process) arrives as a Cache built with the manager's constructor and no manager, which is
what the implementation sees when a foreign cache object is passed in.

Exceptions: an ``LLMException`` travels as (message, status code) and is rebuilt with the implementation's
own class, so ``status_code`` survives even when the class does not pickle; others travel pickled, or as a
RuntimeError naming the original type.
"""

from __future__ import annotations

import io
import os
import pickle
import threading
import traceback
from typing import Any

_PROTOCOL = pickle.HIGHEST_PROTOCOL
#: this process's part of every cache handle: a handle made in one node process never resolves in another,
#: even when a pooled process serves a later cluster under the same cluster id
_TOKEN = os.urandom(8).hex()
_PROXY_CLASSES: dict[type, type] = {}
_PROXY_LOCK = threading.Lock()


def _status_int(code: Any) -> int:
    return int(getattr(code, "value", code))


def snapshot(cache: Any) -> tuple[Any, ...]:
    return (cache.cache_id, cache.cache_desc, list(cache.tensor_addrs), bool(cache.is_blocks_cache))


def proxy_class(cache_cls: type) -> type:
    """The subclass of the implementation's Cache whose public properties come from a snapshot (one per Cache
    class, so a proxy from an earlier cluster is still recognised as one, and sent as a handle)."""
    with _PROXY_LOCK:
        got = _PROXY_CLASSES.get(cache_cls)
        if got is None:
            got = _PROXY_CLASSES[cache_cls] = _make_proxy_class(cache_cls)
        return got


def _make_proxy_class(cache_cls: type) -> type:

    def prop(i: int) -> property:
        return property(lambda self: self._nh_snap[i])

    def repr_(self: Any) -> str:
        return f"Cache(cache_id={self._nh_snap[0]})@node{self._nh_owner}"

    return type("CacheProxy", (cache_cls,), {
        "cache_id": prop(0), "cache_desc": prop(1), "tensor_addrs": prop(2), "is_blocks_cache": prop(3),
        "__repr__": repr_, "__module__": __name__,
    })


def encode_error(exc: BaseException, llm_exception: type | None, dumps: Any) -> tuple[Any, ...]:
    tb = "".join(traceback.format_exception(exc))
    if llm_exception is not None and isinstance(exc, llm_exception):
        return ("llm", str(exc), _status_int(getattr(exc, "status_code", -1)), tb)
    try:
        return ("pickled", dumps(exc), tb)
    except Exception:  # noqa: BLE001 - any pickling failure falls back to the plain form
        return ("plain", type(exc).__name__, str(exc), tb)


class ParentCodec:
    """The parent's side: proxies go out as handles, handles come back as proxies (one object per handle)."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.proxy_cls: Any = proxy_class(module.Cache)
        self._lock = threading.Lock()
        self._proxies: dict[tuple[int, Any], Any] = {}

    def proxy(self, owner: int, handle: Any, snap: tuple[Any, ...]) -> Any:
        with self._lock:
            p: Any = self._proxies.get((owner, handle))
            if p is None:
                p = object.__new__(self.proxy_cls)
                p._nh_owner, p._nh_handle = owner, handle
                self._proxies[(owner, handle)] = p
            p._nh_snap = tuple(snap)
            return p

    def dumps(self, obj: Any) -> bytes:
        buf = io.BytesIO()
        pk = pickle.Pickler(buf, _PROTOCOL)
        proxy_cls = self.proxy_cls

        def persistent_id(o: Any) -> Any:
            if isinstance(o, proxy_cls):
                p: Any = o
                return ("cache", p._nh_owner, p._nh_handle, p._nh_snap)
            return None

        pk.persistent_id = persistent_id  # type: ignore[method-assign]
        pk.dump(obj)
        return buf.getvalue()

    def loads(self, data: bytes) -> Any:
        up = pickle.Unpickler(io.BytesIO(data))

        def persistent_load(pid: Any) -> Any:
            kind, owner, handle, snap = pid
            if kind != "cache":
                raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
            return self.proxy(owner, handle, snap)

        up.persistent_load = persistent_load  # type: ignore[method-assign]
        return up.load()

    def decode_error(self, payload: Any, where: str) -> BaseException:
        kind, *rest = payload
        if kind == "llm":
            msg, status, tb = rest
            try:
                code = self.module.LLMStatusCode(status)
            except ValueError:
                code = self.module.LLMStatusCode.LLM_FAILED
            exc: BaseException = self.module.LLMException(msg, status_code=code)
        elif kind == "pickled":
            data, tb = rest
            loaded = self.loads(data)
            exc = loaded if isinstance(loaded, BaseException) else RuntimeError(repr(loaded))
        else:
            name, msg, tb = rest
            exc = RuntimeError(f"{name}: {msg}")
        exc.add_note(f"(raised in {where}; remote traceback follows)\n{tb}")
        return exc


class NodeCodec:
    """The node's side: the implementation's Caches go out as handles; this node's handles come back as them."""

    def __init__(self, module: Any, cluster_id: int = -1, first_handle: int = 1) -> None:
        self.module = module
        self.cluster_id = cluster_id
        self._lock = threading.Lock()
        self._by_handle: dict[tuple[str, int], Any] = {}
        self._by_obj: dict[int, tuple[str, int]] = {}  # id(cache) -> handle (the cache is kept alive in _by_handle)
        self._next = first_handle

    def successor(self, cluster_id: int = -1) -> NodeCodec:
        """A codec for the next cluster: no caches, handles that never repeat this one's."""
        with self._lock:
            return NodeCodec(self.module, cluster_id, self._next)

    def handle_of(self, cache: Any) -> tuple[str, int]:
        with self._lock:
            h = self._by_obj.get(id(cache))
            if h is None:
                h, self._next = (_TOKEN, self._next), self._next + 1
                self._by_obj[id(cache)] = h
                self._by_handle[h] = cache
            return h

    def resolve(self, owner: int, handle: Any, snap: tuple[Any, ...]) -> Any:
        if owner == self.cluster_id:
            with self._lock:
                cache = self._by_handle.get(handle)
            if cache is not None:
                return cache
        cache_id, desc, addrs, is_blocks = snap
        # the manager's constructor (facts §3): id, description, addresses, manager, is_registered, is_blocks
        return self.module.Cache(cache_id, desc, list(addrs), None, False, is_blocks)

    def dumps(self, obj: Any) -> bytes:
        buf = io.BytesIO()
        pk = pickle.Pickler(buf, _PROTOCOL)
        cache_cls = self.module.Cache

        def persistent_id(o: Any) -> Any:
            if isinstance(o, cache_cls):
                return ("cache", self.cluster_id, self.handle_of(o), snapshot(o))
            return None

        pk.persistent_id = persistent_id  # type: ignore[method-assign]
        pk.dump(obj)
        return buf.getvalue()

    def loads(self, data: bytes) -> tuple[Any, list[Any]]:
        """The object, and the caches of this node it named (their state goes back with the reply)."""
        seen: list[Any] = []
        up = pickle.Unpickler(io.BytesIO(data))

        def persistent_load(pid: Any) -> Any:
            kind, owner, handle, snap = pid
            if kind != "cache":
                raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
            cache = self.resolve(owner, handle, snap)
            if owner == self.cluster_id:
                seen.append(cache)
            return cache

        up.persistent_load = persistent_load  # type: ignore[method-assign]
        return up.load(), seen

    def encode_error(self, exc: BaseException) -> tuple[Any, ...]:
        return encode_error(exc, getattr(self.module, "LLMException", None), self.dumps)

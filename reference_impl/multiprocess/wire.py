"""What travels over the parent <-> node pipe: pickles in which ``Cache`` objects travel as handles.

A node process hands out real ``Cache`` objects; the parent never sees them. The node's pickler replaces
each Cache by a persistent id ``("cache", owner_cluster_id, handle, snapshot)`` and the parent's unpickler
turns that into a :class:`CacheProxy` (a ``Cache`` subclass, one object per handle). When the parent passes a
proxy back, the node's unpickler maps the handle to its real Cache. A proxy of another node's cache arrives as
a plain, ownerless ``Cache`` with the same id, description and addresses (what the in-process reference sees
when a remote cache object is passed in: not a cache of this manager).

Exceptions are pickled too (``LLMException`` keeps its ``status_code``); one that does not pickle becomes a
``RuntimeError`` naming the original type.
"""

from __future__ import annotations

import io
import os
import pickle
import threading
import traceback
from typing import Any

from ..cache import Cache
from ..status import LLMException, LLMStatusCode

_PROTOCOL = pickle.HIGHEST_PROTOCOL
#: this process's part of every cache handle: a handle made in one node process never resolves in another,
#: even when a pooled process serves a later cluster under the same cluster id
_TOKEN = os.urandom(8).hex()


def _snapshot(cache: Cache) -> tuple[Any, ...]:
    return (cache.cache_id, cache.cache_desc, list(cache.tensor_addrs), cache._is_registered,
            cache.is_blocks_cache, cache._valid)


class CacheProxy(Cache):
    """The parent's view of a Cache that lives in a node process (a snapshot kept up to date by replies)."""

    _mp_owner: int
    _mp_handle: tuple[str, int]

    def _mp_update(self, snap: tuple[Any, ...]) -> None:
        (self._cache_id, self._cache_desc, addrs, self._is_registered, self._is_blocks_cache,
         self._valid) = snap
        self._tensor_addrs = list(addrs)

    def __repr__(self) -> str:
        return f"{super().__repr__()}@node{self._mp_owner}"


# ---------------------------------------------------------------------------------------------- parent side


class ParentCodec:
    """Pickling on the parent's side of every node pipe: proxies go out as handles and come back as proxies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proxies: dict[tuple[int, tuple[str, int]], CacheProxy] = {}

    def proxy(self, owner: int, handle: tuple[str, int], snap: tuple[Any, ...]) -> CacheProxy:
        with self._lock:
            p = self._proxies.get((owner, handle))
            if p is None:
                p = CacheProxy.__new__(CacheProxy)
                p._mp_owner, p._mp_handle = owner, handle
                p._cache_manager = None
                self._proxies[(owner, handle)] = p
            p._mp_update(snap)
            return p

    def dumps(self, obj: Any) -> bytes:
        buf = io.BytesIO()
        _ParentPickler(buf).dump(obj)
        return buf.getvalue()

    def loads(self, data: bytes) -> Any:
        return _ParentUnpickler(io.BytesIO(data), self).load()

    def decode_error(self, payload: tuple[str, Any], where: str) -> BaseException:
        """The exception a node reported (``encode_exception``'s form), rebuilt here."""
        kind, body = payload
        return decode_exception(kind, body, self.loads, where)


class _ParentPickler(pickle.Pickler):
    def __init__(self, buf: io.BytesIO) -> None:
        super().__init__(buf, _PROTOCOL)

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, CacheProxy):
            return ("cache", obj._mp_owner, obj._mp_handle, _snapshot(obj))
        return None


class _ParentUnpickler(pickle.Unpickler):
    def __init__(self, buf: io.BytesIO, codec: ParentCodec) -> None:
        super().__init__(buf)
        self._codec = codec

    def persistent_load(self, pid: Any) -> Any:
        kind, owner, handle, snap = pid
        if kind != "cache":
            raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
        return self._codec.proxy(owner, handle, snap)


# ---------------------------------------------------------------------------------------------- node side


class NodeCodec:
    """Pickling in a node process: real Caches go out as handles; handles of this node come back as them."""

    def __init__(self, cluster_id: int, first_handle: int = 1) -> None:
        self.cluster_id = cluster_id
        self._lock = threading.Lock()
        self._by_handle: dict[tuple[str, int], Cache] = {}
        self._by_obj: dict[int, tuple[str, int]] = {}  # id(cache) -> handle (the cache is kept alive in _by_handle)
        self._next = first_handle

    def successor(self) -> NodeCodec:
        """A codec for the process's next cluster: no caches, and handles that never repeat this one's, so a
        proxy kept from an earlier cluster can never resolve to a cache of a later one."""
        with self._lock:
            return NodeCodec(-1, self._next)

    def handle_of(self, cache: Cache) -> tuple[str, int]:
        with self._lock:
            h = self._by_obj.get(id(cache))
            if h is None:
                h = (_TOKEN, self._next)
                self._next += 1
                self._by_obj[id(cache)] = h
                self._by_handle[h] = cache
            return h

    def resolve(self, owner: int, handle: tuple[str, int], snap: tuple[Any, ...]) -> Cache:
        if owner == self.cluster_id:
            with self._lock:
                cache = self._by_handle.get(handle)
            if cache is not None:
                return cache
        cache_id, desc, addrs, is_registered, is_blocks, _valid = snap
        return Cache(cache_id, desc, list(addrs), None, is_registered=is_registered, is_blocks_cache=is_blocks)

    def dumps(self, obj: Any) -> bytes:
        buf = io.BytesIO()
        _NodePickler(buf, self).dump(obj)
        return buf.getvalue()

    def loads(self, data: bytes) -> tuple[Any, list[Cache]]:
        """The object, and the caches of this node it referenced (their state goes back with the reply)."""
        up = _NodeUnpickler(io.BytesIO(data), self)
        return up.load(), up.seen

    def encode_error(self, exc: BaseException) -> tuple[str, Any]:
        return encode_exception(exc, self.dumps)


class _NodePickler(pickle.Pickler):
    def __init__(self, buf: io.BytesIO, codec: NodeCodec) -> None:
        super().__init__(buf, _PROTOCOL)
        self._codec = codec

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, Cache):
            return ("cache", self._codec.cluster_id, self._codec.handle_of(obj), _snapshot(obj))
        return None


class _NodeUnpickler(pickle.Unpickler):
    def __init__(self, buf: io.BytesIO, codec: NodeCodec) -> None:
        super().__init__(buf)
        self._codec = codec
        self.seen: list[Cache] = []

    def persistent_load(self, pid: Any) -> Any:
        kind, owner, handle, snap = pid
        if kind != "cache":
            raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
        cache = self._codec.resolve(owner, handle, snap)
        if owner == self._codec.cluster_id:
            self.seen.append(cache)
        return cache


# ---------------------------------------------------------------------------------------------- exceptions


def encode_exception(exc: BaseException, dumps: Any) -> tuple[str, Any]:
    """("pickled", bytes) when the exception pickles, else ("plain", (type name, message, status))."""
    tb = "".join(traceback.format_exception(exc))
    try:
        return "pickled", (dumps(exc), tb)
    except Exception:  # noqa: BLE001 - any pickling failure falls back to the plain form
        status = getattr(exc, "status_code", None)
        return "plain", (type(exc).__name__, str(exc), int(status) if status is not None else None, tb)


def decode_exception(kind: str, payload: Any, loads: Any, where: str) -> BaseException:
    if kind == "pickled":
        data, tb = payload
        exc = loads(data)
    else:
        name, msg, status, tb = payload
        if status is not None:
            exc = LLMException(f"{name}: {msg}", status_code=LLMStatusCode(status))
        else:
            exc = RuntimeError(f"{name}: {msg}")
    if isinstance(exc, BaseException):
        exc.add_note(f"(raised in {where}; remote traceback follows)\n{tb}")
        return exc
    return RuntimeError(f"undecodable exception from {where}")

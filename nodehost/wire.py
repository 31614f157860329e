"""What travels between the node host and a node process of a vendor-API implementation: the project's one wire
(:mod:`datawire`), data only, locally over a pipe and to other hosts over SSH.

Requests and replies are :mod:`datawire.rpc`'s envelope: a request's body is the codec message ``[args, kwargs]``,
a reply's ``[value, seen]`` (the value, or the exception for an ``err`` reply). Both ends import
the same implementation module, so the API's enums and value types (``CacheDesc``, the keys) cross by name and are
rebuilt with the receiver's own classes; an exception crosses as a record and the parent rebuilds it with the
implementation's ``LLMException`` (its ``status_code`` a member of the implementation's ``LLMStatusCode``).

The implementation's ``Cache`` objects never leave their node: the node sends a handle ``["cache", owner cluster
id, token, number, snapshot]`` and the parent turns it into a proxy, an instance of a subclass of the same
``Cache`` class whose public properties (``cache_id``, ``cache_desc``, ``tensor_addrs``, ``is_blocks_cache``) read
the snapshot that the latest reply carried (``seen``: the state of every cache of the node a request named). A
proxy passed back becomes the node's real Cache; a proxy of another node's cache (or of an earlier cluster:
handles never repeat within a process, and carry the process's token) arrives as a Cache built with the manager's
constructor and no manager, which is what the implementation sees when a foreign cache object is passed in.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from datawire import Codec, Names, WireError, rebuild, rpc

#: this process's part of every cache handle: a handle made in one node process never resolves in another,
#: even when a pooled process serves a later cluster under the same cluster id
_TOKEN = os.urandom(8).hex()
_PROXY_CLASSES: dict[type, type] = {}
_PROXY_LOCK = threading.Lock()


def snapshot(cache: Any) -> list[Any]:
    return [cache.cache_id, cache.cache_desc, list(cache.tensor_addrs), bool(cache.is_blocks_cache)]


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


def _cache_handle(fields: list[Any]) -> tuple[int, tuple[str, int], tuple[Any, ...]]:
    """(owner, handle, snapshot) of a cache handle's data."""
    if not (len(fields) == 5 and fields[0] == "cache" and type(fields[1]) is int and isinstance(fields[2], str)
            and type(fields[3]) is int and isinstance(fields[4], list) and len(fields[4]) == 4):
        raise WireError("a handle that is not a cache handle")
    return fields[1], (fields[2], fields[3]), tuple(fields[4])


class ParentCodec:
    """The parent's side: proxies go out as handles, handles come back as proxies (one object per handle)."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.proxy_cls: Any = proxy_class(module.Cache)
        self._lock = threading.Lock()
        self._proxies: dict[tuple[int, Any], Any] = {}
        self.codec = Codec(Names.of(module), export=self._export, import_handle=self._import, make_error=self._error)

    def proxy(self, owner: int, handle: Any, snap: tuple[Any, ...]) -> Any:
        with self._lock:
            p: Any = self._proxies.get((owner, handle))
            if p is None:
                p = object.__new__(self.proxy_cls)
                p._nh_owner, p._nh_handle = owner, handle
                self._proxies[(owner, handle)] = p
            p._nh_snap = tuple(snap)
            return p

    def _export(self, obj: Any) -> list[Any] | None:
        if isinstance(obj, self.proxy_cls):
            p: Any = obj
            return ["cache", p._nh_owner, *p._nh_handle, list(p._nh_snap)]
        return None

    def _import(self, fields: list[Any]) -> Any:
        owner, handle, snap = _cache_handle(fields)
        return self.proxy(owner, handle, snap)

    def _error(self, record: Any) -> BaseException:
        return rebuild(record, getattr(self.module, "LLMException", None), getattr(self.module, "LLMStatusCode", None),
                       "a node process")

    def request(self, args: Any, kwargs: Any) -> list[Any]:
        """A request's body (the codec message's buffers)."""
        return self.codec.encode_parts([tuple(args), dict(kwargs)])

    def reply(self, _status: str, payload: Any) -> Any:
        """The value a reply's body carries (its ``seen`` caches update their proxies on the way)."""
        got = self.codec.decode(payload)
        if not (isinstance(got, list) and len(got) == 2):
            raise WireError("a reply payload that is not [value, seen]")
        return got[0]


class NodeCodec:
    """The node's side: the implementation's Caches go out as handles; this node's handles come back as them."""

    def __init__(self, module: Any, cluster_id: int = -1, first_handle: int = 1, names: Names | None = None) -> None:
        self.module = module
        self.cluster_id = cluster_id
        self.names = names or Names.of(module)
        self._lock = threading.Lock()
        self._by_handle: dict[tuple[str, int], Any] = {}
        self._by_obj: dict[int, tuple[str, int]] = {}  # id(cache) -> handle (the cache is kept alive in _by_handle)
        self._next = first_handle
        self._out = Codec(self.names, export=self._export)

    def successor(self, cluster_id: int = -1) -> NodeCodec:
        """A codec for the next cluster: no caches, handles that never repeat this one's."""
        with self._lock:
            return NodeCodec(self.module, cluster_id, self._next, self.names)

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

    def _export(self, obj: Any) -> list[Any] | None:
        if isinstance(obj, self.module.Cache):
            return ["cache", self.cluster_id, *self.handle_of(obj), snapshot(obj)]
        return None

    def decode_request(self, _op: str, body: Any) -> tuple[tuple[Any, Any], list[Any]]:
        """A request's ``(args, kwargs)``, and the caches of this node it named (their state goes back with the
        reply)."""
        seen: list[Any] = []

        def resolve(fields: list[Any]) -> Any:
            owner, handle, snap = _cache_handle(fields)
            cache = self.resolve(owner, handle, snap)
            if owner == self.cluster_id and all(c is not cache for c in seen):
                seen.append(cache)
            return cache

        got = Codec(self.names, import_handle=resolve).decode(body)
        if not (isinstance(got, list) and len(got) == 2 and isinstance(got[0], tuple) and isinstance(got[1], dict)):
            raise WireError("a request that is not [args, kwargs]")
        return (got[0], got[1]), seen

    def reply(self, _status: str, value: Any, seen: list[Any] | None) -> Any:
        """A reply's body."""
        return self._out.encode_parts([value, seen or []])


def hello_frame(status: str, value: Any) -> tuple[Any, ...]:
    """A node's first message: ``ok`` and ``[address, pid]``, or ``err`` and why it could not start."""
    return rpc.hello_frame(status, Codec().encode_parts(value))

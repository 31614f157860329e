"""The case value language resolved against an opened scenario: each typed expression of
:mod:`conformance_tests.spec.value_language` becomes a Python object and the source text that builds it.

Every resolved value comes with its Python expression, so a failing call can be shown (and reproduced) as
code. Keys are built when the call is made (:class:`Deferred`): their constructors may raise, and that is part
of the call's outcome. See "Case args" in ``docs/architecture.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..spec.value_language import (
    Absent,
    CacheIdRef,
    CacheRef,
    ClusterRef,
    IntExpr,
    KeyOf,
    ListOf,
    Lit,
    PlainObject,
    RangeOf,
    SymbolRef,
    TupleOf,
    ValueExpr,
)


class SpecValueError(Exception):
    """A value the opened scenario cannot give (node.api lacks a key class, an unknown cache)."""


@dataclass
class Value:
    obj: Any
    code: str

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Value({self.code})"


class _Absent:
    """Marker for an argument the call leaves out (the callee's default applies)."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()


@dataclass
class DecodeContext:
    """What symbolic values refer to, for one scenario and one call."""

    api: Any  # the local node's api namespace
    num_layers: int  # L: source layers with the call's tensor_num_per_layer
    num_tensors: int  # T: the source cache's tensor count
    batch_size: int  # B: the source cache's batch size (shape[0])
    local_id: int
    remote_id: int
    unlinked_id: int
    dst_cache_id: int
    unknown_cache_id: int
    cache_lookup: Callable[[str, str | None], Value]  # (cache name, placement) -> Value
    dst_name: str = "dst"  # the destination cache's variable name in reproductions
    src_cache_id: int = 0
    src_name: str = "src"
    remote_side: str = "dst"  # which cache a key names when it names none (the remote one: operation.remote_side)


class Deferred:
    """A constructor call made when the arguments are materialised (inside the checked call)."""

    def __init__(self, cls: Any, args: list[Any], kwargs: dict[str, Any] | None = None, kind: str | None = None) -> None:
        self.cls, self.args, self.kwargs = cls, args, kwargs or {}
        self.kind = kind  # the spec's name of the type built (a key's kind), where the value language gave one

    def build(self) -> Any:
        return self.cls(*[materialise(a) for a in self.args], **{k: materialise(v) for k, v in self.kwargs.items()})


def materialise(obj: Any) -> Any:
    """Build deferred objects (keys): their constructors may raise, and that is part of the outcome."""
    if isinstance(obj, Deferred):
        return obj.build()
    if isinstance(obj, list):
        return [materialise(o) for o in obj]
    if isinstance(obj, tuple):
        return tuple(materialise(o) for o in obj)
    return obj


def symbol(ref: SymbolRef, ctx: DecodeContext) -> int:
    return {"L": ctx.num_layers, "T": ctx.num_tensors, "B": ctx.batch_size}[ref.base] + ref.delta


def _int(n: int) -> Value:
    return Value(n, str(n))


def _sequence(items: tuple[ValueExpr, ...], ctx: DecodeContext) -> list[Value]:
    return [decode(x, ctx) for x in items]


def decode(expr: ValueExpr, ctx: DecodeContext) -> Value:
    """The object and source text of one expression in the opened scenario."""
    match expr:
        case Lit(value=value):
            return Value(value, repr(value))
        case IntExpr(value=value):
            return _int(value)
        case SymbolRef():
            return _int(symbol(expr, ctx))
        case RangeOf(bounds=bounds):
            parts = _sequence(bounds, ctx)
            return Value(range(*[b.obj for b in parts]), "range(" + ", ".join(b.code for b in parts) + ")")
        case ListOf(items=items):
            parts = _sequence(items, ctx)
            return Value([p.obj for p in parts], "[" + ", ".join(p.code for p in parts) + "]")
        case TupleOf(items=items):
            parts = _sequence(items, ctx)
            inner = ", ".join(p.code for p in parts) + ("," if len(parts) == 1 else "")
            return Value(tuple(p.obj for p in parts), f"({inner})")
        case PlainObject():
            return Value(object(), "object()")
        case Absent():
            return Value(ABSENT, "<absent>")
        case ClusterRef(name=name):
            return _cluster(name, ctx)
        case CacheIdRef(name=name):
            if name == "dst":
                return Value(ctx.dst_cache_id, f"{ctx.dst_name}.cache_id")
            if name == "src":
                return Value(ctx.src_cache_id, f"{ctx.src_name}.cache_id")
            return _int(ctx.unknown_cache_id)
        case CacheRef(name=name, placement=placement):
            return ctx.cache_lookup(name, placement)
        case KeyOf():
            return _key(expr, ctx)
    raise SpecValueError(f"cannot resolve {expr!r}")


def _cluster(name: str, ctx: DecodeContext) -> Value:
    return _int({"remote": ctx.remote_id, "local": ctx.local_id, "unlinked": ctx.unlinked_id}[name])


def _key(key: KeyOf, ctx: DecodeContext) -> Value:
    cls = getattr(ctx.api, key.kind, None)
    if cls is None:
        raise SpecValueError(f"node.api has no key class {key.kind!r}")
    if key.args is None:  # CacheKeyByIdAndIndex by its parts: the remote node, its cache, batch 0 by default
        parts = [decode(key.cluster, ctx) if key.cluster is not None else _cluster("remote", ctx),
                 decode(key.cache if key.cache is not None else CacheIdRef(ctx.remote_side), ctx),
                 decode(key.batch, ctx) if key.batch is not None else _int(0)]
    else:
        parts = _sequence(key.args, ctx)
    kwargs = {k: decode(v, ctx) for k, v in key.kwargs}
    code_args = [p.code for p in parts] + [f"{k}={v.code}" for k, v in kwargs.items()]
    return Value(Deferred(cls, [p.obj for p in parts], {k: v.obj for k, v in kwargs.items()}, key.kind),
                 f"api.{key.kind}({', '.join(code_args)})")


def literal(expr: ValueExpr) -> Any:
    """The plain value of a context-free expression (a scalar, an {int: ...}, a list or tuple of them)."""
    match expr:
        case Lit(value=value) | IntExpr(value=value):
            return value
        case ListOf(items=items):
            return [literal(i) for i in items]
        case TupleOf(items=items):
            return tuple(literal(i) for i in items)
    raise SpecValueError(f"{expr.as_data()!r} needs an opened scenario")

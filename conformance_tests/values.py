"""The spec's case value language: decode a YAML value into a Python object and its source text.

Every decoded value comes with the Python expression that builds it, so a failing call can be shown (and
reproduced) as code.  See "Case args" in ``docs/architecture.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class SpecValueError(Exception):
    """A spec value the decoder does not understand (a bug in the spec or in the decoder)."""


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

_SYMBOL = re.compile(r"^\s*([LTB])\s*(?:([+-])\s*(\d+))?\s*$")


@dataclass
class DecodeContext:
    """What symbolic values refer to, for one scenario and one case."""

    api: Any  # the local node's api namespace
    num_layers: int  # L: source layers with the case's tensor_num_per_layer
    num_tensors: int  # T: the source cache's tensor count
    batch_size: int  # B: the source cache's batch size (shape[0])
    local_id: int
    remote_id: int
    unlinked_id: int
    dst_cache_id: int
    unknown_cache_id: int
    cache_lookup: Callable[[str, Mapping[str, Any]], Value]  # {cache: NAME, ...} -> Value
    dst_name: str = "dst"  # the destination cache's variable name in reproductions


def symbol(text: str, ctx: DecodeContext) -> int:
    m = _SYMBOL.match(text)
    if not m:
        raise SpecValueError(f"unknown symbolic bound {text!r} (expected L, L+1, L-1, T, B, ...)")
    base = {"L": ctx.num_layers, "T": ctx.num_tensors, "B": ctx.batch_size}[m.group(1)]
    if m.group(2):
        delta = int(m.group(3))
        base = base + delta if m.group(2) == "+" else base - delta
    return base


def _int_or_symbol(v: Any, ctx: DecodeContext) -> Value:
    if isinstance(v, str):
        n = symbol(v, ctx)
        return Value(n, str(n))
    return decode(v, ctx)


def _cluster(v: Any, ctx: DecodeContext) -> Value:
    if v is None or v == "remote":
        return Value(ctx.remote_id, str(ctx.remote_id))
    if v == "local":
        return Value(ctx.local_id, str(ctx.local_id))
    if v == "unlinked":
        return Value(ctx.unlinked_id, str(ctx.unlinked_id))
    return decode(v, ctx)


def _cache_id(v: Any, ctx: DecodeContext) -> Value:
    if v is None or v == "dst":
        return Value(ctx.dst_cache_id, f"{ctx.dst_name}.cache_id")
    if v == "unknown":
        return Value(ctx.unknown_cache_id, str(ctx.unknown_cache_id))
    return decode(v, ctx)


def _key(spec: Mapping[str, Any], ctx: DecodeContext) -> Value:
    kind = spec["key"]
    cls = getattr(ctx.api, kind, None)
    if cls is None:
        raise SpecValueError(f"node.api has no key class {kind!r}")
    if kind == "CacheKeyByIdAndIndex":
        if "args" in spec:
            parts = [decode(a, ctx) for a in spec["args"]]
        else:
            parts = [_cluster(spec.get("cluster"), ctx), _cache_id(spec.get("cache"), ctx),
                     decode(spec.get("batch", 0), ctx)]
        return Value(Deferred(cls, [p.obj for p in parts]), f"api.{kind}({', '.join(p.code for p in parts)})")
    args = spec.get("args", [])
    parts = []
    for i, a in enumerate(args):
        parts.append(_cluster(a, ctx) if i == 0 and isinstance(a, str) else decode(a, ctx))
    kwargs = {k: decode(v, ctx) for k, v in (spec.get("kwargs") or {}).items()}
    code_args = [p.code for p in parts] + [f"{k}={v.code}" for k, v in kwargs.items()]
    return Value(
        Deferred(cls, [p.obj for p in parts], {k: v.obj for k, v in kwargs.items()}),
        f"api.{kind}({', '.join(code_args)})",
    )


class Deferred:
    """A constructor call made when the arguments are materialised (inside the checked call)."""

    def __init__(self, cls: Any, args: list[Any], kwargs: dict[str, Any] | None = None) -> None:
        self.cls, self.args, self.kwargs = cls, args, kwargs or {}

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


def decode(v: Any, ctx: DecodeContext) -> Value:
    """Decode one spec value (see the architecture doc) into a :class:`Value`."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return Value(v, repr(v))
    if isinstance(v, list):  # a bare YAML list is passed as a list
        items = [decode(x, ctx) for x in v]
        return Value([i.obj for i in items], "[" + ", ".join(i.code for i in items) + "]")
    if not isinstance(v, Mapping):
        raise SpecValueError(f"cannot decode value {v!r}")
    if "range" in v:
        bounds = [_int_or_symbol(b, ctx) for b in v["range"]]
        return Value(range(*[b.obj for b in bounds]), "range(" + ", ".join(b.code for b in bounds) + ")")
    if "list" in v:
        items = [decode(x, ctx) for x in v["list"]]
        return Value([i.obj for i in items], "[" + ", ".join(i.code for i in items) + "]")
    if "tuple" in v:
        items = [decode(x, ctx) for x in v["tuple"]]
        inner = ", ".join(i.code for i in items) + ("," if len(items) == 1 else "")
        return Value(tuple(i.obj for i in items), f"({inner})")
    if "object" in v:
        return Value(object(), "object()")
    if "key" in v:
        return _key(v, ctx)
    if "cache" in v:
        return ctx.cache_lookup(str(v["cache"]), v)
    if "absent" in v or "omit" in v:
        return Value(ABSENT, "<absent>")
    if "int" in v:  # {int: "2**64"} for values YAML cannot write literally
        text = str(v["int"])
        if not re.fullmatch(r"[-+0-9* ()]+", text):
            raise SpecValueError(f"bad int expression {text!r}")
        n = int(eval(text, {"__builtins__": {}}, {}))  # noqa: S307 - digits and * only
        return Value(n, str(n))
    if "symbol" in v:
        n = symbol(str(v["symbol"]), ctx)
        return Value(n, str(n))
    raise SpecValueError(f"unknown value form {dict(v)!r}")

"""The spec's case value language, parsed at load into typed expressions.

A case's ``args`` (and the baseline ``call``) name push_cache's arguments in a small language: a YAML scalar or
list stands for itself; a mapping is a tagged value (``{range: [0, L]}``, ``{key: CacheKeyByIdAndIndex, cache:
unknown}``, ``{cache: blocks}``, ``{absent: true}``, ``{int: "2**64"}``, ``{symbol: B}``; spec/README.md). The
loader turns each into one of the classes below; :mod:`conformance_tests.inputs.values` resolves them against an opened
scenario (the symbols, the caches, node.api's classes). ``{int: ...}`` is evaluated here by a small grammar of
integers, ``+ - * **`` and parentheses, bounded in size, never by ``eval``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class ValueLanguageError(Exception):
    """A value the language does not have (the loader reports it as a spec error at its JSON path)."""


@dataclass(frozen=True)
class Lit:
    """A scalar passed as is (None, bool, int, float, str)."""

    value: Any

    def as_data(self) -> Any:
        return self.value


@dataclass(frozen=True)
class IntExpr:
    """An int YAML cannot write literally, kept with its text."""

    value: int
    text: str

    def as_data(self) -> Any:
        return {"int": self.text}


@dataclass(frozen=True)
class SymbolRef:
    """L (source layers for the call's tensor_num_per_layer), T (source tensors) or B (source batch size),
    plus ``delta``."""

    base: str
    delta: int = 0

    @property
    def text(self) -> str:
        return self.base + (f"{self.delta:+d}" if self.delta else "")

    def as_data(self) -> Any:
        return {"symbol": self.text}


@dataclass(frozen=True)
class RangeOf:
    bounds: tuple[ValueExpr, ...]

    def as_data(self) -> Any:
        return {"range": [b.text if isinstance(b, SymbolRef) else b.as_data() for b in self.bounds]}


@dataclass(frozen=True)
class ListOf:
    items: tuple[ValueExpr, ...]

    def as_data(self) -> Any:
        return {"list": [i.as_data() for i in self.items]}


@dataclass(frozen=True)
class TupleOf:
    items: tuple[ValueExpr, ...]

    def as_data(self) -> Any:
        return {"tuple": [i.as_data() for i in self.items]}


@dataclass(frozen=True)
class PlainObject:
    """A fresh ``object()``: a value of no documented type."""

    def as_data(self) -> Any:
        return {"object": None}


@dataclass(frozen=True)
class Absent:
    """The argument is left out of the call (the callee's default applies)."""

    def as_data(self) -> Any:
        return {"absent": True}


@dataclass(frozen=True)
class ClusterRef:
    """A node of the scenario by role: remote, local, or a cluster id no node has (unlinked)."""

    name: str

    def as_data(self) -> Any:
        return self.name


@dataclass(frozen=True)
class CacheIdRef:
    """A cache's id: the destination's (dst), the source's (src), or an id no cache has (unknown)."""

    name: str

    def as_data(self) -> Any:
        return self.name


@dataclass(frozen=True)
class CacheRef:
    """A cache object of the scenario: src, a blocks cache on the local node, or the remote's Cache object."""

    name: str
    placement: str | None = None

    def as_data(self) -> Any:
        return {"cache": self.name, **({"placement": self.placement} if self.placement else {})}


@dataclass(frozen=True)
class KeyOf:
    """A key built through node.api: CacheKeyByIdAndIndex from cluster/cache/batch (or args), the other key
    classes from args/kwargs."""

    kind: str
    args: tuple[ValueExpr, ...] | None = None
    kwargs: tuple[tuple[str, ValueExpr], ...] = ()
    cluster: ValueExpr | None = None
    cache: ValueExpr | None = None
    batch: ValueExpr | None = None

    def as_data(self) -> Any:
        out: dict[str, Any] = {"key": self.kind}
        if self.args is not None:
            out["args"] = [a.as_data() for a in self.args]
        if self.kwargs:
            out["kwargs"] = {k: v.as_data() for k, v in self.kwargs}
        for name in ("cluster", "cache", "batch"):
            part = getattr(self, name)
            if part is not None:
                out[name] = part.as_data()
        return out


ValueExpr = (Lit | IntExpr | SymbolRef | RangeOf | ListOf | TupleOf | PlainObject | Absent | ClusterRef | CacheIdRef
             | CacheRef | KeyOf)

_SYMBOL = re.compile(r"^\s*([LTB])\s*(?:([+-])\s*(\d+))?\s*$")
CLUSTER_NAMES = ("remote", "local", "unlinked")
CACHE_ID_NAMES = ("dst", "src", "unknown")
#: the largest int an {int: ...} may denote (bits): wide enough for every documented domain and past it
INT_BITS = 256


def parse_value(raw: Any) -> ValueExpr:
    """The typed form of one value of the language (schema-valid input; a bad one raises ValueLanguageError)."""
    if raw is None or isinstance(raw, (bool, int, float, str)):
        return Lit(raw)
    if isinstance(raw, list):
        return ListOf(tuple(parse_value(x) for x in raw))
    if not isinstance(raw, Mapping):
        raise ValueLanguageError(f"cannot read value {raw!r}")
    if "range" in raw:
        return RangeOf(tuple(parse_symbol(b) if isinstance(b, str) else parse_value(b) for b in raw["range"]))
    if "list" in raw:
        return ListOf(tuple(parse_value(x) for x in raw["list"]))
    if "tuple" in raw:
        return TupleOf(tuple(parse_value(x) for x in raw["tuple"]))
    if "object" in raw:
        return PlainObject()
    if "key" in raw:
        return _parse_key(raw)
    if "cache" in raw:
        return CacheRef(str(raw["cache"]), raw.get("placement"))
    if "absent" in raw or "omit" in raw:
        return Absent()
    if "int" in raw:
        text = str(raw["int"])
        return IntExpr(evaluate_int(text), text)
    if "symbol" in raw:
        return parse_symbol(str(raw["symbol"]))
    raise ValueLanguageError(f"unknown value form {dict(raw)!r}")


def parse_symbol(text: str) -> SymbolRef:
    m = _SYMBOL.match(text)
    if not m:
        raise ValueLanguageError(f"unknown symbolic bound {text!r} (expected L, L+1, L-1, T, B, ...)")
    delta = int(m.group(3) or 0)
    return SymbolRef(m.group(1), -delta if m.group(2) == "-" else delta)


def _named(raw: Any, names: tuple[str, ...], ref: type[ClusterRef] | type[CacheIdRef]) -> ValueExpr:
    return ref(raw) if isinstance(raw, str) and raw in names else parse_value(raw)


def _parse_key(raw: Mapping[str, Any]) -> KeyOf:
    kind = str(raw["key"])
    kwargs = tuple((str(k), parse_value(v)) for k, v in (raw.get("kwargs") or {}).items())
    if kind == "CacheKeyByIdAndIndex" and "args" not in raw:
        return KeyOf(kind, None, kwargs,
                     _named(raw["cluster"], CLUSTER_NAMES, ClusterRef) if "cluster" in raw else None,
                     _named(raw["cache"], CACHE_ID_NAMES, CacheIdRef) if "cache" in raw else None,
                     parse_value(raw["batch"]) if "batch" in raw else None)
    args = tuple(_named(a, CLUSTER_NAMES, ClusterRef) if i == 0 else parse_value(a)
                 for i, a in enumerate(raw.get("args") or ()))
    return KeyOf(kind, args, kwargs)


def evaluate_int(text: str) -> int:
    """An integer expression of digits, unary and binary + -, *, ** and parentheses, at most INT_BITS bits at
    every step (so ``9**9**9**9`` is refused at once instead of computed)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ValueLanguageError(f"bad int expression {text!r}") from None
    return _evaluate(tree.body, text)


def _bounded(value: int, text: str) -> int:
    if value.bit_length() > INT_BITS:
        raise ValueLanguageError(f"int expression {text!r} is larger than {INT_BITS} bits")
    return value


def _evaluate(node: ast.AST, text: str) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return _bounded(node.value, text)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _evaluate(node.operand, text)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Pow)):
        left, right = _evaluate(node.left, text), _evaluate(node.right, text)
        if isinstance(node.op, ast.Pow):
            if right < 0 or (abs(left) > 1 and right > INT_BITS):
                raise ValueLanguageError(f"int expression {text!r}: exponent {right} out of range")
            return _bounded(left ** right, text)
        if isinstance(node.op, ast.Mult):
            return _bounded(left * right, text)
        return _bounded(left + right if isinstance(node.op, ast.Add) else left - right, text)
    raise ValueLanguageError(f"bad int expression {text!r} (digits, + - * ** and parentheses only)")

"""The closed expectation vocabulary: a spec ``expect`` parsed once into a typed object.

Three forms, as the spec schema defines them: :class:`Raises` (kinds, status, and the side effects a refused
call may leave — none unless the clause says otherwise), :class:`Succeeds` (a named postcondition) and
:class:`AnyOf` (the envelope of a ``may`` clause).  Each form judges an :class:`Observation`, describes itself
and renders its check for the reproduction.  Postconditions and side-effect rules are registered functions
whose names are the schema's enums (a self-test compares the two).
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import oracle
from .testbed import CacheInfo, Call, HarnessError, Outcome, Testbed, describe_exception


class ExpectationError(Exception):
    """An expect the vocabulary does not know (the schema should have refused it)."""


# ------------------------------------------------------------------------------------------------ observation


class Observation:
    """One call's outcome plus lazy reads of everything it may have changed."""

    def __init__(self, tb: Testbed, call: Call | None, outcome: Outcome) -> None:
        self.tb, self.call, self.outcome = tb, call, outcome
        self._after: dict[str, list[np.ndarray]] = {}
        self._transfer: Any = ...

    def after(self, name: str) -> list[np.ndarray]:
        if name not in self._after:
            self._after[name] = self.tb.read(self.tb.caches[name])
        return self._after[name]

    @property
    def transfer(self) -> oracle.Transfer | None:
        if self._transfer is ...:
            src = self.tb.src
            self._transfer = (oracle.plan(self.call.raw(), src.layout, self.tb.default_tnpl)
                              if self.call is not None and src is not None else None)
        return self._transfer

    def expected_dst(self, *, prefix: bool = False) -> list[np.ndarray]:
        tb = self.tb
        assert tb.src is not None and tb.dst is not None
        if self.transfer is None:
            return tb.dst_before
        return oracle.expected_destination(tb.src_data, tb.dst_before, self.transfer, tb.src.layout, tb.dst.layout,
                                           prefix=prefix)

    def unchanged(self, *, skip: tuple[str, ...] = ()) -> list[str]:
        """Live caches (except ``skip``) that changed, guard bands that changed, freed regions that changed."""
        out: list[str] = []
        for name, before in self.tb.before.items():
            info = self.tb.caches.get(name)
            if name not in skip and info is not None and info.node_name not in self.tb.dead:  # a dead node shows nothing
                out += oracle.diff(before, self.after(name), f"{name} (must be unchanged)")
        return out + self.tb.guard_violations() + self.tb.freed_violations()


# ------------------------------------------------------------------------------------------------ postconditions

Check = Callable[[Observation], list[str]]
POSTCONDITIONS: dict[str, Check] = {}
WRITES: dict[str, Check] = {}


def _register(table: dict[str, Check], name: str) -> Callable[[Check], Check]:
    def deco(fn: Check) -> Check:
        table[name] = fn
        return fn
    return deco


def _dst_name(obs: Observation) -> str:
    assert obs.tb.dst is not None
    return obs.tb.dst.name


@_register(POSTCONDITIONS, "exact")
def _exact(obs: Observation) -> list[str]:
    if obs.transfer is None:
        return ["the call's arguments describe no transfer, so no postcondition can hold"]
    return oracle.diff(obs.expected_dst(), obs.after(_dst_name(obs)), "dst") + obs.unchanged(skip=(_dst_name(obs),))


@_register(POSTCONDITIONS, "returns_none")
def _returns_none(obs: Observation) -> list[str]:
    extra = [] if obs.outcome.result is None else [
        f"push_cache returned {obs.outcome.result!r}; the documentation says it returns nothing (None)"]
    return extra + _exact(obs)


@_register(POSTCONDITIONS, "prefix")
def _prefix(obs: Observation) -> list[str]:
    return (oracle.diff(obs.expected_dst(prefix=True), obs.after(_dst_name(obs)), "dst")
            + obs.unchanged(skip=(_dst_name(obs),)))


@_register(POSTCONDITIONS, "unchanged")
def _unchanged(obs: Observation) -> list[str]:
    return obs.unchanged()


def _masked(obs: Observation, targeted: bool) -> list[str]:
    tb = obs.tb
    assert tb.src is not None and tb.dst is not None
    if obs.transfer is None:
        return ["the call's arguments describe no transfer"]
    mask = oracle.targeted_mask(obs.transfer, tb.src.layout, tb.dst.layout)
    keep = mask if targeted else [~m for m in mask]
    label = "dst targeted slice" if targeted else "dst outside the targeted slices"
    return oracle.diff(obs.expected_dst(), obs.after(tb.dst.name), label, mask=keep)


@_register(POSTCONDITIONS, "targeted")
def _targeted(obs: Observation) -> list[str]:
    return _masked(obs, True)


@_register(POSTCONDITIONS, "untouched")
def _untouched(obs: Observation) -> list[str]:
    tb = obs.tb
    assert tb.src is not None
    others = [n for n in tb.before if n not in (tb.src.name, _dst_name(obs)) and n in tb.caches]
    out = _masked(obs, False)
    for name in others:
        out += oracle.diff(tb.before[name], obs.after(name), f"{name} (must be unchanged)")
    return out + tb.freed_violations()


@_register(POSTCONDITIONS, "source")
def _source(obs: Observation) -> list[str]:
    tb = obs.tb
    assert tb.src is not None
    return oracle.diff(tb.src_data, obs.after(tb.src.name), "src (must be unchanged)")


@_register(POSTCONDITIONS, "confined")
def _confined(obs: Observation) -> list[str]:
    """Success confined to the targeted slices: what they hold is not judged (the input means nothing the
    documentation defines there), everything else is: ``untouched``, ``source`` and ``guards`` together."""
    return _untouched(obs) + _source(obs) + obs.tb.guard_violations()


@_register(POSTCONDITIONS, "guards")
def _guards(obs: Observation) -> list[str]:
    return obs.tb.guard_violations() + obs.tb.freed_violations()


@_register(POSTCONDITIONS, "conforms")
def _conforms(obs: Observation) -> list[str]:
    return []  # the clause's procedure makes its own check


@_register(WRITES, "none")
def _writes_none(obs: Observation) -> list[str]:
    return obs.unchanged()


@_register(WRITES, "valid_layers")
def _writes_valid_layers(obs: Observation) -> list[str]:
    if obs.tb.dst is None or obs.transfer is None:
        return obs.unchanged()
    dst = _dst_name(obs)
    return (oracle.outside_envelope(obs.tb.dst_before, obs.expected_dst(), obs.after(dst), "dst")
            + obs.unchanged(skip=(dst,)))


@_register(WRITES, "valid_layers_pushed")
def _writes_valid_layers_pushed(obs: Observation) -> list[str]:
    if obs.tb.dst is None or obs.transfer is None:
        return obs.unchanged()
    dst = _dst_name(obs)
    return oracle.diff(obs.expected_dst(), obs.after(dst), "dst") + obs.unchanged(skip=(dst,))


# ------------------------------------------------------------------------------------------------ forms


def exception_class(name: str, api: Any) -> type[BaseException]:
    cls = getattr(api, name, None)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        if name == "LLMException" and (issubclass(TypeError, cls) or issubclass(ValueError, cls)):
            # otherwise "raises LLMException" would accept a TypeError or ValueError
            raise HarnessError("node.api.LLMException", f"{cls.__name__} is a base class of TypeError/ValueError; "
                                                        "the adapter must expose the backend's own LLMException")
        return cls
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        return cls
    raise ExpectationError(f"unknown exception class {name!r}")


@dataclass(frozen=True)
class Raises:
    kinds: tuple[str, ...]
    status: str | None = None
    writes: str = "none"
    status_is_member: bool = False

    def describe(self) -> str:
        kinds = " or ".join(self.kinds)
        text = f"{kinds} with status {self.status}" if self.status else kinds
        return text + ("" if self.writes == "none" else f" (side effects allowed: {self.writes})")

    def outcome_problem(self, obs: Observation) -> str | None:
        out, api = obs.outcome, obs.tb.api
        if out.hung or out.exc is None:
            return f"expected {self.describe()}, but push_cache {out.describe()}"
        classes = tuple(exception_class(n, api) for n in self.kinds)
        if not isinstance(out.exc, classes):
            return f"expected {self.describe()}, but push_cache {out.describe()}"
        got = getattr(out.exc, "status_code", None)
        if self.status:
            want = getattr(api.LLMStatusCode, self.status, None)
            if want is None:
                return f"node.api.LLMStatusCode has no member {self.status}"
            if got != want:
                return (f"expected LLMException with {self.status} (= {int(want)}), but got status_code {got}: "
                        f"{describe_exception(out.exc)}")
        if self.status_is_member and (got is None or got not in list(api.LLMStatusCode)
                                      or got == api.LLMStatusCode.LLM_SUCCESS):
            return f"LLMException.status_code is {got!r}: not a member of node.api.LLMStatusCode other than LLM_SUCCESS"
        return None

    def effect_problems(self, obs: Observation) -> list[str]:
        return WRITES[self.writes](obs)

    def repro_lines(self, clause_id: str, obs: Observation) -> list[str]:
        classes = ", ".join("api.LLMException" if n == "LLMException" else n for n in self.kinds) + ","
        out = [f"assert isinstance(outcome, ({classes})), f\"{clause_id}: expected {' or '.join(self.kinds)}, "
               "got {outcome!r}\""]
        if self.status:
            out.append(f"assert outcome.status_code == api.LLMStatusCode.{self.status}, "
                       f"f\"{clause_id}: expected {self.status}, got {{outcome.status_code}}\"")
        if self.writes == "none":
            out += _unchanged_lines(clause_id)
        return out


@dataclass(frozen=True)
class Succeeds:
    post: str = "exact"

    def describe(self) -> str:
        return f"success ({self.post})"

    def outcome_problem(self, obs: Observation) -> str | None:
        if obs.outcome.hung or obs.outcome.exc is not None:
            return f"expected success, but push_cache {obs.outcome.describe()}"
        return None

    def effect_problems(self, obs: Observation) -> list[str]:
        return POSTCONDITIONS[self.post](obs)

    def repro_lines(self, clause_id: str, obs: Observation) -> list[str]:
        out = [f"assert outcome is None, f\"{clause_id}: expected success, got {{outcome!r}}\""]
        tb, transfer = obs.tb, obs.transfer
        if self.post not in ("exact", "returns_none", "targeted", "prefix") or transfer is None or tb.dst is None:
            return out
        assert tb.src is not None
        so, do, n = transfer.src_batch * tb.src.stride, transfer.dst_batch * tb.dst.stride, tb.src.stride
        return out + [
            "expected = [d.copy() for d in dst_data]",
            f"for s, d in {transfer.tensor_pairs()!r}:  # (source tensor, destination tensor) the spec's data rule moves",
            f"    expected[d][{do}:{do + n}] = src_data[s][{so}:{so + n}]",
            "for t, want in enumerate(expected):",
            "    got = np.asarray(remote.read_tensor(dst, t)).ravel()",
            "    bad = np.flatnonzero(got != want)",
            f"    assert bad.size == 0, f\"{clause_id}: dst tensor {{t}}: {{bad.size}} bytes differ, first at offset "
            "{bad[0]}\"",
            "for t, want in enumerate(src_data):",
            f"    assert (np.asarray(local.read_tensor(src, t)).ravel() == want).all(), f\"{clause_id}: src tensor {{t}} "
            "changed\"",
        ]


@dataclass(frozen=True)
class AnyOf:
    allowed: tuple[Expectation, ...]

    def describe(self) -> str:
        return "one of: " + "; ".join(a.describe() for a in self.allowed)

    def outcome_problem(self, obs: Observation) -> str | None:
        reasons = [a.outcome_problem(obs) for a in self.allowed]
        if all(reasons):
            return f"outcome not in the allowed envelope ({self.describe()}): push_cache {obs.outcome.describe()}"
        return None

    def effect_problems(self, obs: Observation) -> list[str]:
        """The side effects of the first alternative whose outcome matches."""
        problems: list[str] = []
        for alt in self.allowed:
            if alt.outcome_problem(obs) is None:
                problems = alt.effect_problems(obs)
                if not problems:
                    return []
        return problems

    def repro_lines(self, clause_id: str, obs: Observation) -> list[str]:
        return [f"print('outcome:', repr(outcome))  # {clause_id} allows: {self.describe()}"]


Expectation = Raises | Succeeds | AnyOf


def _unchanged_lines(clause_id: str) -> list[str]:
    return ["for t, want in enumerate(dst_data):",
            "    got = np.asarray(remote.read_tensor(dst, t)).ravel()",
            f"    assert (got == want).all(), f\"{clause_id}: dst tensor {{t}} changed by a refused call\""]


@functools.cache
def _parse_frozen(key: Any) -> Expectation:
    return _parse(_thaw(key))


def _freeze(v: Any) -> Any:
    if isinstance(v, Mapping):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return ("__list__", tuple(_freeze(x) for x in v))
    return v


def _thaw(v: Any) -> Any:
    if isinstance(v, tuple) and v and v[0] == "__list__":
        return [_thaw(x) for x in v[1]]
    if isinstance(v, tuple):
        return {k: _thaw(x) for k, x in v}
    return v


def _parse(expect: Mapping[str, Any]) -> Expectation:
    if "raises" in expect:
        return Raises(tuple(expect["raises"]), expect.get("status"), expect.get("writes", "none"),
                      bool(expect.get("status_is_member", False)))
    if expect.get("outcome") == "success":
        post = expect.get("post", "exact")
        if post not in POSTCONDITIONS:
            raise ExpectationError(f"unknown postcondition {post!r}")
        return Succeeds(post)
    if expect.get("outcome") == "any_of":
        return AnyOf(tuple(_parse(a) for a in expect.get("allowed", ())))
    raise ExpectationError(f"unknown expectation {dict(expect)!r}")


def parse(expect: Mapping[str, Any]) -> Expectation:
    """The typed form of a spec ``expect`` (parsed once per distinct expect)."""
    return _parse_frozen(_freeze(expect))


def union(a: Expectation, b: Expectation) -> Expectation:
    """Two refusals at once: either's kinds, the more permissive side effects (for pairs of bad arguments)."""
    if not isinstance(a, Raises) or not isinstance(b, Raises):
        return AnyOf((a, b))
    kinds = tuple(dict.fromkeys(a.kinds + b.kinds))
    order = ("none", "valid_layers", "valid_layers_pushed")
    writes = a.writes if order.index(a.writes) >= order.index(b.writes) else b.writes
    writes = "valid_layers" if writes == "valid_layers_pushed" else writes
    return Raises(kinds, None, writes)


def needs(expectation: Expectation) -> set[str]:
    """Names of the registered checks an expectation uses (for the schema self-test)."""
    if isinstance(expectation, AnyOf):
        return set().union(*(needs(a) for a in expectation.allowed))
    return {expectation.post} if isinstance(expectation, Succeeds) else {expectation.writes}


__all__ = ["AnyOf", "CacheInfo", "Expectation", "Observation", "POSTCONDITIONS", "Raises", "Succeeds", "WRITES",
           "exception_class", "parse", "union"]

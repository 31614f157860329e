"""The closed expectation vocabulary of the spec: an ``expect`` is parsed once, at load, into one of three forms.

:class:`Raises` (exception kinds, a status, and the side effects a refused call may leave: none unless the
clause says otherwise), :class:`Succeeds` (a named postcondition) and :class:`AnyOf` (the envelope of a ``may``
clause). The forms are plain data: how an outcome is judged against them lives in
:mod:`conformance_tests.judging.judge`, which binds each postcondition and side-effect name to its check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: the side-effect rules of a refusal, from the strictest to the most permissive
WRITES_ORDER = ("none", "valid_layers", "valid_layers_pushed")


@dataclass(frozen=True)
class Raises:
    kinds: tuple[str, ...]
    status: str | None = None
    writes: str = "none"
    status_is_member: bool = False

    def describe(self) -> str:
        names = list(self.kinds)
        text = (f"raises LLMException({self.status})" if self.status and names == ["LLMException"]
                else "raises " + " or ".join(names))
        if self.status_is_member:
            text += " with a status_code of LLMStatusCode"
        return text + ("" if self.writes == "none" else f" (side effects allowed: {self.writes})")

    def as_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {"raises": list(self.kinds)}
        if self.status:
            out["status"] = self.status
        if self.writes != "none":
            out["writes"] = self.writes
        if self.status_is_member:
            out["status_is_member"] = True
        return out


@dataclass(frozen=True)
class Succeeds:
    post: str = "exact"

    def describe(self) -> str:
        return f"success ({self.post})"

    def as_data(self) -> dict[str, Any]:
        return {"outcome": "success", "post": self.post}


@dataclass(frozen=True)
class AnyOf:
    allowed: tuple[Expectation, ...]

    def describe(self) -> str:
        return "any of: " + " | ".join(a.describe() for a in self.allowed)

    def as_data(self) -> dict[str, Any]:
        return {"outcome": "any_of", "allowed": [a.as_data() for a in self.allowed]}


Expectation = Raises | Succeeds | AnyOf


def allows_success(expect: Expectation) -> bool:
    """Whether ``expect`` lets the call succeed (a valid call's, a may clause's envelope), not only raise."""
    return isinstance(expect, Succeeds) or (isinstance(expect, AnyOf) and any(map(allows_success, expect.allowed)))


def parse_expect(raw: Mapping[str, Any]) -> Expectation:
    """The typed form of a schema-valid ``expect`` mapping."""
    if "raises" in raw:
        return Raises(tuple(raw["raises"]), raw.get("status"), str(raw.get("writes", "none")),
                      bool(raw.get("status_is_member", False)))
    if raw["outcome"] == "success":
        return Succeeds(str(raw.get("post", "exact")))
    return AnyOf(tuple(parse_expect(a) for a in raw["allowed"]))


def union(a: Expectation, b: Expectation) -> Expectation:
    """Two refusals at once (a pair of bad arguments): either's kinds, the more permissive side effects, no
    status (either check may come first); anything else: either outcome."""
    if not isinstance(a, Raises) or not isinstance(b, Raises):
        return AnyOf((a, b))
    kinds = tuple(dict.fromkeys(a.kinds + b.kinds))
    writes = max(a.writes, b.writes, key=WRITES_ORDER.index)
    # "exactly the valid pairs pushed" cannot hold when the other bad argument may stop the call first
    return Raises(kinds, None, "valid_layers" if writes == "valid_layers_pushed" else writes)


def envelope(expectations: Iterable[Expectation]) -> Expectation:
    """Any one of several expectations (a clause's and its cases'): the outcomes every one of them allows, each
    with its own side effects; one expectation stays itself."""
    flat: list[Expectation] = []
    for e in expectations:
        for alt in (e.allowed if isinstance(e, AnyOf) else (e,)):
            if alt not in flat:
                flat.append(alt)
    return flat[0] if len(flat) == 1 else AnyOf(tuple(flat))


def check_names(expectation: Expectation) -> set[str]:
    """The postcondition and side-effect names an expectation uses."""
    if isinstance(expectation, AnyOf):
        return set().union(*(check_names(a) for a in expectation.allowed))
    return {expectation.post} if isinstance(expectation, Succeeds) else {expectation.writes}

"""What a call changed: one call's outcome with lazy reads of everything it may have written, and the
registered checks of the spec's postconditions (``post``) and of the side effects a refusal may leave
(``writes``), each bound to its schema enum name (a self-test compares the two).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from . import oracle
from .testbed import Call, Outcome, Testbed


class Observation:
    """One call's outcome plus lazy reads of everything it may have changed."""

    def __init__(self, tb: Testbed, call: Call | None, outcome: Outcome) -> None:
        self.tb, self.call, self.outcome = tb, call, outcome
        self._after: dict[str, list[np.ndarray]] = {}
        self._transfer: Any = ...
        self._expected: dict[bool, list[np.ndarray]] = {}

    def after(self, name: str) -> list[np.ndarray]:
        if name not in self._after:
            self.prefetch([name])
        return self._after[name]

    def prefetch(self, names: Iterable[str]) -> None:
        """Read the caches ``names`` not read yet, together (one request per node)."""
        todo = [self.tb.caches[n] for n in dict.fromkeys(names) if n not in self._after]
        if todo:
            self._after.update(self.tb.read_caches(todo))

    def watched(self, *, skip: tuple[str, ...] = ()) -> list[str]:
        """The live caches (except ``skip``) that must be as they were: every one on a node still alive (those of
        the testbed's focus only, while it has one)."""
        focus = self.tb.focus
        return [name for name in self.tb.before if name not in skip and name in self.tb.caches
                and self.tb.caches[name].node_name not in self.tb.dead  # a dead node shows nothing
                and (focus is None or name in focus)]

    def read_back(self) -> dict[str, list[np.ndarray]]:
        """The caches read so far, by name (what a check passed may be taken as their bytes from now on)."""
        return dict(self._after)

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
        if prefix not in self._expected:
            self._expected[prefix] = oracle.expected_destination(tb.src_data, tb.dst_before, self.transfer,
                                                                 tb.src.layout, tb.dst.layout, prefix=prefix)
        return self._expected[prefix]

    def unchanged(self, *, skip: tuple[str, ...] = ()) -> list[str]:
        """Live caches (except ``skip``) that changed, guard bands that changed, freed regions that changed."""
        names = self.watched(skip=skip)
        self.prefetch(names)
        out: list[str] = []
        for name in names:
            out += oracle.diff(self.tb.before[name], self.after(name), f"{name} (must be unchanged)")
        return out + self.tb.memory_violations()


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


#: how a difference names where it is: inside the slices the push targets, or anywhere else
INSIDE, OUTSIDE = "dst targeted slice", "dst outside the targeted slices"


def _dst_split(obs: Observation, *, prefix: bool = False) -> list[str]:
    """The destination's differences from the expected bytes, named by where they are: wrong bytes inside the
    targeted slices, or bytes written outside them."""
    tb = obs.tb
    assert obs.transfer is not None and tb.src is not None and tb.dst is not None
    obs.prefetch([tb.dst.name, *obs.watched()])  # the caller checks every other live cache next: one read
    expected, got = obs.expected_dst(prefix=prefix), obs.after(tb.dst.name)
    whole = oracle.diff(expected, got, "dst")
    if not whole or any(line.startswith("dst:") or "bytes, read" in line for line in whole):
        return whole  # equal, or not even the same tensors: nothing to place
    mask = oracle.targeted_mask(obs.transfer, tb.src.layout, tb.dst.layout, prefix=prefix)
    return (oracle.diff(expected, got, INSIDE, mask=mask)
            + oracle.diff(expected, got, OUTSIDE, mask=[~m for m in mask]))


@_register(POSTCONDITIONS, "exact")
def _exact(obs: Observation) -> list[str]:
    if obs.transfer is None:
        return ["the call's arguments describe no transfer, so no postcondition can hold"]
    return _dst_split(obs) + obs.unchanged(skip=(_dst_name(obs),))


@_register(POSTCONDITIONS, "returns_none")
def _returns_none(obs: Observation) -> list[str]:
    extra = [] if obs.outcome.result is None else [
        f"push_cache returned {obs.outcome.result!r}; the documentation says it returns nothing (None)"]
    return extra + _exact(obs)


@_register(POSTCONDITIONS, "prefix")
def _prefix(obs: Observation) -> list[str]:
    if obs.transfer is None:
        return ["the call's arguments describe no transfer, so no postcondition can hold"]
    return _dst_split(obs, prefix=True) + obs.unchanged(skip=(_dst_name(obs),))


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
    obs.prefetch([_dst_name(obs), *others])
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
    return obs.tb.memory_violations()


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
    obs.prefetch([dst, *obs.watched()])
    return (oracle.outside_envelope(obs.tb.dst_before, obs.expected_dst(), obs.after(dst), "dst")
            + obs.unchanged(skip=(dst,)))


@_register(WRITES, "valid_layers_pushed")
def _writes_valid_layers_pushed(obs: Observation) -> list[str]:
    if obs.tb.dst is None or obs.transfer is None:
        return obs.unchanged()
    dst = _dst_name(obs)
    obs.prefetch([dst, *obs.watched()])
    return oracle.diff(obs.expected_dst(), obs.after(dst), "dst") + obs.unchanged(skip=(dst,))

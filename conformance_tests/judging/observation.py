"""What a call changed: one call's outcome with lazy reads of everything it may have written, and the
registered checks of the spec's postconditions (``post``) and of the side effects a refusal may leave
(``writes``), each bound to its schema enum name (a self-test compares the two).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..testbed.testbed import CacheInfo, Call, Outcome, Testbed
from . import oracle
from .differences import Difference, Where
from .judged_push import Push


class Observation:
    """One push's outcome plus lazy reads of everything it may have changed (``push`` None: no push was made, and
    nothing may have changed)."""

    def __init__(self, tb: Testbed, push: Push | None, outcome: Outcome) -> None:
        self.tb, self.push, self.outcome = tb, push, outcome
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
    def call(self) -> Call | None:
        return self.push.call if self.push is not None else None

    @property
    def src(self) -> CacheInfo | None:
        return self.push.src if self.push is not None else None

    @property
    def dst(self) -> CacheInfo | None:
        return self.push.dst if self.push is not None else None

    @property
    def src_data(self) -> list[np.ndarray]:
        """The source's bytes before the push."""
        return self.tb.before.get(self.src.name, []) if self.src is not None else []

    @property
    def dst_before(self) -> list[np.ndarray]:
        """The destination's bytes before the push."""
        return self.tb.before.get(self.dst.name, []) if self.dst is not None else []

    @property
    def transfer(self) -> oracle.Transfer | None:
        if self._transfer is ...:
            call, src = self.call, self.src
            push = self.push
            self._transfer = (oracle.plan(call.raw(), src.layout, self.tb.default_tnpl,
                                          push.operation_or(self.tb.run.spec.operation))
                              if call is not None and src is not None and push is not None else None)
        return self._transfer

    def expected_dst(self, *, prefix: bool = False) -> list[np.ndarray]:
        src, dst = self.src, self.dst
        assert src is not None and dst is not None
        if self.transfer is None:
            return self.dst_before
        if prefix not in self._expected:
            self._expected[prefix] = oracle.expected_destination(self.src_data, self.dst_before, self.transfer,
                                                                 src.layout, dst.layout, prefix=prefix)
        return self._expected[prefix]

    def unchanged(self, *, skip: tuple[str, ...] = ()) -> list[Difference]:
        """Live caches (except ``skip``) that changed, guard bands that changed, freed regions that changed."""
        names = self.watched(skip=skip)
        self.prefetch(names)
        out: list[Difference] = []
        for name in names:
            out += must_keep(self.tb.before[name], self.after(name), name)
        return out + self.tb.memory_violations()


def must_keep(before: list[np.ndarray], after: list[np.ndarray], name: str) -> list[Difference]:
    """How cache ``name``, which must keep its bytes, differs from what it held."""
    return oracle.diff(before, after, f"{name} (must be unchanged)", where=Where.UNCHANGED, cache=name)


Check = Callable[[Observation], list[Difference]]
POSTCONDITIONS: dict[str, Check] = {}
WRITES: dict[str, Check] = {}


def _register(table: dict[str, Check], name: str) -> Callable[[Check], Check]:
    def deco(fn: Check) -> Check:
        table[name] = fn
        return fn
    return deco


def _dst_name(obs: Observation) -> str:
    assert obs.dst is not None
    return obs.dst.name


def _no_transfer(text: str) -> list[Difference]:
    return [Difference(Where.CALL, text)]


#: how a difference's text names where it is: inside the slices the push targets, or anywhere else
INSIDE, OUTSIDE = "dst targeted slice", "dst outside the targeted slices"


def _dst_split(obs: Observation, *, prefix: bool = False) -> list[Difference]:
    """The destination's differences from the expected bytes, placed: wrong bytes inside the targeted slices, or
    bytes written outside them."""
    src, dst = obs.src, obs.dst
    assert obs.transfer is not None and src is not None and dst is not None
    obs.prefetch([dst.name, *obs.watched()])  # the caller checks every other live cache next: one read
    expected, got = obs.expected_dst(prefix=prefix), obs.after(dst.name)
    whole = oracle.diff(expected, got, "dst", cache=dst.name)
    if not whole or any(d.shape for d in whole):
        return whole  # equal, or not even the same tensors: nothing to place
    mask = oracle.targeted_mask(obs.transfer, src.layout, dst.layout, prefix=prefix)
    return (oracle.diff(expected, got, INSIDE, mask=mask, where=Where.TARGETED, cache=dst.name)
            + oracle.diff(expected, got, OUTSIDE, mask=[~m for m in mask], where=Where.OUTSIDE, cache=dst.name))


@_register(POSTCONDITIONS, "exact")
def _exact(obs: Observation) -> list[Difference]:
    if obs.transfer is None:
        return _no_transfer("the call's arguments describe no transfer, so no postcondition can hold")
    return _dst_split(obs) + obs.unchanged(skip=(_dst_name(obs),))


@_register(POSTCONDITIONS, "returns_none")
def _returns_none(obs: Observation) -> list[Difference]:
    extra = [] if obs.outcome.result is None else _no_transfer(
        f"{obs.tb.run.spec.api} returned {obs.outcome.result!r}; the documentation says it returns nothing (None)")
    return extra + _exact(obs)


@_register(POSTCONDITIONS, "prefix")
def _prefix(obs: Observation) -> list[Difference]:
    if obs.transfer is None:
        return _no_transfer("the call's arguments describe no transfer, so no postcondition can hold")
    return _dst_split(obs, prefix=True) + obs.unchanged(skip=(_dst_name(obs),))


@_register(POSTCONDITIONS, "unchanged")
def _unchanged(obs: Observation) -> list[Difference]:
    return obs.unchanged()


def _masked(obs: Observation, targeted: bool) -> list[Difference]:
    src, dst = obs.src, obs.dst
    assert src is not None and dst is not None
    if obs.transfer is None:
        return _no_transfer("the call's arguments describe no transfer")
    mask = oracle.targeted_mask(obs.transfer, src.layout, dst.layout)
    keep = mask if targeted else [~m for m in mask]
    label, where = (INSIDE, Where.TARGETED) if targeted else (OUTSIDE, Where.OUTSIDE)
    return oracle.diff(obs.expected_dst(), obs.after(dst.name), label, mask=keep, where=where, cache=dst.name)


@_register(POSTCONDITIONS, "targeted")
def _targeted(obs: Observation) -> list[Difference]:
    return _masked(obs, True)


@_register(POSTCONDITIONS, "untouched")
def _untouched(obs: Observation) -> list[Difference]:
    tb, src = obs.tb, obs.src
    assert src is not None
    others = [n for n in tb.before if n not in (src.name, _dst_name(obs)) and n in tb.caches]
    obs.prefetch([_dst_name(obs), *others])
    out = _masked(obs, False)
    for name in others:
        out += must_keep(tb.before[name], obs.after(name), name)
    return out + tb.freed_violations()


@_register(POSTCONDITIONS, "source")
def _source(obs: Observation) -> list[Difference]:
    src = obs.src
    assert src is not None
    return oracle.diff(obs.src_data, obs.after(src.name), "src (must be unchanged)", where=Where.UNCHANGED,
                       cache=src.name)


@_register(POSTCONDITIONS, "confined")
def _confined(obs: Observation) -> list[Difference]:
    """Success confined to the targeted slices: what they hold is not judged (the input means nothing the
    documentation defines there), everything else is: ``untouched``, ``source`` and ``guards`` together."""
    return _untouched(obs) + _source(obs) + obs.tb.guard_violations()


@_register(POSTCONDITIONS, "guards")
def _guards(obs: Observation) -> list[Difference]:
    return obs.tb.memory_violations()


@_register(POSTCONDITIONS, "conforms")
def _conforms(obs: Observation) -> list[Difference]:
    return []  # the clause's procedure makes its own check


@_register(WRITES, "none")
def _writes_none(obs: Observation) -> list[Difference]:
    return obs.unchanged()


@_register(WRITES, "valid_layers")
def _writes_valid_layers(obs: Observation) -> list[Difference]:
    if obs.dst is None or obs.transfer is None:
        return obs.unchanged()
    dst = _dst_name(obs)
    obs.prefetch([dst, *obs.watched()])
    return (oracle.outside_envelope(obs.dst_before, obs.expected_dst(), obs.after(dst), "dst", cache=dst)
            + obs.unchanged(skip=(dst,)))


@_register(WRITES, "valid_layers_pushed")
def _writes_valid_layers_pushed(obs: Observation) -> list[Difference]:
    if obs.dst is None or obs.transfer is None:
        return obs.unchanged()
    dst = _dst_name(obs)
    obs.prefetch([dst, *obs.watched()])
    return oracle.diff(obs.expected_dst(), obs.after(dst), "dst", cache=dst) + obs.unchanged(skip=(dst,))

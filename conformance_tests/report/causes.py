"""Likely causes: the features of the failing pushes that no passing push shares.

Each failing test whose check judged a push records that push's features (``tests[].push``); the run records,
per feature, the values the pushes of the passing tests took (``run.passing_push_features``). A *cause* is a
predicate over one feature that every push of a group of failures satisfies and no passing push does ("every
one of the 28 failures has src_batch_index > 0; no passing push does"). Groups are found greedily: the predicate
that explains the most failures first, then the rest. A failure that no predicate separates is listed as such.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .parts import FeatureValues, JSONObject, LikelyCause, PassingFeatures, TestRow

#: the most values a set predicate ("x in {a, b, c}") may name
SET_LIMIT = 3


@dataclass(frozen=True)
class Predicate:
    feature: str
    op: str  # ==, in, >, <
    value: Any  # a feature value (a number, a boolean, a short word) or, for "in", a tuple of them

    def holds(self, push: JSONObject) -> bool:
        if self.feature not in push:
            return False
        got: Any = push[self.feature]
        if self.op == "==":
            return bool(got == self.value)
        if self.op == "in":
            return got in self.value
        if not _number(got):
            return False
        return bool(got > self.value) if self.op == ">" else bool(got < self.value)

    def text(self) -> str:
        if self.op == "in":
            return f"{self.feature} in {{{', '.join(_show(v) for v in self.value)}}}"
        return f"{self.feature} {self.op} {_show(self.value)}"


def _show(value: Any) -> str:
    return "None" if value is None else str(value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _candidates(feature: str, failing: Sequence[JSONObject], passing: FeatureValues) -> list[Predicate]:
    """Predicates over ``feature`` that no passing push satisfies (``passing``: that feature's stats)."""
    seen = list(passing.get("values") or [])
    complete = not passing.get("more")  # every passing value is listed
    values: list[Any] = [p[feature] for p in failing if feature in p]
    out: list[Predicate] = []
    distinct = list(dict.fromkeys(values))
    for value in distinct:
        if complete and value not in seen:
            out.append(Predicate(feature, "==", value))
    novel = tuple(v for v in distinct if v not in seen)
    if complete and 1 < len(novel) <= SET_LIMIT:
        out.append(Predicate(feature, "in", novel))
    numbers = [v for v in values if _number(v)]
    low, high = passing.get("min"), passing.get("max")
    if numbers and high is not None and any(v > high for v in numbers):
        out.append(Predicate(feature, ">", high))
    if numbers and low is not None and any(v < low for v in numbers):
        out.append(Predicate(feature, "<", low))
    return out


@dataclass
class _Group:
    """Failures under one predicate while causes are found (None: no predicate separates them), and the failures
    of another class of push that have the predicate's feature too (``also``)."""

    predicate: Predicate | None
    members: list[TestRow]
    also: list[TestRow] = field(default_factory=list)


def _push(test: TestRow) -> JSONObject:
    """A failing test's push (the failures the causes look at all recorded one)."""
    push = test.get("push")
    assert push is not None
    return push


def likely_causes(tests: Sequence[TestRow], passing: PassingFeatures) -> list[LikelyCause]:
    """Groups of the failing tests that recorded a push, each under the predicate that separates its pushes from
    every passing push that ended the same way (returned, or raised: ``passing`` holds the stats of each class);
    the last group (``predicate`` None) holds the failures no predicate explains."""
    groups: list[_Group] = []
    failing = [t for t in tests if (t.get("push") or {}).get("class") and t.get("outcome") in ("failed", "incompatible")]
    for cls in dict.fromkeys(str(_push(t)["class"]) for t in failing):
        mine = [t for t in failing if _push(t)["class"] == cls]
        groups += _causes(mine, passing.get(cls) or {})
    groups.sort(key=lambda g: (g.predicate is None, -len(g.members)))
    return [_group(g.predicate, g.members, g.also, len(failing)) for g in _reconcile(groups)]


def _reconcile(groups: list[_Group]) -> list[_Group]:
    """Causes that do not contradict each other: a failure no predicate of its own class separates, but whose push
    has an explained cause's feature, belongs to that cause (said as such), not to "share no feature"."""
    explained = [g for g in groups if g.predicate is not None]
    out = list(explained)
    for g in groups:
        if g.predicate is not None:
            continue
        rest = []
        for t in g.members:
            home = next((e for e in explained if e.predicate is not None and e.predicate.holds(_push(t))), None)
            if home is None:
                rest.append(t)
            else:
                home.also.append(t)
        if rest:
            out.append(_Group(g.predicate, rest, g.also))
    return out


def _causes(failing: Sequence[TestRow], passing: Mapping[str, FeatureValues]) -> list[_Group]:
    if not failing or not passing:
        return []
    left = list(failing)
    groups: list[_Group] = []
    while left:
        best: tuple[int, int, Predicate] | None = None
        for feature, stats in passing.items():
            if feature in ("returned", "class"):  # the class itself
                continue
            for pred in _candidates(feature, [_push(t) for t in left], stats):
                covered = sum(1 for t in left if pred.holds(_push(t)))
                rank = (covered, -len(pred.text()))  # more failures explained, then the shorter statement
                if covered and (best is None or rank > best[:2]):
                    best = (*rank, pred)
        if best is None:
            break
        pred = best[2]
        members = [t for t in left if pred.holds(_push(t))]
        left = [t for t in left if not pred.holds(_push(t))]
        groups.append(_Group(pred, members))
    if left:
        groups.append(_Group(None, left))
    return groups


def failed_clauses(test: TestRow) -> list[str]:
    """The clauses a failing test failed: those it says broke (``failed_clauses``: a history checks many clauses
    and breaks one), else every clause it names."""
    return list(test.get("failed_clauses") or test.get("clauses") or ())


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def _group(pred: Predicate | None, members: Sequence[TestRow], also: Sequence[TestRow], total: int) -> LikelyCause:
    tests = [*members, *also]
    clauses = list(dict.fromkeys(c for t in tests for c in failed_clauses(t)))
    n = len(members)
    if pred is None:
        statement = (f"{n} of {total} failing pushes {_plural(n, 'shares', 'share')} no feature that sets "
                     f"{_plural(n, 'it', 'them')} apart from every passing push")
    else:
        every = "the" if n == 1 else f"all {n}"
        statement = (f"{every} failing push{_plural(n, '', 'es')} {_plural(n, 'has', 'have')} {pred.text()}; "
                     "no passing push does")
        if also:
            kinds = ", ".join(dict.fromkeys(str(_push(t)["class"]) for t in also))
            statement += (f" ({len(also)} more failing push{_plural(len(also), '', 'es')} ({kinds}) "
                          f"{_plural(len(also), 'has', 'have')} it too, as some passing push of that kind does)")
    return {"predicate": pred.text() if pred else None, "statement": statement, "failures": len(tests),
            "tests": [t["id"] for t in tests], "clauses": clauses,
            "first_message": next((t.get("message") for t in tests if t.get("message")), None)}

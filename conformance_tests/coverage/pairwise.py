"""A greedy pairwise covering array under constraints: rows that together reach every value of every factor and
every pair of values of the factor pairs asked for, each row one the caller can realise.

Deterministic (the factors' order and their values' order decide every choice), so a certify run reaches the same
rows whatever its seed.  ``realise`` turns a partial row (factor -> value) into what the row really reaches
(factor -> the values it takes, which may be more than one: a batch of 1 is both the minimum and the maximum), or
None where no input has those values together; a target no row can reach is returned as infeasible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

Row = Mapping[str, str]
Reached = Mapping[str, Iterable[str]]
#: one target: a single (factor, value), or two of them (a pair)
Target = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Array:
    rows: tuple[tuple[Row, Any], ...]  # each partial row with what realise made of it
    infeasible: tuple[Target, ...]  # targets no row can reach (the constraints exclude them)


def targets(factors: Mapping[str, Sequence[str]], pairs: Iterable[tuple[str, str]]) -> list[Target]:
    """Every pair of values of the factor pairs, then every single value (a pair covers its two singles)."""
    out: list[Target] = []
    for a, b in pairs:
        out += [((a, x), (b, y)) for x, y in product(factors[a], factors[b])]
    out += [((d, v),) for d, values in factors.items() for v in values]
    return out


def _reached(facts: Reached, target: Target) -> bool:
    return all(v in set(facts.get(d, ())) for d, v in target)


def covering_array(factors: Mapping[str, Sequence[str]], pairs: Iterable[tuple[str, str]],
                   realise: Callable[[Row], tuple[Reached, Any] | None]) -> Array:
    """Rows reaching every feasible target: each row starts from the first target not yet reached and takes, factor
    by factor, the value that keeps it realisable and reaches the most targets not yet reached."""
    left = targets(factors, pairs)
    rows: list[tuple[Row, Any]] = []
    infeasible: list[Target] = []
    while left:
        first = left[0]
        row = dict(first)
        got = realise(row)
        if got is None:
            infeasible.append(first)
            left.pop(0)
            continue
        for d, values in factors.items():
            if d in row:
                continue
            best: tuple[int, str, tuple[Reached, Any]] | None = None
            for v in values:
                cand = realise({**row, d: v})
                if cand is None:
                    continue
                gain = sum(1 for t in left if _reached(cand[0], t))
                if best is None or gain > best[0]:
                    best = (gain, v, cand)
            if best is not None:
                row[d], got = best[1], best[2]
        facts, made = got
        if not _reached(facts, first):  # a realise that drops what it was asked for: the target is not reached
            infeasible.append(first)
            left.pop(0)
            continue
        rows.append((row, made))
        left = [t for t in left if not _reached(facts, t)]
    return Array(tuple(rows), tuple(infeasible))

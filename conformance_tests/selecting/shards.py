"""Shards: one run's selection split into N parts (``certify --shard K/N``), every clause's tests in one part, so
that N machines together run the selection once and ``report merge`` makes the serial run's report of them.

Pure functions over (test ID, clause IDs, weight) triples: no pytest here, so the partition can be checked on
its own and computed alike by every shard, every pytest-xdist worker and every machine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_SHAPE = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """Part ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"K/N"`` as a :class:`Shard`; a ValueError saying what is wrong with any other text."""
    m = _SHAPE.fullmatch(str(text))
    if m is None:
        raise ValueError("expected K/N, two whole numbers (e.g. 1/4: the first of four shards)")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"K/N needs 1 <= K <= N (got K={index}, N={count})")
    return Shard(index, count)


@dataclass(frozen=True)
class ShardTest:
    """What the partition knows of one selected test: its ID, the clauses it names and its weight (about how
    long it runs, in units of one single-call test)."""

    id: str
    clauses: tuple[str, ...]
    weight: int = 1


def clause_groups(tests: Sequence[ShardTest]) -> list[list[int]]:
    """The tests (as positions in ``tests``) that must run in one shard: tests naming a common clause, joined
    transitively (a test naming two clauses joins their groups). A test naming no clause is a group alone.
    Groups come in the order of their first test; positions within a group in collection order."""
    parent = list(range(len(tests)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]  # path halving keeps the trees flat
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for pos, test in enumerate(tests):
        for cid in test.clauses:
            if cid in owner:
                a, b = root(owner[cid]), root(pos)
                if a != b:
                    parent[max(a, b)] = min(a, b)  # the smaller root keeps the group's first position
            else:
                owner[cid] = pos
    groups: dict[int, list[int]] = {}
    for pos in range(len(tests)):
        groups.setdefault(root(pos), []).append(pos)
    return list(groups.values())


def assign(tests: Sequence[ShardTest], count: int) -> list[int]:
    """The shard (1..count) of each test, parallel to ``tests``.

    Each clause group goes whole to one shard: the heaviest group first, to the least loaded shard (the lower
    index on a tie); groups of equal weight in the order of their smallest test ID. The result depends on the
    tests' IDs, clauses and weights only (never on hashing or on the order a worker saw them in)."""
    if count < 1:
        raise ValueError(f"a shard count is at least 1, not {count}")
    groups = clause_groups(tests)
    weight = [sum(max(1, tests[p].weight) for p in g) for g in groups]
    first_id = [min(tests[p].id for p in g) for g in groups]
    order = sorted(range(len(groups)), key=lambda g: (-weight[g], first_id[g]))
    load = [0] * count
    out = [0] * len(tests)
    for g in order:
        shard = min(range(count), key=lambda s: (load[s], s))
        load[shard] += weight[g]
        for pos in groups[g]:
            out[pos] = shard + 1
    return out


def shard_reason(shard: Shard, mine: int, selected: int) -> str:
    """The completeness reason a shard run gives (the merge recognises it by equality, from the report's data)."""
    return (f"shard {shard}: this run is one of {shard.count} shard(s) and ran {mine} of the {selected} "
            f"selected test(s); `report merge` of all {shard.count} shard reports gives the whole run's report")

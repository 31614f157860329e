"""The partition behind ``certify --shard K/N`` (conformance_tests/selecting/shards.py): what K/N may be, clause groups
(joined through tests that name several clauses), and a deterministic, balanced assignment of whole groups."""

from __future__ import annotations

import random

import pytest

from conformance_tests.selecting.shards import Shard, ShardTest, assign, clause_groups, parse_shard


@pytest.mark.parametrize(("text", "shard"), [("1/1", Shard(1, 1)), ("2/3", Shard(2, 3)), (" 3 / 3 ", Shard(3, 3))])
def test_k_of_n(text, shard):
    assert parse_shard(text) == shard and str(shard) == f"{shard.index}/{shard.count}"


@pytest.mark.parametrize(("text", "said"), [
    ("0/2", "1 <= K <= N"), ("3/2", "1 <= K <= N"), ("1/0", "1 <= K <= N"), ("2", "K/N"), ("a/b", "K/N"),
    ("-1/2", "K/N"), ("1/2/3", "K/N"), ("", "K/N"),
])
def test_anything_else_says_what_k_n_is(text, said):
    with pytest.raises(ValueError, match=said):
        parse_shard(text)


def _t(test_id, *clauses, weight=1):
    return ShardTest(test_id, tuple(clauses), weight)


def test_tests_sharing_a_clause_form_one_group_transitively():
    tests = [_t("a1", "A"), _t("b1", "B"), _t("ac", "A", "C"), _t("cd", "C", "D"), _t("e", "E"), _t("none"),
             _t("d2", "D"), _t("b2", "B")]
    assert clause_groups(tests) == [[0, 2, 3, 6], [1, 7], [4], [5]]


def test_a_test_joining_two_groups_late_merges_them():
    tests = [_t("x", "X"), _t("y", "Y"), _t("z", "Z"), _t("xz", "X", "Z"), _t("zy", "Z", "Y")]
    assert clause_groups(tests) == [[0, 1, 2, 3, 4]]


def _by_id(tests, count):
    return dict(zip((t.id for t in tests), assign(tests, count), strict=True))


def _suite(n_clauses=40, seed=3):
    rng = random.Random(seed)
    tests = []
    for c in range(n_clauses):
        for i in range(rng.randint(1, 6)):
            tests.append(_t(f"t[c{c:02d}-{i}]", f"c{c:02d}", weight=rng.choice([1, 1, 1, 20])))
    tests.append(_t("t[pair]", "c01", "c02"))  # joins two clauses' groups
    return tests


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_every_group_goes_whole_to_one_shard_and_shards_are_balanced(count):
    tests = _suite()
    shard_of = _by_id(tests, count)
    assert set(shard_of.values()) <= set(range(1, count + 1))
    for group in clause_groups(tests):
        shards = {shard_of[tests[p].id] for p in group}
        assert len(shards) == 1, ([tests[p].id for p in group], shards)
    load = {k: 0 for k in range(1, count + 1)}
    for t in tests:
        load[shard_of[t.id]] += t.weight
    heaviest = max(sum(tests[p].weight for p in g) for g in clause_groups(tests))
    assert max(load.values()) - min(load.values()) <= heaviest, load


def test_the_assignment_depends_on_the_tests_not_on_their_order():
    tests = _suite()
    shuffled = list(tests)
    random.Random(11).shuffle(shuffled)
    assert _by_id(tests, 3) == _by_id(shuffled, 3)


def test_the_heaviest_group_goes_first_to_the_least_loaded_shard_ties_by_id():
    tests = [_t("b", "B", weight=5), _t("a", "A", weight=5), _t("c", "C", weight=9), _t("d", "D", weight=1)]
    # c (9) -> 1; a (5, before b by id) -> 2; b (5) -> 2 (load 5 < 9); d (1) -> 1 (9 < 10)
    assert _by_id(tests, 2) == {"c": 1, "a": 2, "b": 2, "d": 1}


def test_more_shards_than_groups_leaves_shards_empty():
    tests = [_t("a", "A"), _t("b", "B")]
    assert sorted(assign(tests, 4)) == [1, 2]

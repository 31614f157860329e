"""push_blocks, pull_cache and pull_blocks of the in-process reference against the facts (llm-datadist-facts.md §2,
transfer-family.md §1.2): signatures, each check in order, byte-exact copies, nothing outside the targeted
blocks/bytes changing (on every cache of both nodes), and how many native transfers each makes."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from reference_impl import (
    BlocksCacheKey,
    CacheDesc,
    CacheKey,
    CacheKeyByIdAndIndex,
    CacheManager,
    DataType,
    LLMException,
    LLMStatusCode,
)
from reference_impl.backend import backend, vendor_backend
from tests.helpers.data import fill_random, snapshot
from tests.helpers.nodes import ONE_PROCESS, clusters

S = LLMStatusCode
#: 4 tensors (2 layers at the default tensor_num_per_layer), 3 batches of 32 bytes
CONTIGUOUS = CacheDesc(4, [3, 16], DataType.DT_FLOAT16)
#: 4 tensors, 5 blocks of 16 bytes
BLOCKS = CacheDesc(4, [5, 8], DataType.DT_FLOAT16)
MODEL = 7


def _env(make: Callable[..., Any], **options: Any) -> SimpleNamespace:
    """Nodes 1 and 2 linked 1 -> 2, each with a contiguous and a blocks cache (bound to BlocksCacheKey(id, MODEL))
    filled with distinct random bytes, all made before the link's first transfer syncs the remote table."""
    cluster = make(**options)
    a, b = cluster.node(1), cluster.node(2)
    ns = SimpleNamespace(cluster=cluster, a=a, b=b, cm=a.cache_manager, caches=[])
    for seed, (node, cid) in enumerate(((a, 1), (b, 2))):
        cm = node.cache_manager
        contiguous = cm.allocate_cache(CONTIGUOUS)
        blocks = cm.allocate_blocks_cache(BLOCKS, BlocksCacheKey(cid, MODEL))
        fill_random(node, contiguous, seed=10 + seed)
        fill_random(node, blocks, seed=20 + seed)
        ns.caches += [(node, contiguous), (node, blocks)]
        setattr(ns, f"contiguous{cid}", contiguous)
        setattr(ns, f"blocks{cid}", blocks)
    return ns


@pytest.fixture
def env() -> Iterator[SimpleNamespace]:
    with clusters(backend, **ONE_PROCESS) as make:
        yield _env(make)


@pytest.fixture
def vendor_env() -> Iterator[SimpleNamespace]:
    with clusters(vendor_backend, **ONE_PROCESS) as make:
        yield _env(make, backend=vendor_backend)


def everything(ns: SimpleNamespace) -> list[list[np.ndarray]]:
    return [snapshot(node, cache) for node, cache in ns.caches]


def changed(before: list[list[np.ndarray]], after: list[list[np.ndarray]]) -> list[tuple[int, int, int, int]]:
    """(cache index in ns.caches, tensor, first changed byte, last changed byte + 1) of every changed tensor."""
    out = []
    for c, (tb, ta) in enumerate(zip(before, after, strict=True)):
        for t, (x, y) in enumerate(zip(tb, ta, strict=True)):
            diff = np.flatnonzero(x != y)
            if diff.size:
                out.append((c, t, int(diff[0]), int(diff[-1]) + 1))
    return out


def raises(call: Callable[[], Any]) -> BaseException | None:
    try:
        call()
    except (TypeError, ValueError, AttributeError, LLMException) as exc:
        return exc
    return None


def kind(exc: BaseException | None) -> Any:
    """The outcome of a call: the exception type, with the status for an LLMException (None: it returned)."""
    if isinstance(exc, LLMException):
        return (LLMException, exc.status_code)
    return None if exc is None else type(exc)


INVALID = (LLMException, S.LLM_PARAM_INVALID)

# ---- signatures (facts §2) --------------------------------------------------------------------------------


def _params(fn: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.default) for p in list(inspect.signature(fn).parameters.values())[1:]]


def test_signatures() -> None:
    empty = inspect.Parameter.empty
    assert _params(CacheManager.push_blocks) == [
        ("dst_cache_key", empty), ("src_cache", empty), ("src_blocks", ()), ("dst_blocks", ()),
        ("src_layer_range", None), ("dst_layer_range", None), ("tensor_num_per_layer", 2)]
    assert _params(CacheManager.pull_cache) == [
        ("cache_key", empty), ("cache", empty), ("batch_index", 0), ("size", -1), ("kwargs", empty)]
    assert _params(CacheManager.pull_blocks) == [
        ("src_cache_key", empty), ("dst_cache", empty), ("src_blocks", ()), ("dst_blocks", ()), ("kwargs", empty)]


# ---- push_blocks ------------------------------------------------------------------------------------------


def test_push_blocks_copies_exactly_the_chosen_blocks(env: SimpleNamespace) -> None:
    before = everything(env)
    env.cm.push_blocks(BlocksCacheKey(2, MODEL), env.blocks1, src_blocks=[0, 3], dst_blocks=[4, 1])
    after = everything(env)
    src, dst = before[1], after[3]  # blocks1 on node 1, blocks2 on node 2
    for t in range(4):
        for sb, db in ((0, 4), (3, 1)):
            assert np.array_equal(dst[t][db * 16:(db + 1) * 16], src[t][sb * 16:(sb + 1) * 16]), (t, sb, db)
    # blocks 1 and 4 of every tensor of blocks2 changed (each may keep bytes that happened to be equal)
    got = changed(before, after)
    assert {c for c, *_ in got} == {3}, f"push_blocks changed {got}"
    for _, t, lo, hi in got:
        assert 16 <= lo and hi <= 80, (t, lo, hi)
        assert np.array_equal(after[3][t][32:64], before[3][t][32:64]), f"blocks 2, 3 of tensor {t} changed"


def test_push_blocks_pushes_only_the_layers_of_the_range(env: SimpleNamespace) -> None:
    before = everything(env)
    env.cm.push_blocks(BlocksCacheKey(2, MODEL), env.blocks1, [2], [2], range(1, 2), range(1, 2))
    got = changed(before, everything(env))
    assert {(c, t) for c, t, *_ in got} <= {(3, 2), (3, 3)} and got, f"push_blocks(range(1, 2)) changed {got}"
    assert all(32 <= lo and hi <= 48 for *_, lo, hi in got), got


def test_push_blocks_checks_in_order(env: SimpleNamespace) -> None:
    key, src = BlocksCacheKey(2, MODEL), env.blocks1

    def pb(*args: Any, **kw: Any) -> Any:
        return kind(raises(lambda: env.cm.push_blocks(*args, **kw)))

    cases = [
        (pb(None, src, [0], [0]), TypeError),                                       # 2 (reference: None refused)
        (pb(CacheKeyByIdAndIndex(2, 1), src, [0], [0]), TypeError),                 # 2
        (pb(key, None, [0], [0]), TypeError),                                       # 3
        (pb(key, src, [0.5], [0]), TypeError),                                      # 4
        (pb(key, src, [0], "0"), TypeError),                                        # 4
        (pb(key, env.contiguous1, [0], [0]), INVALID),                              # 5
        (pb(key, src, [0], []), INVALID),                                           # 6
        (pb(key, src, [0], [0], tensor_num_per_layer=-1), ValueError),              # 7
        (pb(key, src, [0], [0], tensor_num_per_layer=0), INVALID),                  # 7
        (pb(key, src, [0], [0], range(0, 2, 2)), INVALID),                          # 8
        (pb(key, src, [0], [0], None, [0]), TypeError),                             # 8
        (pb(key, src, [0], [0], range(0, 1)), INVALID),                             # 10: lengths differ
        (pb(key, src, [0], [0], tensor_num_per_layer=8), INVALID),                  # documentation: tnpl bound
        (pb(key, src, [0], [0], range(0, 1), range(1, 2)), INVALID),                # documentation: same ranges
        # order: the earlier check wins
        (pb(CacheKeyByIdAndIndex(2, 1), env.contiguous1, [0], []), TypeError),      # 2 before 5, 6
        (pb(key, env.contiguous1, [0], []), INVALID),                               # 5 before 6 (message below)
        (pb(key, src, [0], [], tensor_num_per_layer=-1), INVALID),                  # 6 before 7
    ]
    assert [got for got, _ in cases] == [want for _, want in cases]
    exc = raises(lambda: env.cm.push_blocks(key, env.contiguous1, [0], []))
    assert "must be blocks" in str(exc), f"push_blocks(contiguous, dst_blocks=[]) -> {exc!r}"
    assert changed(everything(env), everything(env)) == []


@pytest.mark.parametrize(("src_blocks", "dst_blocks", "model", "detail"), [
    ([], [0], MODEL, "src_blocks is empty"),           # C2B branch: block_mem_size 0 refused
    ([0, 1], [0], MODEL, "size"),                      # B2B: equal lengths
    ([5], [0], MODEL, "src block index 5"),            # src blocks < local num_blocks
    ([0], [5], MODEL, "dst block index 5"),            # dst blocks < remote num_blocks
    ([0], [0], MODEL + 1, "does not exist"),           # no blocks cache bound to that model_id
])
def test_push_blocks_native_refusals_write_nothing(env: SimpleNamespace, src_blocks: list[int],
                                                   dst_blocks: list[int], model: int, detail: str) -> None:
    before = everything(env)
    exc = raises(lambda: env.cm.push_blocks(BlocksCacheKey(2, model), env.blocks1, src_blocks, dst_blocks))
    status = S.LLM_KV_CACHE_NOT_EXIST if model != MODEL else S.LLM_PARAM_INVALID
    assert kind(exc) == (LLMException, status) and detail in str(exc), (
        f"push_blocks(BlocksCacheKey(2, {model}), blocks, {src_blocks}, {dst_blocks}) -> {exc!r}")
    assert changed(before, everything(env)) == []


def test_push_blocks_needs_a_link_and_keeps_layers_already_sent(env: SimpleNamespace) -> None:
    exc = raises(lambda: env.cm.push_blocks(BlocksCacheKey(3, MODEL), env.blocks1, [0], [0]))
    assert kind(exc) == (LLMException, S.LLM_NOT_YET_LINK), exc
    before = everything(env)
    exc = raises(lambda: env.cm.push_blocks(BlocksCacheKey(2, MODEL), env.blocks1, [1], [1], range(1, 3),
                                            range(1, 3)))
    assert kind(exc) == INVALID and "layer index[2]" in str(exc), exc
    got = changed(before, everything(env))
    assert got and {(c, t) for c, t, *_ in got} <= {(3, 2), (3, 3)}, f"layer 1 pushed before layer 2 failed: {got}"


def test_push_blocks_refuses_with_the_option_off() -> None:
    with clusters(backend, **ONE_PROCESS) as make:
        ns = _env(make, llm__EnableRemoteCacheAccessible="0")
        exc = raises(lambda: ns.cm.push_blocks(BlocksCacheKey(2, MODEL), ns.blocks1, [0], [0]))
        assert kind(exc) == INVALID and "enable_remote_cache_accessible" in str(exc), exc
        # the reference runs the type checks first (the documentation promises a TypeError for a wrong type)
        assert kind(raises(lambda: ns.cm.push_blocks(None, ns.blocks1, [0], [0]))) is TypeError


def test_vendor_push_blocks_lets_none_through_and_skips_the_documented_bounds(vendor_env: SimpleNamespace) -> None:
    cm, key, src = vendor_env.cm, BlocksCacheKey(2, MODEL), vendor_env.blocks1
    assert kind(raises(lambda: cm.push_blocks(None, src, [0], [0]))) is AttributeError
    assert kind(raises(lambda: cm.push_blocks(key, None, [0], [0]))) is AttributeError
    before = everything(vendor_env)
    cm.push_blocks(key, src, [0], [0], range(0, 1), range(1, 2))  # layer 0 into layer 1, as the vendor
    after = everything(vendor_env)
    for t in (0, 1):
        assert np.array_equal(after[3][t + 2][:16], before[1][t][:16]), t
    assert {(c, t) for c, t, *_ in changed(before, after)} <= {(3, 2), (3, 3)}
    cm.push_blocks(key, src, [0], [0], tensor_num_per_layer=8)  # empty default ranges: nothing pushed
    assert changed(after, everything(vendor_env)) == []


# ---- pull_cache -------------------------------------------------------------------------------------------


def test_pull_cache_copies_one_batch_into_the_local_slot(env: SimpleNamespace) -> None:
    before = everything(env)
    env.cm.pull_cache(CacheKeyByIdAndIndex(2, env.contiguous2.cache_id, 2), env.contiguous1, batch_index=1)
    after = everything(env)
    for t in range(4):
        assert np.array_equal(after[0][t][32:64], before[2][t][64:96]), t
    got = changed(before, after)
    assert {c for c, *_ in got} == {0} and all(32 <= lo and hi <= 64 for *_, lo, hi in got), got


def test_pull_cache_ranges_are_tensor_indices_and_may_differ(env: SimpleNamespace) -> None:
    before = everything(env)
    env.cm.pull_cache(CacheKeyByIdAndIndex(2, env.contiguous2.cache_id, 0), env.contiguous1,
                      src_layer_range=range(0, 1), dst_layer_range=range(1, 2), unknown_kwarg=1)
    after = everything(env)
    for t in (0, 1):
        assert np.array_equal(after[0][t + 2][:32], before[2][t][:32]), t
    assert {(c, t) for c, t, *_ in changed(before, after)} <= {(0, 2), (0, 3)}
    for empty in (range(0, 0), range(2, 1)):  # the page: only an unset range means all layers
        exc = raises(lambda r=empty: env.cm.pull_cache(CacheKeyByIdAndIndex(2, env.contiguous2.cache_id, 0),
                                                       env.contiguous1, batch_index=2, src_layer_range=r))
        assert kind(exc) == INVALID, exc
    exc = raises(lambda: env.cm.pull_cache(CacheKeyByIdAndIndex(2, env.contiguous2.cache_id, 0), env.contiguous1,
                                           tensor_num_per_layer=5))  # above the 4 tensors, no range given
    assert kind(exc) == INVALID, exc
    assert changed(after, everything(env)) == []


def test_vendor_pull_cache_reads_an_empty_range_and_a_large_tnpl_as_all_tensors(vendor_env: SimpleNamespace) -> None:
    cm, key, dst = vendor_env.cm, CacheKeyByIdAndIndex(2, vendor_env.contiguous2.cache_id, 0), vendor_env.contiguous1
    before = everything(vendor_env)
    cm.pull_cache(key, dst, batch_index=2, src_layer_range=range(0, 0))  # empty: all tensors
    cm.pull_cache(key, dst, batch_index=1, tensor_num_per_layer=5)       # unset ranges: all tensors
    final = everything(vendor_env)
    assert all(np.array_equal(final[0][t][64:96], before[2][t][:32]) for t in range(4))
    assert all(np.array_equal(final[0][t][32:64], before[2][t][:32]) for t in range(4))


@pytest.mark.parametrize("mode", ["reference", "vendor"])
def test_a_pull_timeout_trips_the_link_in_vendor_mode_only(mode: str) -> None:
    chosen = vendor_backend if mode == "vendor" else backend
    with clusters(chosen, **ONE_PROCESS) as make:
        ns = _env(make, backend=chosen)
        key = CacheKeyByIdAndIndex(2, ns.contiguous2.cache_id, 0)
        ns.a.inject({"kind": "delay", "seconds": 0.5})
        assert kind(raises(lambda: ns.cm.pull_cache(key, ns.contiguous1))) == (LLMException, S.LLM_TIMEOUT)
        ns.a.inject({"kind": "clear"})
        after = raises(lambda: ns.cm.pull_cache(key, ns.contiguous1))
        if mode == "vendor":  # ADXL's link fast-fail: a push over the link fails at once too
            assert kind(after) == (LLMException, S.LLM_FAILED), after
            pushed = raises(lambda: ns.cm.push_cache(key, ns.contiguous1))
            assert kind(pushed) == (LLMException, S.LLM_FAILED), pushed
        else:
            assert after is None, after


def test_pull_cache_size_moves_that_many_bytes(env: SimpleNamespace) -> None:
    before = everything(env)
    env.cm.pull_cache(CacheKeyByIdAndIndex(2, env.contiguous2.cache_id, 0), env.contiguous1, size=8)
    got = changed(before, everything(env))
    assert got and all(c == 0 and hi <= 8 for c, _, _, hi in got), got
    exc = raises(lambda: env.cm.pull_cache(CacheKeyByIdAndIndex(2, env.contiguous2.cache_id), env.contiguous1,
                                           size=33))
    assert kind(exc) == INVALID, exc


def test_pull_cache_checks_in_order(env: SimpleNamespace) -> None:
    key, dst = CacheKeyByIdAndIndex(2, env.contiguous2.cache_id), env.contiguous1

    def pc(*args: Any, **kw: Any) -> Any:
        return kind(raises(lambda: env.cm.pull_cache(*args, **kw)))

    cases = [
        (pc(CacheKey(2, 1), dst), TypeError),                           # 1: the option is on: by id only
        (pc(key, None), TypeError),                                     # 2
        (pc(key, dst, -1), ValueError),                                 # 3
        (pc(key, dst, 0, 1.0), TypeError),                              # 4
        (pc(key, env.blocks1), INVALID),                                # 5
        (pc(key, dst, 0, 0), INVALID),                                  # 6
        (pc(key, dst, tensor_num_per_layer="x"), TypeError),            # 7
        (pc(key, dst, tensor_num_per_layer=0), INVALID),                # 8
        (pc(key, dst, src_layer_range=[0]), TypeError),                 # 10
        (pc(key, dst, src_layer_range=range(0, 2, 2)), INVALID),        # 10
        (pc(key, dst, src_layer_range=range(-1, 1)), INVALID),          # 10
        # order
        (pc(key, dst, -1, 1.0), ValueError),                            # 3 before 4
        (pc(key, env.blocks1, 0, 0), INVALID),                          # 5 before 6 (message below)
        (pc(key, dst, 0, 0, tensor_num_per_layer="x"), INVALID),        # 6 before 7
    ]
    assert [got for got, _ in cases] == [want for _, want in cases]
    assert "blocks" in str(raises(lambda: env.cm.pull_cache(key, env.blocks1, 0, 0)))


def test_pull_cache_native_checks_judge_the_local_side_first(env: SimpleNamespace) -> None:
    before = everything(env)
    dst = env.contiguous1
    own = raises(lambda: env.cm.pull_cache(CacheKeyByIdAndIndex(1, dst.cache_id), dst))
    assert kind(own) == INVALID and "own cluster" in str(own), own  # before the link (there is none to 1)
    assert kind(raises(lambda: env.cm.pull_cache(CacheKeyByIdAndIndex(3, 1), dst))) == (LLMException,
                                                                                        S.LLM_NOT_YET_LINK)
    assert kind(raises(lambda: env.cm.pull_cache(CacheKeyByIdAndIndex(3, 1), dst, batch_index=3))) == INVALID
    assert kind(raises(lambda: env.cm.pull_cache(CacheKeyByIdAndIndex(2, 99), dst))) == (LLMException,
                                                                                         S.LLM_KV_CACHE_NOT_EXIST)
    unequal = raises(lambda: env.cm.pull_cache(CacheKeyByIdAndIndex(2, env.contiguous2.cache_id), dst,
                                               src_layer_range=range(0, 1), dst_layer_range=range(0, 2)))
    assert kind(unequal) == INVALID, unequal
    far = raises(lambda: env.cm.pull_cache(CacheKeyByIdAndIndex(2, env.contiguous2.cache_id, 3), dst))
    assert kind(far) == INVALID and "of remote cache" in str(far), far
    assert changed(before, everything(env)) == []


def test_pull_cache_by_cache_key_with_the_option_off() -> None:
    with clusters(backend, **ONE_PROCESS) as make:
        cluster = make(llm__EnableRemoteCacheAccessible="0")
        a, b = cluster.node(1), cluster.node(2)
        src = b.cache_manager.allocate_cache(CONTIGUOUS, [CacheKey(2, 5), CacheKey(2, 6)])
        dst = a.cache_manager.allocate_cache(CONTIGUOUS)
        written = fill_random(b, src, seed=3)
        a.cache_manager.pull_cache(CacheKey(2, 6), dst, batch_index=2)  # req 6 is batch 1 of src
        got = snapshot(a, dst)
        assert all(np.array_equal(got[t][64:96], written[t][32:64]) for t in range(4))
        both = raises(lambda: a.cache_manager.pull_cache(CacheKey(2, 6, 0, 1), dst))
        assert kind(both) == INVALID, f"CacheKey with req_id and prefix_id both valid -> {both!r}"


# ---- pull_blocks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kw", [{"src_layer_range": range(0, 0), "dst_layer_range": range(0, 0)},
                                {"src_layer_range": range(2, 1)}, {"tensor_num_per_layer": 5}],
                         ids=["empty_ranges", "reversed_src", "tnpl_above_the_tensors"])
def test_pull_blocks_page_bounds_in_normal_mode_only(env: SimpleNamespace, vendor_env: SimpleNamespace,
                                                     kw: dict[str, Any]) -> None:
    """The page's bounds (an empty range names no layer; tensor_num_per_layer in [1, T]); the vendor reads both as
    every tensor."""
    before = everything(env)
    exc = raises(lambda: env.cm.pull_blocks(BlocksCacheKey(2, MODEL), env.blocks1, [1], [0], **kw))
    assert kind(exc) == INVALID, exc
    assert changed(before, everything(env)) == []
    vendor_before = everything(vendor_env)
    vendor_env.cm.pull_blocks(BlocksCacheKey(2, MODEL), vendor_env.blocks1, [1], [0], **kw)
    after = everything(vendor_env)
    assert all(np.array_equal(after[1][t][:16], vendor_before[3][t][16:32]) for t in range(4))


def test_pull_blocks_block_to_block(env: SimpleNamespace) -> None:
    before = everything(env)
    env.cm.pull_blocks(BlocksCacheKey(2, MODEL), env.blocks1, [1, 2], [0, 4])
    after = everything(env)
    for t in range(4):
        for sb, db in ((1, 0), (2, 4)):
            assert np.array_equal(after[1][t][db * 16:(db + 1) * 16], before[3][t][sb * 16:(sb + 1) * 16])
        assert np.array_equal(after[1][t][16:64], before[1][t][16:64]), t
    assert {c for c, *_ in changed(before, after)} == {1}


def test_pull_blocks_cache_to_blocks(env: SimpleNamespace) -> None:
    """A contiguous remote batch (32 bytes) into two local blocks of 16: its first half into dst_blocks[0]."""
    before = everything(env)
    env.cm.pull_blocks(CacheKeyByIdAndIndex(2, env.contiguous2.cache_id, 1), env.blocks1, [], [3, 0],
                       src_layer_range=range(1, 2), dst_layer_range=range(0, 1))
    after = everything(env)
    for t in (0, 1):
        assert np.array_equal(after[1][t][48:64], before[2][t + 2][32:48]), t
        assert np.array_equal(after[1][t][0:16], before[2][t + 2][48:64]), t
    assert {(c, t) for c, t, *_ in changed(before, after)} <= {(1, 0), (1, 1)}


def test_a_pull_by_cache_key_looks_its_source_up_live(env: SimpleNamespace) -> None:
    """A CacheKey names its source in the remote's live key table, not in the table the link synced at its first
    transfer: a cache bound after that sync is pulled by its CacheKey, while by id it stays invisible (facts
    §1.3: the peer's cache operations after the first pull are not visible)."""
    env.cm.pull_blocks(CacheKeyByIdAndIndex(2, env.contiguous2.cache_id), env.blocks1, [], [0])  # syncs the table
    late = env.b.cache_manager.allocate_cache(CONTIGUOUS, [CacheKey(2, 9)])
    written = fill_random(env.b, late, seed=4)
    env.cm.pull_blocks(CacheKey(2, 9), env.blocks1, [], [2])
    got = snapshot(env.a, env.blocks1)
    assert all(np.array_equal(got[t][32:48], written[t][0:16]) for t in range(4))
    by_id = raises(lambda: env.cm.pull_blocks(CacheKeyByIdAndIndex(2, late.cache_id), env.blocks1, [], [2]))
    assert kind(by_id) == (LLMException, S.LLM_KV_CACHE_NOT_EXIST), f"by id, after the sync -> {by_id!r}"


def test_pull_blocks_checks_in_order(env: SimpleNamespace) -> None:
    bkey, ikey, dst = BlocksCacheKey(2, MODEL), CacheKeyByIdAndIndex(2, env.contiguous2.cache_id), env.blocks1

    def pl(*args: Any, **kw: Any) -> Any:
        return kind(raises(lambda: env.cm.pull_blocks(*args, **kw)))

    cases = [
        (pl(None, dst, [0], [0]), TypeError),                               # 1
        (pl(bkey, None, [0], [0]), TypeError),                              # 1
        (pl(bkey, dst, [0], ["0"]), TypeError),                             # 1
        (pl(bkey, env.contiguous1, [0], [0]), INVALID),                     # 2
        (pl(bkey, dst, [0], []), INVALID),                                  # 3
        (pl(bkey, dst, [0], [0], tensor_num_per_layer=2 ** 32), ValueError),  # 4
        (pl(bkey, dst, [0], [0], tensor_num_per_layer=0), INVALID),         # 4
        (pl(bkey, dst, [], [0]), INVALID),                                  # 5: BlocksCacheKey needs src_blocks
        (pl(ikey, dst, [0], [0]), INVALID),                                 # 5: the others take none
        (pl(CacheKey(2, 1, 0, 1), dst, [], [0]), INVALID),                  # 5: check_cache_key
        # order
        (pl(bkey, env.contiguous1, [0], []), INVALID),                      # 2 before 3 (message below)
        (pl(bkey, dst, [], [], tensor_num_per_layer=0), INVALID),           # 3 before 4, 5
    ]
    assert [got for got, _ in cases] == [want for _, want in cases]
    assert "must be blocks" in str(raises(lambda: env.cm.pull_blocks(bkey, env.contiguous1, [0], [])))
    assert "dst_blocks" in str(raises(lambda: env.cm.pull_blocks(bkey, dst, [], [], tensor_num_per_layer=0)))


@pytest.mark.parametrize(("src_blocks", "dst_blocks", "detail"), [
    ([0], [5], "dst block index 5"),       # local blocks in range
    ([0, 1], [0], "size"),                 # equal lengths
    ([5], [0], "src block index 5"),       # remote blocks in range
])
def test_pull_blocks_native_refusals_write_nothing(env: SimpleNamespace, src_blocks: list[int],
                                                   dst_blocks: list[int], detail: str) -> None:
    before = everything(env)
    exc = raises(lambda: env.cm.pull_blocks(BlocksCacheKey(2, MODEL), env.blocks1, src_blocks, dst_blocks))
    assert kind(exc) == INVALID and detail in str(exc), (
        f"pull_blocks(BlocksCacheKey(2, {MODEL}), blocks, {src_blocks}, {dst_blocks}) -> {exc!r}")
    assert changed(before, everything(env)) == []


# ---- native calls: one per layer for push_blocks, one per pull ----------------------------------------------


def test_native_transfers_per_call(env: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    cls = type(env.cm)
    layer, pull = cls._transfer_layer, cls._pull_transfer
    monkeypatch.setattr(cls, "_transfer_layer", lambda self, a, *r: (calls.append(a.operation), layer(self, a, *r)))
    monkeypatch.setattr(cls, "_pull_transfer", lambda self, a, *r: (calls.append(a.operation), pull(self, a, *r)))
    env.cm.push_blocks(BlocksCacheKey(2, MODEL), env.blocks1, [0], [0])
    env.cm.pull_cache(CacheKeyByIdAndIndex(2, env.contiguous2.cache_id), env.contiguous1)
    env.cm.pull_blocks(BlocksCacheKey(2, MODEL), env.blocks1, [0, 1], [2, 3])
    assert calls == ["push_blocks", "push_blocks", "pull_cache", "pull_blocks"], calls


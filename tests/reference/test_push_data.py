"""Data postcondition: exactly the targeted layers x batch slice change; guard bytes and the source stay intact."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl import (
    CacheDesc,
    CacheKey,
    CacheKeyByIdAndIndex,
    DataType,
    LLMException,
    LLMStatusCode,
    Placement,
)
from reference_impl.backend import backend, vendor_backend
from tests.helpers.data import fill_random
from tests.helpers.nodes import ONE_PROCESS, clusters, relink

S = LLMStatusCode
GUARD = 64
SENTINEL = 0xA5


class Registered:
    """A cache registered into raw memory, each tensor surrounded by GUARD sentinel bytes."""

    def __init__(self, node: Any, desc: CacheDesc, fill: int | None = SENTINEL, seed: int = 0) -> None:
        self.node, self.desc = node, desc
        n = desc.size
        self.regions = []
        for _ in range(desc.num_tensors):
            base = node.alloc_memory(desc.placement.name, n + 2 * GUARD)
            if fill is None:
                data = np.random.default_rng(seed + base % 9973).integers(0, 256, n + 2 * GUARD, dtype=np.uint8)
            else:
                data = np.full(n + 2 * GUARD, fill, np.uint8)
            node.write_memory(base, data)
            self.regions.append(base)
        addrs = [b + GUARD for b in self.regions]
        self.cache = node.cache_manager.register_cache(desc, addrs, remote_accessible=True)

    def region_bytes(self) -> list[np.ndarray]:
        return [self.node.read_memory(b, self.desc.size + 2 * GUARD) for b in self.regions]


def expected_after(src: list[np.ndarray], dst: list[np.ndarray], src_stride: int, dst_stride: int, tnpl: int,
                   sb: int, db: int, pairs: list[tuple[int, int]]) -> list[np.ndarray]:
    """Model of the destination regions (guards included) after pushing ``pairs`` of (src layer, dst layer)."""
    out = [r.copy() for r in dst]
    for sl, dl in pairs:
        for j in range(tnpl):
            s = src[sl * tnpl + j][GUARD + sb * src_stride: GUARD + (sb + 1) * src_stride]
            d0 = GUARD + db * dst_stride
            out[dl * tnpl + j][d0:d0 + src_stride] = s
    return out


def _env(on: Any) -> Iterator[SimpleNamespace]:
    """A linked pair on the backend ``on``, closed when the module ends."""
    with clusters(on, **ONE_PROCESS) as make_cluster:
        cluster = make_cluster()
        yield SimpleNamespace(cluster=cluster, a=cluster.node(1), b=cluster.node(2),
                              relink=lambda: relink(cluster))


@pytest.fixture(scope="module")
def env() -> Iterator[SimpleNamespace]:
    """One linked pair for the module; call ``env.relink()`` after creating destination caches on node 2.

    The link syncs node 2's cache table at its first push only, so later destinations need a fresh link.
    """
    yield from _env(backend)


@pytest.fixture(scope="module")
def vendor_env() -> Iterator[SimpleNamespace]:
    """The same, in vendor mode (reference_impl.vendor)."""
    yield from _env(vendor_backend)


DTYPES = [DataType.DT_INT8, DataType.DT_FLOAT16, DataType.DT_FLOAT, DataType.DT_DOUBLE, DataType.DT_BF16]


@st.composite
def scenarios(draw: st.DrawFn, equal_ranges: bool = True) -> dict[str, Any]:
    """A push whose source entry fits the destination's; ``equal_ranges`` False also draws shifted ranges."""
    tnpl = draw(st.integers(1, 3))
    src_layers = draw(st.integers(1, 4))
    dst_layers = draw(st.integers(1, 4))
    batch = draw(st.integers(1, 4))
    dst_batch = draw(st.integers(1, 4))
    inner = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    dst_extra = draw(st.integers(0, 2))  # dst per-batch stride >= src stride
    n = draw(st.integers(1, min(src_layers, dst_layers)))
    if equal_ranges:  # the documentation: src_layer_range and dst_layer_range the same value
        s0 = d0 = draw(st.integers(0, min(src_layers, dst_layers) - n))
    else:
        s0 = draw(st.integers(0, src_layers - n))
        d0 = draw(st.integers(0, dst_layers - n))
    default = draw(st.booleans()) and src_layers == dst_layers
    return {
        "tnpl": tnpl, "src_layers": src_layers, "dst_layers": dst_layers, "batch": batch, "dst_batch": dst_batch,
        "inner": inner, "dst_inner": inner[:-1] + [inner[-1] + dst_extra] if inner else [1 + dst_extra],
        "dtype": draw(st.sampled_from(DTYPES)), "sb": draw(st.integers(0, batch - 1)),
        "db": draw(st.integers(0, dst_batch - 1)),
        "src_range": None if default else range(s0, s0 + n), "dst_range": None if default else range(d0, d0 + n),
        "src_place": draw(st.sampled_from([Placement.DEVICE, Placement.HOST])),
        "dst_place": draw(st.sampled_from([Placement.DEVICE, Placement.HOST])),
    }


@settings(max_examples=120, deadline=None)
@given(scenarios())
def test_push_moves_exactly_the_slice(env: SimpleNamespace, sc: dict[str, Any]) -> None:
    check_push_moves_exactly_the_slice(env, sc)


@settings(max_examples=60, deadline=None)
@given(scenarios(equal_ranges=False))
def test_vendor_push_moves_src_i_to_dst_i(vendor_env: SimpleNamespace, sc: dict[str, Any]) -> None:
    """Vendor mode: shifted ranges too; where the source entry fits, the same bytes as the reference."""
    check_push_moves_exactly_the_slice(vendor_env, sc)


def check_push_moves_exactly_the_slice(env: SimpleNamespace, sc: dict[str, Any]) -> None:
    tnpl = sc["tnpl"]
    src_shape = [sc["batch"]] + sc["inner"]
    dst_shape = [sc["dst_batch"]] + (sc["dst_inner"] if sc["inner"] else [sc["dst_inner"][0]])
    if not sc["inner"]:
        src_shape = [sc["batch"], 1]
    sdesc = CacheDesc(sc["src_layers"] * tnpl, src_shape, sc["dtype"], sc["src_place"])
    ddesc = CacheDesc(sc["dst_layers"] * tnpl, dst_shape, sc["dtype"], sc["dst_place"])
    src = Registered(env.a, sdesc, fill=None, seed=sc["sb"])
    dst = Registered(env.b, ddesc)
    env.relink()
    src_stride, dst_stride = sdesc.size // src_shape[0], ddesc.size // dst_shape[0]
    assert src_stride <= dst_stride
    src_before, dst_before = src.region_bytes(), dst.region_bytes()
    env.a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache.cache_id, sc["db"]), src.cache, sc["sb"],
                                   sc["src_range"], sc["dst_range"], -1, tnpl)
    sr = sc["src_range"] or range(sc["src_layers"])
    dr = sc["dst_range"] or range(sc["src_layers"])
    want = expected_after(src_before, dst_before, src_stride, dst_stride, tnpl, sc["sb"], sc["db"],
                          list(zip(sr, dr, strict=True)))
    for t, (got, exp) in enumerate(zip(dst.region_bytes(), want, strict=True)):
        assert np.array_equal(got, exp), f"dst tensor {t} differs at {np.flatnonzero(got != exp)[:8]}"
    for got, exp in zip(src.region_bytes(), src_before, strict=True):
        assert np.array_equal(got, exp), "source changed"


def test_default_push_all_layers_pool_caches(env: SimpleNamespace) -> None:
    d = CacheDesc(6, [3, 5], DataType.DT_FLOAT)
    src = env.a.cache_manager.allocate_cache(d)
    dst = env.b.cache_manager.allocate_cache(d)
    env.relink()
    data = fill_random(env.a, src, seed=3)
    env.a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id, 2), src, 1)
    for t in range(6):
        got = env.b.read_tensor(dst, t)
        assert np.array_equal(got[40:60], data[t][20:40]) and not got[:40].any()


def test_smaller_source_stride_writes_prefix_only(env: SimpleNamespace) -> None:
    src = Registered(env.a, CacheDesc(2, [2, 4], DataType.DT_INT8), fill=7)
    dst = Registered(env.b, CacheDesc(2, [2, 10], DataType.DT_INT8))
    env.relink()
    env.a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache.cache_id, 1), src.cache, 1)
    region = dst.region_bytes()[1]
    assert region[GUARD + 10:GUARD + 14].tolist() == [7] * 4
    assert (region[GUARD + 14:] == SENTINEL).all() and (region[:GUARD + 10] == SENTINEL).all()


def test_larger_source_stride_rejected_before_any_byte(env: SimpleNamespace) -> None:
    src = Registered(env.a, CacheDesc(4, [2, 16], DataType.DT_INT8), fill=7)
    dst = Registered(env.b, CacheDesc(4, [2, 8], DataType.DT_INT8))
    env.relink()
    before = dst.region_bytes()
    with pytest.raises(LLMException) as info:
        env.a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache.cache_id, 1), src.cache)
    assert info.value.status_code == S.LLM_PARAM_INVALID
    assert all(np.array_equal(x, y) for x, y in zip(before, dst.region_bytes(), strict=True))


@pytest.mark.parametrize("mode", ["reference", "vendor"])
def test_different_ranges_map_src_i_to_dst_i(env: SimpleNamespace, vendor_env: SimpleNamespace, mode: str) -> None:
    """Documentation: the ranges must have the same value (refused, nothing written); vendor: src[i] -> dst[i]."""
    e = vendor_env if mode == "vendor" else env
    src = Registered(e.a, CacheDesc(6, [1, 4], DataType.DT_INT8), fill=None)
    dst = Registered(e.b, CacheDesc(6, [1, 4], DataType.DT_INT8))
    e.relink()
    s_before = src.region_bytes()
    args = (CacheKeyByIdAndIndex(2, dst.cache.cache_id), src.cache, 0, range(0, 2), range(1, 3))
    if mode == "reference":
        with pytest.raises(LLMException, match="must have the same value") as info:
            e.a.cache_manager.push_cache(*args)
        assert info.value.status_code == S.LLM_PARAM_INVALID
        assert all((g == SENTINEL).all() for g in dst.region_bytes())
        return
    e.a.cache_manager.push_cache(*args)
    got = dst.region_bytes()
    for sl, dl in ((0, 1), (1, 2)):
        for j in range(2):
            assert np.array_equal(got[dl * 2 + j][GUARD:GUARD + 4], s_before[sl * 2 + j][GUARD:GUARD + 4])
    assert (got[0] == SENTINEL).all() and (got[1] == SENTINEL).all()


def test_partial_push_keeps_earlier_layers(env: SimpleNamespace) -> None:
    """Layers before a failing layer stay written (no rollback); later ones are not written."""
    src = Registered(env.a, CacheDesc(8, [1, 4], DataType.DT_INT8), fill=3)
    dst = Registered(env.b, CacheDesc(4, [1, 4], DataType.DT_INT8))  # only 2 layers
    env.relink()
    with pytest.raises(LLMException, match="layer index") as info:
        env.a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache.cache_id), src.cache, 0, range(0, 4),
                                       range(0, 4))
    assert info.value.status_code == S.LLM_PARAM_INVALID
    got = dst.region_bytes()
    assert all((g[GUARD:GUARD + 4] == 3).all() for g in got)  # layers 0 and 1 landed


def test_src_range_past_local_layers_fails_at_that_layer(env: SimpleNamespace) -> None:
    src = Registered(env.a, CacheDesc(4, [1, 4], DataType.DT_INT8), fill=3)
    dst = Registered(env.b, CacheDesc(8, [1, 4], DataType.DT_INT8))
    env.relink()
    with pytest.raises(LLMException) as info:
        env.a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache.cache_id), src.cache, 0, range(1, 3),
                                       range(1, 3))
    assert info.value.status_code == S.LLM_PARAM_INVALID
    got = dst.region_bytes()
    assert (got[2][GUARD:GUARD + 4] == 3).all() and (got[4] == SENTINEL).all()


def test_cache_id_zero_uses_key_fallback(env: SimpleNamespace) -> None:
    d = CacheDesc(2, [2, 4], DataType.DT_INT8)
    src = env.a.cache_manager.allocate_cache(d)
    fill_random(env.a, src, seed=9)
    with pytest.raises(LLMException) as info:
        env.a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, 0), src)
    assert info.value.status_code == S.LLM_KV_CACHE_NOT_EXIST
    dst = env.b.cache_manager.allocate_cache(d, [CacheKey(2, 0, 0)])
    env.relink()
    env.a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, 0, 1), src)
    assert np.array_equal(env.b.read_tensor(dst, 1)[4:], env.a.read_tensor(src, 1)[:4])
    env.b.cache_manager.deallocate_cache(dst)

"""push_cache argument checks: signature, domains, Python-layer order (facts §1.2), the vendor's own cases."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl import (
    BlocksCacheKey,
    Cache,
    CacheDesc,
    CacheKey,
    CacheKeyByIdAndIndex,
    DataType,
    LLMException,
    LLMStatusCode,
    Placement,
)
from reference_impl.backend import backend
from tests.helpers.data import fill_random, snapshot
from tests.helpers.nodes import ONE_PROCESS, clusters, node_options, relink

S = LLMStatusCode


@pytest.fixture(scope="module")
def env() -> Iterator[SimpleNamespace]:
    with clusters(backend, **ONE_PROCESS) as make_cluster:
        cluster = make_cluster()
        a, b = cluster.node(1), cluster.node(2)
        d = CacheDesc(4, [2, 8], DataType.DT_FLOAT16)
        ns = SimpleNamespace(
            cluster=cluster, a=a, b=b, cm=a.cache_manager,
            src=a.cache_manager.allocate_cache(d), dst=b.cache_manager.allocate_cache(d),
            blocks=a.cache_manager.allocate_blocks_cache(d),
        )
        ns.key = CacheKeyByIdAndIndex(2, ns.dst.cache_id, 0)
        yield ns


def call(env: SimpleNamespace, **kw: Any) -> None:
    args: dict[str, Any] = {"dst_cache_key": env.key, "src_cache": env.src}
    args.update(kw)
    env.cm.push_cache(**args)


def raised(env: SimpleNamespace, **kw: Any) -> BaseException | None:
    try:
        call(env, **kw)
    except (TypeError, ValueError, LLMException) as exc:
        return exc
    return None


def test_signature() -> None:
    from reference_impl import CacheManager

    params = list(inspect.signature(CacheManager.push_cache).parameters.values())
    assert [p.name for p in params] == ["self", "dst_cache_key", "src_cache", "src_batch_index", "src_layer_range",
                                        "dst_layer_range", "size", "tensor_num_per_layer"]
    assert [p.default for p in params[3:]] == [0, None, None, -1, 2]
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)


def test_positional_call_and_unknown_keyword(env: SimpleNamespace) -> None:
    assert env.cm.push_cache(env.key, env.src, 0, range(0, 1), range(0, 1), -1, 2) is None
    with pytest.raises(TypeError, match="unexpected keyword"):
        call(env, stream=None)
    with pytest.raises(TypeError):
        env.cm.push_cache(env.key, env.src, 0, None, None, -1, 2, 0)


def test_requires_remote_cache_accessible(make_cluster: Any) -> None:
    """Option off: well-typed arguments are refused with LLM_PARAM_INVALID; wrong types still raise TypeError
    (the documentation's Returns; the vendor checks the option first, see test_vendor_mode)."""
    opts = node_options(**ONE_PROCESS, llm__EnableRemoteCacheAccessible="0")
    cluster = make_cluster({"cluster_id": 1, "role": "MIX", "options": opts}, link=())
    cm = cluster.node(1).cache_manager
    with pytest.raises(TypeError, match="dst_cache_key"):
        cm.push_cache(None, None, "garbage", 5, 5, "x", None)
    src = cm.allocate_cache(CacheDesc(4, [2, 8], DataType.DT_FLOAT16))
    with pytest.raises(LLMException, match="enable_remote_cache_accessible") as info:
        cm.push_cache(CacheKeyByIdAndIndex(2, 1), src)
    assert info.value.status_code == S.LLM_PARAM_INVALID


@pytest.mark.parametrize(("kw", "exc", "match"), [
    ({"dst_cache_key": None}, TypeError, r"dst_cache_key only support \['CacheKeyByIdAndIndex'\]"),
    ({"dst_cache_key": CacheKey(2, 1)}, TypeError, "dst_cache_key"),
    ({"dst_cache_key": BlocksCacheKey(2)}, TypeError, "dst_cache_key"),
    ({"dst_cache_key": (2, 1, 0)}, TypeError, "dst_cache_key"),
    ({"src_cache": None}, TypeError, r"src_cache only support \['Cache'\]"),
    ({"src_cache": "cache"}, TypeError, "src_cache"),
    ({"src_batch_index": -1}, ValueError, "src_batch_index's value is out of range,-1 is not a uint32 value."),
    ({"src_batch_index": 2**32}, ValueError, "src_batch_index"),
    ({"src_batch_index": 1.0}, TypeError, "src_batch_index"),
    ({"src_batch_index": None}, TypeError, "src_batch_index"),
    ({"src_batch_index": "0"}, TypeError, "src_batch_index"),
    ({"tensor_num_per_layer": -1}, ValueError, "tensor_num_per_layer"),
    ({"tensor_num_per_layer": 2**32}, ValueError, "tensor_num_per_layer"),
    ({"tensor_num_per_layer": None}, TypeError, "tensor_num_per_layer"),
    ({"tensor_num_per_layer": 0}, LLMException, r"tensor_num_per_layer \(0\) is invalid, should \[1, 4\]"),
    ({"tensor_num_per_layer": 5}, LLMException, r"tensor_num_per_layer \(5\) is invalid"),
    ({"src_layer_range": [0, 1]}, TypeError, r"src_layer_range only support \['range'\]"),
    ({"src_layer_range": (0, 1)}, TypeError, "src_layer_range"),
    ({"src_layer_range": range(0, 2, 2)}, LLMException, r"src_layer_range.step == 1"),
    ({"src_layer_range": range(1, 0, -1)}, LLMException, "step"),
    ({"src_layer_range": range(0, 0)}, LLMException, r"0 <= range.start < range.stop failed"),
    ({"src_layer_range": range(-1, 1)}, LLMException, "range.start"),
    ({"dst_layer_range": [0]}, TypeError, "dst_layer_range"),
    ({"dst_layer_range": range(0, 2, 2)}, LLMException, "dst_layer_range.step"),
    ({"dst_layer_range": range(3, 3)}, LLMException, "dst_layer_range"),
    ({"src_layer_range": range(0, 1)}, LLMException, "should be equal"),
    ({"src_layer_range": range(0, 1), "dst_layer_range": range(0, 2)}, LLMException, "should be equal"),
    ({"size": -1.0}, TypeError, "size"),
    ({"size": None}, TypeError, "size"),
    ({"size": 2**63}, ValueError, "size"),
    ({"size": 0}, LLMException, r"size \(0\) is invalid, should be = -1"),
    ({"size": 16}, LLMException, "size"),
    ({"size": -2}, LLMException, "size"),
])
def test_python_layer_domains(env: SimpleNamespace, kw: dict[str, Any], exc: type[Exception], match: str) -> None:
    before = env.b.read_tensor(env.dst, 0)
    with pytest.raises(exc, match=match) as info:
        call(env, **kw)
    if exc is LLMException:
        assert info.value.status_code == S.LLM_PARAM_INVALID  # type: ignore[attr-defined]
    assert np.array_equal(env.b.read_tensor(env.dst, 0), before)


@pytest.mark.parametrize("which", ["blocks", "cpu"])
def test_blocks_source_rejected(env: SimpleNamespace, which: str) -> None:
    src = env.blocks if which == "blocks" else Cache.create_cpu_cache(
        CacheDesc(4, [2, 8], DataType.DT_FLOAT16, Placement.HOST), [1, 2, 3, 4])
    with pytest.raises(LLMException, match="blocks cache") as info:
        call(env, src_cache=src)
    assert info.value.status_code == S.LLM_PARAM_INVALID


def test_tnpl_above_num_tensors_pushes_nothing(env: SimpleNamespace) -> None:
    """Documentation: tensor_num_per_layer in [1, num_tensors] (the vendor silently pushes nothing)."""
    fill_random(env.a, env.src, seed=5)
    before = snapshot(env.b, env.dst)
    for tnpl in (5, 100):
        with pytest.raises(LLMException) as info:
            call(env, tensor_num_per_layer=tnpl)
        assert info.value.status_code == S.LLM_PARAM_INVALID
    assert all(np.array_equal(x, y) for x, y in zip(before, snapshot(env.b, env.dst), strict=True))


class TestOrderingConsequences:
    def test_range_before_size(self, env: SimpleNamespace) -> None:
        with pytest.raises(LLMException, match="step"):
            call(env, src_layer_range=range(0, 2, 2), size=7)

    def test_length_before_size(self, env: SimpleNamespace) -> None:
        with pytest.raises(LLMException, match="should be equal"):
            call(env, src_layer_range=range(0, 1), size=7)

    def test_batch_index_before_blocks(self, env: SimpleNamespace) -> None:
        with pytest.raises(ValueError):
            call(env, src_cache=env.blocks, src_batch_index=-1)

    def test_python_checks_before_native(self, env: SimpleNamespace) -> None:
        with pytest.raises(LLMException, match="size"):
            call(env, dst_cache_key=CacheKeyByIdAndIndex(77, 999), size=3)

    def test_batch_index_upper_bound_is_native(self, env: SimpleNamespace) -> None:
        with pytest.raises(LLMException, match="batch index") as info:
            call(env, src_batch_index=99)
        assert info.value.status_code == S.LLM_PARAM_INVALID


# ---- order property: with several bad arguments, the first check in facts §1.2 order reports -------------
SRC_RANGES: list[Any] = [None, range(0, 1), [0], range(0, 2, 2)]
DST_RANGES: list[Any] = [None, range(0, 1), range(1, 2), range(0, 2), [0], range(0, 2, 2)]


def _oracle(c: dict[str, Any]) -> tuple[type[BaseException], str] | None:
    """The reference's order: the vendor's checks #2..#13, then the option (#1), then the documentation's."""
    if c["key"]:
        return TypeError, "dst_cache_key"
    if c["src"] == "type":
        return TypeError, "src_cache"
    if c["batch"] == "neg":
        return ValueError, "src_batch_index"
    if c["batch"] == "float":
        return TypeError, "src_batch_index"
    if c["src"] == "blocks":
        return LLMException, "blocks cache"
    if c["tnpl"] == "float":
        return TypeError, "tensor_num_per_layer"
    if c["tnpl"] == "zero":
        return LLMException, "tensor_num_per_layer (0)"
    for name, r in (("src_layer_range", c["sr"]), ("dst_layer_range", c["dr"])):
        if isinstance(r, list):
            return TypeError, name
        if isinstance(r, range) and r.step != 1:
            return LLMException, f"{name}.step"
    tnpl = 99 if c["tnpl"] == "big" else 2
    layers = 4 // tnpl
    sr = c["sr"] if c["sr"] is not None else range(0, layers)
    dr = c["dr"] if c["dr"] is not None else range(0, layers)
    if len(sr) != len(dr):
        return LLMException, "should be equal"
    if c["size"] == "float":
        return TypeError, "size"
    if c["size"] == "bad":
        return LLMException, "size (16)"
    if c["off"]:
        return LLMException, "enable_remote_cache_accessible"
    if tnpl > 4:
        return LLMException, "tensor_num_per_layer (99)"
    if sr != dr:
        return LLMException, "must have the same value"
    return None


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries({
    "off": st.booleans(), "key": st.booleans(), "src": st.sampled_from([None, "type", "blocks"]),
    "batch": st.sampled_from([None, "neg", "float"]), "tnpl": st.sampled_from([None, "float", "zero", "big"]),
    "sr": st.sampled_from(SRC_RANGES), "dr": st.sampled_from(DST_RANGES),
    "size": st.sampled_from([None, "float", "bad"]),
}))
def test_first_failing_check_reports(env: SimpleNamespace, c: dict[str, Any]) -> None:
    kw: dict[str, Any] = {
        "dst_cache_key": CacheKey(2, 1) if c["key"] else env.key,
        "src_cache": {None: env.src, "type": object(), "blocks": env.blocks}[c["src"]],
        "src_batch_index": {None: 1, "neg": -1, "float": 1.0}[c["batch"]],
        "tensor_num_per_layer": {None: 2, "float": 2.0, "zero": 0, "big": 99}[c["tnpl"]],
        "src_layer_range": c["sr"], "dst_layer_range": c["dr"],
        "size": {None: -1, "float": -1.0, "bad": 16}[c["size"]],
    }
    env.cm._enable_remote_cache_accessible = not c["off"]
    try:
        exc = raised(env, **kw)
    finally:
        env.cm._enable_remote_cache_accessible = True
    want = _oracle(c)
    if want is None:
        assert exc is None, f"{kw} raised {exc!r}"
        return
    assert type(exc) is want[0] and want[1] in str(exc), f"{kw}: want {want}, got {exc!r}"
    if isinstance(exc, LLMException):
        assert exc.status_code == S.LLM_PARAM_INVALID


# ---- the vendor's own test case (test_push_cache_with_tensor_number) ---------------------------------------
@pytest.mark.parametrize(("tnpl", "exc"), [
    (2, None), (1, None), (5, None), (-1, ValueError), (0, LLMException), (3, LLMException), (2.0, TypeError),
    ("x", TypeError),
])
def test_vendor_tensor_number_case(env: SimpleNamespace, tnpl: Any,
                                   exc: type[Exception] | None) -> None:
    d10 = CacheDesc(10, [2, 4], DataType.DT_INT8)
    src = env.a.cache_manager.allocate_cache(d10)
    dst = env.b.cache_manager.allocate_cache(d10)
    relink(env.cluster)  # dst was allocated after earlier pushes over the module's link
    try:
        args = (CacheKeyByIdAndIndex(2, dst.cache_id, 0), src, 0, range(0, 1), range(0, 1), -1, tnpl)
        if exc is None:
            env.cm.push_cache(*args)
        else:
            with pytest.raises(exc) as info:
                env.cm.push_cache(*args)
            if exc is LLMException:
                assert info.value.status_code == S.LLM_PARAM_INVALID  # type: ignore[attr-defined]
    finally:
        env.a.cache_manager.deallocate_cache(src)
        env.b.cache_manager.deallocate_cache(dst)

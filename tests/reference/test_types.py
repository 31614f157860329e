"""Types and constructors: status codes, enums, check helpers, CacheDesc, keys, Cache."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl import (
    BlocksCacheKey,
    Cache,
    CacheDesc,
    CacheKey,
    CacheKeyByIdAndIndex,
    DataType,
    LLMException,
    LLMRole,
    LLMStatusCode,
    Placement,
)
from reference_impl.checks import check_int64, check_uint32, check_uint64

S = LLMStatusCode


def test_status_code_values() -> None:
    assert S.LLM_SUCCESS == 0
    assert S.LLM_FAILED == 0xFFFFFFFF
    assert S.LLM_PARAM_INVALID == 1343270917
    assert S.LLM_KV_CACHE_NOT_EXIST == 1343270914
    assert S.LLM_NOT_YET_LINK == 1343270919
    assert S.LLM_TIMEOUT == 1343270938
    assert S.LLM_OUT_OF_MEMORY == 1343270940
    assert S.LLM_FEATURE_NOT_ENABLED == 1343270937
    assert S.LLM_EXIST_LINK == 1343270936
    assert S.LLM_DEVICE_MEM_ERROR == 507053
    assert S.LLM_SUSPECT_REMOTE_ERROR == 507057
    assert S.LLM_UNKNOWN_ERROR == -1
    assert len(S) == 29
    assert str(S.LLM_PARAM_INVALID) == "LLMStatusCode.LLM_PARAM_INVALID"


def test_llm_exception() -> None:
    e = LLMException("boom", status_code=S.LLM_TIMEOUT)
    assert isinstance(e, RuntimeError)
    assert e.status_code == S.LLM_TIMEOUT and str(e) == "boom"
    assert LLMException("x").status_code == S.LLM_SUCCESS
    with pytest.raises(AttributeError):
        e.status_code = S.LLM_FAILED  # type: ignore[misc]


def test_enums() -> None:
    assert (Placement.HOST, Placement.DEVICE) == (0, 1)
    assert (LLMRole.PROMPT, LLMRole.DECODER, LLMRole.MIX) == (1, 2, 3)
    values = {d.name: d.value for d in DataType}
    assert values == {"DT_FLOAT": 0, "DT_FLOAT16": 1, "DT_BF16": 27, "DT_INT8": 2, "DT_INT16": 6,
                      "DT_UINT16": 7, "DT_UINT8": 4, "DT_INT32": 3, "DT_INT64": 9, "DT_UINT32": 8,
                      "DT_UINT64": 10, "DT_BOOL": 12, "DT_DOUBLE": 11, "DT_STRING": 13}
    sizes = {d.name: d.itemsize for d in DataType}
    assert sizes["DT_FLOAT"] == 4 and sizes["DT_BF16"] == 2 and sizes["DT_BOOL"] == 1
    assert sizes["DT_DOUBLE"] == 8 and sizes["DT_STRING"] == 16


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_integer_checks_domains(v: int) -> None:
    for check, lo, hi in ((check_uint32, 0, 2**32 - 1), (check_int64, -(2**63), 2**63 - 1),
                          (check_uint64, 0, 2**64 - 1)):
        if lo <= v <= hi:
            check("x", v)
        else:
            with pytest.raises(ValueError, match="out of range"):
                check("x", v)


@pytest.mark.parametrize("bad", [None, 1.0, "1", [1], object()])
def test_integer_checks_types(bad: object) -> None:
    with pytest.raises(TypeError, match=r"x only support \['int'\]"):
        check_uint32("x", bad)


def test_bool_counts_as_int() -> None:
    check_uint32("x", True)
    assert CacheKeyByIdAndIndex(True, False).cluster_id is True


class TestCacheDesc:
    def test_properties(self) -> None:
        shape = [4, 3, 2]
        d = CacheDesc(2, shape, DataType.DT_FLOAT16)
        assert d.placement == Placement.DEVICE and d.batch_size == 4 and d.size == 48
        assert d.shape is shape and d.seq_len_dim_index == -1 and d.batch_dim == 0

    @pytest.mark.parametrize(("kwargs", "exc"), [
        ({"num_tensors": "2"}, TypeError),
        ({"num_tensors": -1}, ValueError),
        ({"num_tensors": None}, TypeError),
        ({"shape": 8}, TypeError),
        ({"shape": [2, 1.0]}, TypeError),
        ({"data_type": 1}, TypeError),
        ({"placement": 1}, TypeError),
        ({"batch_dim_index": 1.0}, TypeError),
        ({"seq_len_dim_index": 2**31}, ValueError),
        ({"kv_tensor_format": 1}, TypeError),
        ({"batch_dim_index": 2}, LLMException),
        ({"shape": []}, LLMException),
        ({"seq_len_dim_index": 2}, LLMException),
        ({"shape": [2, 2**63]}, ValueError),
    ])
    def test_validation(self, kwargs: dict[str, object], exc: type[Exception]) -> None:
        args: dict[str, object] = {"num_tensors": 2, "shape": [2, 4], "data_type": DataType.DT_INT8}
        args.update(kwargs)
        with pytest.raises(exc) as info:
            CacheDesc(**args)  # type: ignore[arg-type]
        if exc is LLMException:
            assert info.value.status_code == S.LLM_PARAM_INVALID  # type: ignore[attr-defined]

    def test_order_num_tensors_before_shape(self) -> None:
        with pytest.raises(ValueError):
            CacheDesc(-1, "bad", 3)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="data_type"):
            CacheDesc(1, [], 3)  # type: ignore[arg-type]

    def test_zero_num_tensors_and_dims_pass_python(self) -> None:
        assert CacheDesc(0, [0, -1], DataType.DT_INT8).num_tensors == 0


class TestKeys:
    def test_by_id_and_index(self) -> None:
        k = CacheKeyByIdAndIndex(2, -5, 3)
        assert (k.cluster_id, k.cache_id, k.batch_index) == (2, -5, 3)
        assert repr(k) == "CacheKeyByIdAndIndex(cluster_id=2, cache_id=-5, batch_index=3)"
        assert CacheKeyByIdAndIndex(2, 1).batch_index == 0

    @pytest.mark.parametrize(("args", "exc"), [
        ((-1, 1), ValueError), ((2**64, 1), ValueError), (("1", 1), TypeError), ((None, 1), TypeError),
        ((1, 2**63), ValueError), ((1, 1.0), TypeError), ((1, 1, -1), ValueError), ((1, 1, 2**32), ValueError),
        ((1, 1, None), TypeError),
    ])
    def test_by_id_and_index_errors(self, args: tuple[object, ...], exc: type[Exception]) -> None:
        with pytest.raises(exc):
            CacheKeyByIdAndIndex(*args)  # type: ignore[arg-type]

    def test_cache_key(self) -> None:
        k = CacheKey(1, 7)
        assert (k.prompt_cluster_id, k.req_id, k.model_id, k.prefix_id) == (1, 7, 0, 2**64 - 1)
        assert CacheKey(prompt_cluster_id=1, req_id=2, model_id=3) == CacheKey(1, 2, 3)

    @pytest.mark.parametrize(("args", "kwargs", "exc"), [
        ((1, 2, 3, 4, 5), {}, LLMException),
        ((1,), {}, LLMException),
        ((), {"req_id": 1}, LLMException),
        ((1, 2), {"foo": 1}, LLMException),
        ((1, -2), {}, ValueError),
        ((1, "2"), {}, TypeError),
    ])
    def test_cache_key_errors(self, args: tuple[object, ...], kwargs: dict[str, object],
                              exc: type[Exception]) -> None:
        with pytest.raises(exc):
            CacheKey(*args, **kwargs)

    def test_blocks_cache_key(self) -> None:
        assert BlocksCacheKey(3).model_id == 0
        assert BlocksCacheKey(prompt_cluster_id=3, model_id=2).cluster_id == 3
        with pytest.raises(LLMException):
            BlocksCacheKey(1, 2, 3)
        with pytest.raises(TypeError, match="^The first param"):
            BlocksCacheKey("1")


class TestCpuCache:
    def test_create(self) -> None:
        desc = CacheDesc(2, [4, 4], DataType.DT_INT8, Placement.HOST)
        c = Cache.create_cpu_cache(desc, [0x1000, 0x2000])
        assert c.cache_id == -1 and c.is_blocks_cache and c.tensor_addrs == [0x1000, 0x2000]

    def test_errors(self) -> None:
        with pytest.raises(LLMException):
            Cache.create_cpu_cache(CacheDesc(1, [4], DataType.DT_INT8), [1])
        with pytest.raises(LLMException):
            Cache.create_cpu_cache(CacheDesc(2, [4], DataType.DT_INT8, Placement.HOST), [1])
        with pytest.raises(TypeError):
            Cache.create_cpu_cache(CacheDesc(1, [4], DataType.DT_INT8, Placement.HOST), (1,))  # type: ignore[arg-type]

"""Memory, pools and placements; allocate/register/deallocate of contiguous and blocks caches."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from reference_impl import (
    BlocksCacheKey,
    Cache,
    CacheDesc,
    CacheKey,
    DataType,
    LLMException,
    LLMStatusCode,
    Placement,
)
from reference_impl.memory import DEVICE_BASE, HOST_BASE
from reference_impl.pool import MemoryPool, PoolConfig
from tests.helpers.nodes import ONE_PROCESS, node_options, pool

S = LLMStatusCode
D = Placement.DEVICE
H = Placement.HOST


def desc(num_tensors: int = 2, shape: list[int] | None = None, placement: Placement = D,
         dt: DataType = DataType.DT_INT8) -> CacheDesc:
    return CacheDesc(num_tensors, shape or [4, 16], dt, placement)


def status_of(fn: Any, *args: Any, **kwargs: Any) -> LLMStatusCode:
    with pytest.raises(LLMException) as info:
        fn(*args, **kwargs)
    return info.value.status_code


class TestPool:
    def _pool(self, pages: int = 8, shift: int = 10) -> MemoryPool:
        from reference_impl.memory import MemorySpace

        return MemoryPool(MemorySpace(D, DEVICE_BASE), PoolConfig(pages << shift, shift))

    def test_first_fit_rounding_and_merge(self) -> None:
        p = self._pool()
        a = p.allocate(1)
        b = p.allocate(1025)  # two pages
        c = p.allocate(1024)
        assert (b - a, c - b) == (1024, 2048)
        p.free(b)
        assert p.allocate(10) == b  # first fit reuses the hole
        p.free(a)
        p.free(c)
        p.free(b)
        assert p.free_bytes == 8 * 1024
        assert p.allocate(8 * 1024) == a  # runs merged back into one
        assert status_of(p.allocate, 1) == S.LLM_OUT_OF_MEMORY

    def test_free_unknown(self) -> None:
        with pytest.raises(ValueError):
            self._pool().free(DEVICE_BASE + 5)


class TestAllocate:
    def test_ids_and_addresses(self, pair: Any) -> None:
        a, b = pair.node(1), pair.node(2)
        c1 = a.cache_manager.allocate_cache(desc())
        raw = a.alloc_memory("HOST", 1 << 12)
        c2 = a.cache_manager.register_cache(desc(1, [4, 4], H), [raw])
        c3 = a.cache_manager.allocate_blocks_cache(desc(placement=H))
        assert (c1.cache_id, c2.cache_id, c3.cache_id) == (1, 2, 3)
        assert b.cache_manager.allocate_cache(desc()).cache_id == 1  # one counter per node
        assert DEVICE_BASE <= c1.tensor_addrs[0] < HOST_BASE <= raw
        assert c1.tensor_addrs[1] - c1.tensor_addrs[0] == 64
        assert not c1.is_blocks_cache and c3.is_blocks_cache
        b_addr = b.cache_manager.allocate_cache(desc()).tensor_addrs[0]
        assert b_addr != c1.tensor_addrs[0]  # nodes have distinct address ranges
        with pytest.raises(ValueError):
            a.read_memory(b_addr, 1)

    def test_argument_errors(self, pair: Any) -> None:
        cm = pair.node(1).cache_manager
        with pytest.raises(TypeError):
            cm.allocate_cache(None)
        with pytest.raises(TypeError):
            cm.allocate_cache(desc(), [1])
        with pytest.raises(TypeError):
            cm.allocate_cache(desc(), CacheKey(1, 1))
        assert status_of(cm.allocate_cache, desc(0)) == S.LLM_PARAM_INVALID
        assert status_of(cm.allocate_cache, desc(1, [0, 4])) == S.LLM_PARAM_INVALID
        assert status_of(cm.allocate_cache, desc(1, [4, -1])) == S.LLM_PARAM_INVALID

    def test_keys(self, pair: Any) -> None:
        cm = pair.node(1).cache_manager
        cm.allocate_cache(desc(), [CacheKey(1, 1), CacheKey(1, 2)])
        assert status_of(cm.allocate_cache, desc(), [CacheKey(1, 1)]) == S.LLM_PARAM_INVALID
        assert status_of(cm.allocate_cache, desc(), [CacheKey(1, 5), CacheKey(1, 5)]) == S.LLM_PARAM_INVALID
        assert status_of(cm.allocate_cache, desc(1, [1, 4]), [CacheKey(1, 6), CacheKey(1, 7)]) == \
            S.LLM_PARAM_INVALID

    def test_pool_placement_and_exhaustion(self, make_cluster: Any) -> None:
        opts = node_options(**ONE_PROCESS, llm__HostMemPoolConfig=None, llm__MemPoolConfig=pool(1 << 20))
        cluster = make_cluster({"cluster_id": 1, "role": "MIX", "options": opts}, link=())
        cm = cluster.node(1).cache_manager
        assert status_of(cm.allocate_cache, desc(placement=H)) == S.LLM_PARAM_INVALID
        assert status_of(cm.allocate_blocks_cache, desc(placement=H)) == S.LLM_PARAM_INVALID
        big = cm.allocate_cache(desc(2, [1, 1 << 18]))  # 512 KiB
        big_addr = big.tensor_addrs[0]
        assert status_of(cm.allocate_cache, desc(2, [1, 1 << 18], dt=DataType.DT_INT16)) == S.LLM_OUT_OF_MEMORY
        cm.deallocate_cache(big)
        again = cm.allocate_cache(desc(2, [1, 1 << 18], dt=DataType.DT_INT16))  # freed memory came back
        assert again.tensor_addrs[0] == big_addr

    def test_empty_pool_option_means_no_pool(self, make_cluster: Any) -> None:
        opts = node_options(**ONE_PROCESS, llm__MemPoolConfig="")
        cm = make_cluster({"cluster_id": 1, "role": "MIX", "options": opts}, link=()).node(1).cache_manager
        assert status_of(cm.allocate_cache, desc()) == S.LLM_PARAM_INVALID

    def test_deallocate(self, pair: Any) -> None:
        node = pair.node(1)
        cm = node.cache_manager
        c = cm.allocate_cache(desc())
        cm.deallocate_cache(c)
        assert c.tensor_addrs == [] and not c._valid
        cm.deallocate_cache(c)  # already freed: no-op
        with pytest.raises(TypeError):
            cm.deallocate_cache("c")
        blocks = cm.allocate_blocks_cache(desc())
        assert status_of(cm.deallocate_cache, blocks) == S.LLM_PARAM_INVALID
        cm.deallocate_blocks_cache(blocks)
        assert node.engine.lookup(blocks.cache_id) is None
        assert status_of(cm.deallocate_blocks_cache, cm.allocate_cache(desc())) == S.LLM_PARAM_INVALID


class TestRegister:
    def test_register_and_unregister(self, pair: Any) -> None:
        node = pair.node(1)
        cm = node.cache_manager
        base = node.alloc_memory("DEVICE", 256)
        c = cm.register_cache(desc(2, [2, 8]), [base, base + 16], [CacheKey(1, 3)])
        entry = node.engine.lookup(c.cache_id)
        assert entry.is_registered and entry.remote_accessible
        node.write_tensor(c, 1, np.full(16, 9, np.uint8))
        assert node.read_memory(base + 16, 16).tolist() == [9] * 16
        cm.deallocate_cache(c)  # registered: the native table keeps it
        assert node.engine.lookup(c.cache_id) is entry
        assert status_of(cm.unregister_cache, cm.allocate_cache(desc()).cache_id) == S.LLM_PARAM_INVALID
        cm.unregister_cache(c.cache_id)
        assert node.engine.lookup(c.cache_id) is None
        cm.unregister_cache(c.cache_id)  # unknown: no-op
        hc = cm.register_cache(desc(1, [2, 8], H), [node.alloc_memory("HOST", 16)])
        assert not node.engine.lookup(hc.cache_id).remote_accessible  # HOST default

    @pytest.mark.parametrize(("addrs", "kwargs", "exc"), [
        ((1,), {}, TypeError),
        ([1.0, 2], {}, TypeError),
        ([1, 2], {"remote_accessible": 1}, TypeError),
        ([1, 2], {"cache_keys": [1]}, TypeError),
        ([], {}, LLMException),
        ([1], {}, LLMException),
        ([0, 1], {}, LLMException),
    ])
    def test_register_argument_errors(self, pair: Any, addrs: Any, kwargs: dict[str, Any],
                                      exc: type[Exception]) -> None:
        with pytest.raises(exc):
            pair.node(1).cache_manager.register_cache(desc(2, [2, 8]), addrs, **kwargs)

    def test_addresses_must_be_inside_node_memory(self, pair: Any) -> None:
        node = pair.node(1)
        cm = node.cache_manager
        dev = node.alloc_memory("DEVICE", 64)
        host = node.alloc_memory("HOST", 64)
        other = pair.node(2).alloc_memory("DEVICE", 64)
        for addrs in ([dev, dev + 64], [dev, dev + 49], [host, host + 16], [other, other + 16], [dev, 12345]):
            assert status_of(cm.register_cache, desc(2, [2, 8]), addrs) == S.LLM_PARAM_INVALID
        assert status_of(cm.register_cache, desc(2, [2, 8], H), [dev, dev + 16]) == S.LLM_PARAM_INVALID
        cm.register_cache(desc(2, [2, 8]), [dev, dev + 48])  # last byte is still inside

    def test_blocks_and_cpu_cache(self, pair: Any) -> None:
        node = pair.node(1)
        cm = node.cache_manager
        addr = node.alloc_memory("HOST", 128)
        c = cm.register_blocks_cache(desc(2, [4, 16], H), [addr, addr + 64], BlocksCacheKey(1))
        entry = node.engine.lookup(c.cache_id)
        assert c.is_blocks_cache and entry.batch_size == 1 and entry.stride == 16
        cpu = Cache.create_cpu_cache(desc(2, [4, 16], H), [addr, addr + 64])
        node.write_tensor(cpu, 0, np.arange(64, dtype=np.uint8))
        assert node.read_tensor(c, 0).tolist() == list(range(64))

    def test_finalize_releases_everything(self, pair: Any) -> None:
        node = pair.node(2)
        engine = node.engine
        node.cache_manager.allocate_cache(desc())
        node.datadist.finalize()
        assert engine.caches == {} and not engine.alive and 2 not in pair.fabric.nodes

"""The adapter (reference_impl.backend) and the mutant hook points of CacheManager."""

from __future__ import annotations

import ast
import pathlib
import time
from typing import Any

import numpy as np
import pytest

import reference_impl
from reference_impl import CacheDesc, CacheKeyByIdAndIndex, CacheManager, DataType, LLMException
from reference_impl.backend import ReferenceBackend, backend
from tests.helpers.data import fill_random, snapshot

PKG = pathlib.Path(reference_impl.__file__).parent


def test_backend_identity_and_capabilities() -> None:
    assert backend.name == "reference" and backend.version == reference_impl.__version__ == "0.1.0"
    caps = backend.capabilities()
    assert caps["placements"] == ["HOST", "DEVICE"] and caps["faults"] == ["delay", "drop_link", "kill_node"]
    assert caps["spec_versions"] == ["8.3.RC1.alpha003", "8.5.0", "9.0.0"]
    for key in ("blocks_cache", "register_cache", "raw_memory", "memory_pools", "threads"):
        assert caps[key] is True
    assert caps["product"] == "emulator"
    caps["placements"].append("X")
    assert backend.capabilities()["placements"] == ["HOST", "DEVICE"]


def test_reference_is_independent_of_the_suite() -> None:
    for path in PKG.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any(n.startswith(("conformance_tests", "push_cache_spec", "yaml")) for n in names), path
        assert "push_cache.yaml" not in path.read_text(), path


def test_cluster_and_node_protocol(make_cluster: Any) -> None:
    cluster = make_cluster()
    node = cluster.node(1)
    assert node.cluster_id == 1
    for name in ("CacheDesc", "CacheKey", "CacheKeyByIdAndIndex", "BlocksCacheKey", "Cache", "Placement", "DataType",
                 "LLMException", "LLMStatusCode"):
        assert getattr(node.api, name) is getattr(reference_impl, name)
    c = node.cache_manager.allocate_cache(node.api.CacheDesc(2, [2, 4], node.api.DataType.DT_INT16))
    data = np.arange(16, dtype=np.uint8)
    node.write_tensor(c, 1, data)
    got = node.read_tensor(c, 1)
    assert np.array_equal(got, data)
    got[:] = 0  # a copy
    assert np.array_equal(node.read_tensor(c, 1), data)
    with pytest.raises(ValueError):
        node.write_tensor(c, 0, np.zeros(15, np.uint8))
    with pytest.raises(ValueError):
        node.write_tensor(c, 0, np.zeros(16, np.int8))
    with pytest.raises(IndexError):
        node.read_tensor(c, 2)
    addr = node.alloc_memory("HOST", 100)
    node.write_memory(addr + 10, np.full(5, 3, np.uint8))
    assert node.read_memory(addr + 9, 7).tolist() == [0, 3, 3, 3, 3, 3, 0]
    with pytest.raises(ValueError):
        node.read_memory(addr + 90, 11)
    cluster.close()
    cluster.close()


def test_open_cluster_errors() -> None:
    with pytest.raises(ValueError):
        backend.open_cluster([{"cluster_id": 1, "role": "MIX", "options": {}},
                              {"cluster_id": 1, "role": "MIX", "options": {}}])
    with pytest.raises(KeyError):
        backend.open_cluster([{"cluster_id": 1, "role": "BOSS", "options": {}}])
    with pytest.raises(LLMException):
        backend.open_cluster([{"cluster_id": 1, "role": "MIX", "options": {"llm.MemPoolConfig": "x"}}])
    with pytest.raises(TypeError):
        ReferenceBackend(cache_manager_cls=object)  # type: ignore[arg-type]
    cluster = backend.open_cluster([{"cluster_id": 5, "role": "PROMPT"}])
    with pytest.raises(LLMException):
        _ = cluster.node(5).cache_manager  # no llm.EnableCacheManager
    with pytest.raises(RuntimeError):
        cluster.link(5, 6)
    cluster.close()


# ---- mutants built from the hook points --------------------------------------------------------------------
class IgnoresSrcBatch(CacheManager):
    def _src_offset(self, a: Any, local: Any) -> int:
        return 0


class DropsLastLayer(CacheManager):
    def _layer_pairs(self, a: Any) -> Any:
        return list(super()._layer_pairs(a))[:-1]


class FirstTensorOnly(CacheManager):
    def _tensor_pairs(self, a: Any, src_layer: int, dst_layer: int) -> list[tuple[int, int]]:
        return super()._tensor_pairs(a, src_layer, dst_layer)[:1]


class OneBytePast(CacheManager):
    def _dst_view(self, link: Any, remote: Any, tensor: int, offset: int, nbytes: int) -> np.ndarray:
        return link.server.memory.view(remote.tensor_addrs[tensor] + offset, nbytes + 1)

    def _copy_layer(self, pairs: Any) -> None:
        for src, dst in pairs:
            dst[:src.size] = src
            dst[src.size] = 0xFF


class SizeAccepted(CacheManager):
    push_check_order = tuple(s for s in CacheManager.push_check_order if s != "_check_size_value")


class NeverTimesOut(CacheManager):
    def _await_transfer(self, a: Any, link: Any, seconds: float) -> None:
        return None


class WritesDeallocated(CacheManager):
    def _lookup_remote_cache(self, a: Any, server: Any) -> Any:
        return server.lookup(a.dst_cache_key.cache_id, include_dead=True)

    def _dst_alive(self, remote: Any) -> bool:
        return True


def _mutant_pair(make_cluster: Any, cls: type[CacheManager]) -> tuple[Any, Any]:
    cluster = make_cluster(backend=ReferenceBackend(name=cls.__name__, cache_manager_cls=cls))
    a, b = cluster.node(1), cluster.node(2)
    assert type(a.cache_manager) is cls
    return a, b


def _push_scenario(a: Any, b: Any, **kw: Any) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    d = CacheDesc(4, [2, 8], DataType.DT_INT8)
    src = a.cache_manager.allocate_cache(d)
    dst = b.cache_manager.allocate_cache(d)
    data = fill_random(a, src, seed=1)
    b.cache_manager.allocate_cache(d)  # a neighbour right after dst in the pool
    key = CacheKeyByIdAndIndex(2, dst.cache_id, kw.pop("db", 1))
    a.cache_manager.push_cache(key, src, kw.pop("sb", 1), **kw)
    return data, snapshot(b, dst), snapshot(a, src)


def _correct(data: list[np.ndarray], got: list[np.ndarray]) -> bool:
    return all(np.array_equal(g[8:], s[8:]) and not g[:8].any() for g, s in zip(got, data, strict=True))


@pytest.mark.parametrize("cls", [IgnoresSrcBatch, DropsLastLayer, FirstTensorOnly])
def test_data_mutants_are_observable(make_cluster: Any, cls: type[CacheManager]) -> None:
    a, b = _mutant_pair(make_cluster, cls)
    data, got, _ = _push_scenario(a, b)
    assert not _correct(data, got)


def test_reference_itself_is_correct(make_cluster: Any) -> None:
    a, b = _mutant_pair(make_cluster, CacheManager)
    data, got, src_after = _push_scenario(a, b)
    assert _correct(data, got) and all(np.array_equal(x, y) for x, y in zip(data, src_after, strict=True))


def test_one_byte_past_mutant_hits_neighbour(make_cluster: Any) -> None:
    a, b = _mutant_pair(make_cluster, OneBytePast)
    _push_scenario(a, b)  # pushes into dst batch 1: tensor t's slice ends where tensor t+1 begins
    dst_entry = b.cache_manager.engine.lookup(1)
    assert dst_entry.views[1][0] == 0xFF  # byte after tensor 0's batch-1 slice = tensor 1's first byte


def test_order_and_timeout_mutants(make_cluster: Any) -> None:
    a, b = _mutant_pair(make_cluster, SizeAccepted)
    _push_scenario(a, b, size=16)  # accepted: the mutant differs from the reference
    a, b = _mutant_pair(make_cluster, NeverTimesOut)
    a.inject({"kind": "drop_link", "peer": 2})
    t0 = time.monotonic()
    _push_scenario(a, b)
    assert time.monotonic() - t0 < 0.1


def test_deallocated_write_mutant(make_cluster: Any) -> None:
    a, b = _mutant_pair(make_cluster, WritesDeallocated)
    d = CacheDesc(2, [1, 8], DataType.DT_INT8)
    src = a.cache_manager.allocate_cache(d)
    dst = b.cache_manager.allocate_cache(d)
    key = CacheKeyByIdAndIndex(2, dst.cache_id)
    a.cache_manager.push_cache(key, src)  # first push, all zeros: the link's synced table now holds dst
    fill_random(a, src)
    b.cache_manager.deallocate_cache(dst)
    reuse = b.cache_manager.allocate_cache(d)
    assert not b.read_tensor(reuse, 0).any()
    a.cache_manager.push_cache(key, src)  # the reference would raise KV_CACHE_NOT_EXIST
    assert b.read_tensor(reuse, 0).any()  # the reference raises LLM_KV_CACHE_NOT_EXIST (test_push_remote)

"""Links, unknown/deallocated caches, remote-accessibility, native check order and the documented restrictions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from reference_impl import CacheDesc, CacheKeyByIdAndIndex, DataType, LLMException, LLMStatusCode, Placement
from tests.helpers.nodes import ONE_PROCESS, node_options

S = LLMStatusCode
D = Placement.DEVICE
H = Placement.HOST


def desc(placement: Placement = D, shape: list[int] | None = None, n: int = 4) -> CacheDesc:
    return CacheDesc(n, shape or [2, 8], DataType.DT_INT8, placement)


def push_status(node: Any, key: CacheKeyByIdAndIndex, src: Any, **kw: Any) -> LLMStatusCode:
    with pytest.raises(LLMException) as info:
        node.cache_manager.push_cache(key, src, **kw)
    return info.value.status_code


class TestLinks:
    def test_not_linked_and_direction(self, make_cluster: Any) -> None:
        cluster = make_cluster(link=())
        a, b = cluster.node(1), cluster.node(2)
        src = a.cache_manager.allocate_cache(desc())
        dst = b.cache_manager.allocate_cache(desc())
        key = CacheKeyByIdAndIndex(2, dst.cache_id)
        assert push_status(a, key, src) == S.LLM_NOT_YET_LINK
        cluster.link(1, 2)
        a.cache_manager.push_cache(key, src)
        back = b.cache_manager.allocate_cache(desc())
        # the link 1 -> 2 does not let 2 push into 1
        assert push_status(b, CacheKeyByIdAndIndex(1, src.cache_id), back) == S.LLM_NOT_YET_LINK
        cluster.unlink(1, 2)
        assert push_status(a, key, src) == S.LLM_NOT_YET_LINK
        cluster.unlink(1, 2)  # idempotent
        cluster.close()
        cluster.unlink(1, 2)

    def test_unknown_cluster_and_finalized_remote(self, pair: Any) -> None:
        a, b = pair.node(1), pair.node(2)
        src = a.cache_manager.allocate_cache(desc())
        dst = b.cache_manager.allocate_cache(desc())
        assert push_status(a, CacheKeyByIdAndIndex(7, dst.cache_id), src) == S.LLM_NOT_YET_LINK
        assert push_status(a, CacheKeyByIdAndIndex(1, src.cache_id), src) == S.LLM_NOT_YET_LINK  # own, unlinked
        b.datadist.finalize()
        assert push_status(a, CacheKeyByIdAndIndex(2, dst.cache_id), src) == S.LLM_NOT_YET_LINK
        with pytest.raises(RuntimeError):
            pair.link(1, 99)

    def test_relinked_new_node_needs_new_link(self, make_cluster: Any) -> None:
        from reference_impl import LLMDataDist, LLMRole

        cluster = make_cluster()
        a = cluster.node(1)
        src = a.cache_manager.allocate_cache(desc())
        cluster.node(2).datadist.finalize()
        fresh = LLMDataDist(LLMRole.DECODER, 2, fabric=cluster.fabric)
        fresh.init(node_options(**ONE_PROCESS))
        dst = fresh.cache_manager.allocate_cache(desc())
        assert push_status(a, CacheKeyByIdAndIndex(2, dst.cache_id), src) == S.LLM_NOT_YET_LINK
        fresh.finalize()


class TestUnknownCaches:
    def test_unknown_remote_cache_id(self, pair: Any) -> None:
        a = pair.node(1)
        src = a.cache_manager.allocate_cache(desc())
        assert push_status(a, CacheKeyByIdAndIndex(2, 12345), src) == S.LLM_KV_CACHE_NOT_EXIST
        assert push_status(a, CacheKeyByIdAndIndex(2, 0), src) == S.LLM_KV_CACHE_NOT_EXIST  # no key (0, 0) bound
        with pytest.raises(TypeError, match="uint64"):  # the binding's conversion, before any native check
            a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, -3), src)

    def test_deallocated_remote_never_written(self, pair: Any) -> None:
        a, b = pair.node(1), pair.node(2)
        src = a.cache_manager.allocate_cache(desc())
        a.write_tensor(src, 0, np.full(16, 1, np.uint8))
        old = b.cache_manager.allocate_cache(desc())
        key = CacheKeyByIdAndIndex(2, old.cache_id)
        a.cache_manager.push_cache(key, src)  # first push works (the vendor would snapshot the table here)
        b.cache_manager.deallocate_cache(old)
        reuse = b.cache_manager.allocate_cache(desc())  # same pool memory as the freed cache
        assert reuse.cache_id != old.cache_id
        for t in range(4):
            b.write_tensor(reuse, t, np.full(16, 0xEE, np.uint8))
        assert push_status(a, key, src) == S.LLM_KV_CACHE_NOT_EXIST
        assert all((b.read_tensor(reuse, t) == 0xEE).all() for t in range(4))

    def test_unregistered_remote(self, pair: Any) -> None:
        a, b = pair.node(1), pair.node(2)
        src = a.cache_manager.allocate_cache(desc())
        addr = b.alloc_memory("DEVICE", 64)
        reg = b.cache_manager.register_cache(desc(shape=[2, 2]), [addr, addr + 16, addr + 32, addr + 48])
        a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, reg.cache_id), a.cache_manager.allocate_cache(
            desc(shape=[2, 2])))
        b.cache_manager.unregister_cache(reg.cache_id)
        assert push_status(a, CacheKeyByIdAndIndex(2, reg.cache_id), src) == S.LLM_KV_CACHE_NOT_EXIST

    def test_remote_table_synced_at_first_push(self, pair: Any) -> None:
        """The link syncs the remote table at its first push; later caches need a re-link (vendor)."""
        a, b = pair.node(1), pair.node(2)
        src = a.cache_manager.allocate_cache(desc())
        a.write_tensor(src, 0, np.arange(16, dtype=np.uint8))
        addr = b.alloc_memory("DEVICE", 64)  # registered after the link, before its first push: visible
        reg = b.cache_manager.register_cache(desc(shape=[2, 2]), [addr, addr + 16, addr + 32, addr + 48])
        a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, reg.cache_id),
                                   a.cache_manager.allocate_cache(desc(shape=[2, 2])))
        late = b.cache_manager.allocate_cache(desc())  # after the first push: not in the synced table
        late_key = CacheKeyByIdAndIndex(2, late.cache_id)
        assert push_status(a, late_key, src) == S.LLM_KV_CACHE_NOT_EXIST
        assert not any(b.read_tensor(late, t).any() for t in range(4))
        pair.unlink(1, 2)
        pair.link(1, 2)  # a fresh link syncs the table again at its first push
        a.cache_manager.push_cache(late_key, src)
        assert b.read_tensor(late, 0).tolist() == list(range(8)) + [0] * 8

    def test_deallocated_or_foreign_source(self, pair: Any) -> None:
        a, b = pair.node(1), pair.node(2)
        src = a.cache_manager.allocate_cache(desc())
        dst = b.cache_manager.allocate_cache(desc())
        key = CacheKeyByIdAndIndex(2, dst.cache_id)
        # a Cache of node 2 whose id also exists on node 1 is still not a local cache
        assert src.cache_id == dst.cache_id
        assert push_status(a, key, dst) == S.LLM_KV_CACHE_NOT_EXIST
        a.cache_manager.deallocate_cache(src)
        assert push_status(a, key, src) == S.LLM_KV_CACHE_NOT_EXIST


class TestNativeOrder:
    def test_local_before_link(self, make_cluster: Any) -> None:
        cluster = make_cluster(link=())
        a = cluster.node(1)
        src = a.cache_manager.allocate_cache(desc())
        a.cache_manager.deallocate_cache(src)
        assert push_status(a, CacheKeyByIdAndIndex(2, 1), src) == S.LLM_KV_CACHE_NOT_EXIST

    def test_link_before_remote_cache(self, make_cluster: Any) -> None:
        cluster = make_cluster(link=())
        a = cluster.node(1)
        src = a.cache_manager.allocate_cache(desc())
        assert push_status(a, CacheKeyByIdAndIndex(2, 999), src) == S.LLM_NOT_YET_LINK

    def test_local_remote_accessible_before_remote_lookup(self, pair: Any) -> None:
        a = pair.node(1)
        addr = a.alloc_memory("DEVICE", 64)
        src = a.cache_manager.register_cache(desc(shape=[2, 2]), [addr, addr + 16, addr + 32, addr + 48],
                                             remote_accessible=False)
        with pytest.raises(LLMException, match="local cache is not remote accessible") as info:
            a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, 999), src)
        assert info.value.status_code == S.LLM_PARAM_INVALID

    def test_remote_not_accessible(self, pair: Any) -> None:
        a, b = pair.node(1), pair.node(2)
        src = a.cache_manager.allocate_cache(desc())
        addr = b.alloc_memory("DEVICE", 64)
        dst = b.cache_manager.register_cache(desc(), [addr, addr + 16, addr + 32, addr + 48],
                                             remote_accessible=False)
        with pytest.raises(LLMException, match="remote cache is not remote accessible") as info:
            a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id), src)
        assert info.value.status_code == S.LLM_PARAM_INVALID

    @pytest.mark.parametrize(("kw", "match"), [
        ({"dst_batch": 2}, "batch index"),
        ({"dst_layer_range": range(2, 3), "src_layer_range": range(2, 3)}, "layer index.* of remote cache"),
        ({"src_batch_index": 2}, "batch index"),
        ({"tensor_num_per_layer": 3}, "multiple"),
    ])
    def test_native_param_checks(self, pair: Any, kw: dict[str, Any], match: str) -> None:
        a, b = pair.node(1), pair.node(2)
        src = a.cache_manager.allocate_cache(desc())
        dst = b.cache_manager.allocate_cache(desc())
        key = CacheKeyByIdAndIndex(2, dst.cache_id, kw.pop("dst_batch", 0))
        with pytest.raises(LLMException, match=match) as info:
            a.cache_manager.push_cache(key, src, **kw)
        assert info.value.status_code == S.LLM_PARAM_INVALID


class TestRestrictions:
    @pytest.mark.parametrize(("sp", "dp"), [(D, D), (D, H), (H, D), (H, H)])
    def test_placements_with_device_pool(self, pair: Any, sp: Placement, dp: Placement) -> None:
        a, b = pair.node(1), pair.node(2)
        src = a.cache_manager.allocate_cache(desc(sp))
        dst = b.cache_manager.allocate_cache(desc(dp))
        a.write_tensor(src, 3, np.arange(16, dtype=np.uint8))
        a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id, 1), src, 0)
        assert b.read_tensor(dst, 3)[8:].tolist() == list(range(8))

    def test_host_to_device_blocks_destination_written_like_the_vendor(self, pair: Any) -> None:
        """No native check looks at a blocks destination (facts §1.3): its batch size is 1 and its block size is
        the stride, so batch 0 of the key is block 0, and batch 1 is out of range (N8d)."""
        a, b = pair.node(1), pair.node(2)
        src = a.cache_manager.allocate_cache(desc(H))
        blocks = b.cache_manager.allocate_blocks_cache(desc(D))
        host_blocks = b.cache_manager.allocate_blocks_cache(desc(H))  # before the first push syncs the table
        a.write_tensor(src, 2, np.arange(16, dtype=np.uint8))
        a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, blocks.cache_id), src, 1)
        assert b.read_tensor(blocks, 2).tolist() == list(range(8, 16)) + [0] * 8
        a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, host_blocks.cache_id), src)  # H -> H blocks too
        assert b.read_tensor(host_blocks, 2).tolist() == list(range(8)) + [0] * 8
        assert push_status(a, CacheKeyByIdAndIndex(2, blocks.cache_id, 1), src) == S.LLM_PARAM_INVALID

    @pytest.mark.parametrize(("sp", "dp", "ok"), [(D, H, False), (H, D, False), (H, H, True)])
    def test_d2h_h2d_need_device_pool_on_pusher(self, make_cluster: Any, sp: Placement, dp: Placement,
                                                ok: bool) -> None:
        no_dev = node_options(**ONE_PROCESS, llm__MemPoolConfig=None)
        cluster = make_cluster({"cluster_id": 1, "role": "PROMPT", "options": no_dev},
                               {"cluster_id": 2, "role": "DECODER", "options": node_options(**ONE_PROCESS)})
        a, b = cluster.node(1), cluster.node(2)
        addr = a.alloc_memory(sp.name, 64)
        src = a.cache_manager.register_cache(desc(sp), [addr, addr + 16, addr + 32, addr + 48],
                                             remote_accessible=True)
        dst = b.cache_manager.allocate_cache(desc(dp))
        key = CacheKeyByIdAndIndex(2, dst.cache_id)
        if ok:
            a.cache_manager.push_cache(key, src)
        else:
            assert push_status(a, key, src) == S.LLM_PARAM_INVALID
            assert not b.read_tensor(dst, 0).any()

"""Where the reference follows the documentation, where vendor mode (reference_impl.vendor) follows the vendor.

Each vendor quirk is shown in vendor mode and shown absent in the default mode; the behaviours both modes share
(the link-time option check, the first-attempt table sync) are run in both.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

import numpy as np
import pytest

from reference_impl import (
    CacheDesc,
    CacheKeyByIdAndIndex,
    CacheManager,
    DataType,
    Fabric,
    LLMClusterInfo,
    LLMException,
    LLMRole,
    LLMStatusCode,
)
from reference_impl.backend import ReferenceBackend, backend, vendor_backend
from reference_impl.vendor import VendorCacheManager
from tests.helpers.data import SENTINEL, fill_random, snapshot
from tests.helpers.nodes import ONE_PROCESS, node_options, relink

S = LLMStatusCode
MODES = ["reference", "vendor"]
BACKENDS = {"reference": backend, "vendor": vendor_backend}


def cluster_for(make_cluster: Any, mode: str, *, local_off: bool = False, remote_off: bool = False,
                link: tuple[tuple[int, int], ...] = ((1, 2),)) -> Any:
    def opts(off: bool) -> dict[str, str]:
        return node_options(**ONE_PROCESS, llm__EnableRemoteCacheAccessible="0" if off else "1")

    return make_cluster({"cluster_id": 1, "role": "PROMPT", "options": opts(local_off)},
                        {"cluster_id": 2, "role": "DECODER", "options": opts(remote_off)},
                        link=link, backend=BACKENDS[mode])


def status_of(fn: Any, *args: Any, **kw: Any) -> LLMStatusCode:
    with pytest.raises(LLMException) as info:
        fn(*args, **kw)
    return info.value.status_code


def filled(node: Any, cache: Any, value: int) -> None:
    for t in range(cache.cache_desc.num_tensors):
        node.write_tensor(cache, t, np.full(cache.cache_desc.size, value, np.uint8))


# ---- the vendor-mode backend itself ------------------------------------------------------------------------
def test_vendor_backend_object_and_entry_point(make_cluster: Any) -> None:
    assert isinstance(vendor_backend, ReferenceBackend) and vendor_backend.name == "reference-vendor"
    assert vendor_backend.cache_manager_cls is VendorCacheManager and issubclass(VendorCacheManager, CacheManager)
    assert vendor_backend.capabilities() == backend.capabilities()
    eps = {e.name: e for e in entry_points(group="push_cache_conformance.backends")}
    assert eps["reference-vendor"].load() is vendor_backend and eps["reference"].load() is backend
    cluster = cluster_for(make_cluster, "vendor")
    assert type(cluster.node(1).cache_manager) is VendorCacheManager


def test_vendor_module_is_a_drop_in() -> None:
    from reference_impl import vendor as llm_datadist

    fabric = Fabric()
    nodes = []
    for cid in (1, 2):
        node = llm_datadist.LLMDataDist(llm_datadist.LLMRole.MIX, cid, fabric=fabric)
        node.init(node_options(**ONE_PROCESS))
        nodes.append(node)
    try:
        assert isinstance(nodes[0].cache_manager, llm_datadist.VendorCacheManager)
        info = llm_datadist.LLMClusterInfo(remote_cluster_id=2)
        info.append_local_ip_info("127.0.0.1", 26000)
        assert nodes[0].link_clusters([info])[0] == llm_datadist.LLMStatusCode.LLM_SUCCESS
        d = llm_datadist.CacheDesc(4, [2, 8], llm_datadist.DataType.DT_INT8)
        src, dst = nodes[0].cache_manager.allocate_cache(d), nodes[1].cache_manager.allocate_cache(d)
        nodes[0].cache_manager.push_cache(llm_datadist.CacheKeyByIdAndIndex(2, dst.cache_id), src, 0,
                                          range(0, 1), range(1, 2))  # the vendor's quirk: accepted
    finally:
        for node in nodes:
            node.finalize()


# ---- 1a / vendor: equal-length but different layer ranges --------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("sr", "dr"), [(range(0, 1), range(1, 2)), (range(1, 2), range(0, 1)),
                                        (range(0, 2), range(1, 3))])
def test_shifted_ranges(make_cluster: Any, mode: str, sr: range, dr: range) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(6, [2, 8], DataType.DT_INT8)
    src, dst = a.cache_manager.allocate_cache(d), b.cache_manager.allocate_cache(d)
    data = fill_random(a, src, seed=4)
    filled(b, dst, SENTINEL)
    key = CacheKeyByIdAndIndex(2, dst.cache_id, 1)
    if mode == "reference":  # documentation: "must have the same value"; LLMException before any byte moves
        with pytest.raises(LLMException, match="must have the same value") as info:
            a.cache_manager.push_cache(key, src, 0, sr, dr)
        assert info.value.status_code == S.LLM_PARAM_INVALID
        assert all((t == SENTINEL).all() for t in snapshot(b, dst))
        return
    a.cache_manager.push_cache(key, src, 0, sr, dr)
    got = snapshot(b, dst)
    for i in range(len(sr)):
        for j in range(2):
            s, t = sr[i] * 2 + j, dr[i] * 2 + j
            assert np.array_equal(got[t][8:], data[s][:8]) and (got[t][:8] == SENTINEL).all()
    untouched = set(range(6)) - {dr[i] * 2 + j for i in range(len(sr)) for j in range(2)}
    assert all((got[t] == SENTINEL).all() for t in untouched)


def test_equal_ranges_still_accepted(pair: Any) -> None:
    a, b = pair.node(1), pair.node(2)
    d = CacheDesc(4, [1, 4], DataType.DT_INT8)
    src, dst = a.cache_manager.allocate_cache(d), b.cache_manager.allocate_cache(d)
    a.write_tensor(src, 2, np.arange(4, dtype=np.uint8))
    a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id), src, 0, range(1, 2), range(1, 2))
    assert b.read_tensor(dst, 2).tolist() == [0, 1, 2, 3]


# ---- 1b / vendor: argument checks versus the enable_remote_cache_accessible refusal -----------------------
BAD_ARGS: list[tuple[dict[str, Any], type[Exception]]] = [
    ({"dst_cache_key": None}, TypeError),
    ({"src_cache": None}, TypeError),
    ({"src_batch_index": 1.5}, TypeError),
    ({"src_batch_index": -1}, ValueError),
    ({"tensor_num_per_layer": None}, TypeError),
    ({"tensor_num_per_layer": -1}, ValueError),
    ({"src_layer_range": [0, 1]}, TypeError),
    ({"dst_layer_range": (0, 1)}, TypeError),
    ({"size": 1.5}, TypeError),
    ({"size": "x"}, TypeError),
    ({"size": 2**63}, ValueError),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("kw", "exc"), BAD_ARGS)
def test_type_checks_with_option_off(make_cluster: Any, mode: str, kw: dict[str, Any],
                                     exc: type[Exception]) -> None:
    cluster = cluster_for(make_cluster, mode, local_off=True, remote_off=True)
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(4, [2, 8], DataType.DT_INT8)
    src, dst = a.cache_manager.allocate_cache(d), b.cache_manager.allocate_cache(d)
    args: dict[str, Any] = {"dst_cache_key": CacheKeyByIdAndIndex(2, dst.cache_id), "src_cache": src, **kw}
    if mode == "reference":  # documentation: wrong types are TypeError/ValueError, whatever the option
        with pytest.raises(exc) as info:
            a.cache_manager.push_cache(**args)
        assert not isinstance(info.value, LLMException)
    else:  # the vendor checks the option first (facts §1.2 #1)
        with pytest.raises(LLMException, match="enable_remote_cache_accessible") as llm:
            a.cache_manager.push_cache(**args)
        assert llm.value.status_code == S.LLM_PARAM_INVALID


@pytest.mark.parametrize("mode", MODES)
def test_well_typed_push_refused_with_option_off(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode, local_off=True, remote_off=True)
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(4, [2, 8], DataType.DT_INT8)
    src, dst = a.cache_manager.allocate_cache(d), b.cache_manager.allocate_cache(d)
    fill_random(a, src)
    with pytest.raises(LLMException, match="enable_remote_cache_accessible") as info:
        a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id), src)
    assert info.value.status_code == S.LLM_PARAM_INVALID
    assert not any(t.any() for t in snapshot(b, dst))


@pytest.mark.parametrize("mode", MODES)
def test_option_refusal_versus_documentation_bounds(make_cluster: Any, mode: str) -> None:
    """Option off and a value only the documentation refuses (tnpl above the tensor count): the reference
    checks the option first among the LLMException refusals after #13; the vendor checks it before all."""
    cluster = cluster_for(make_cluster, mode, local_off=True, remote_off=True)
    a = cluster.node(1)
    src = a.cache_manager.allocate_cache(CacheDesc(4, [2, 8], DataType.DT_INT8))
    with pytest.raises(LLMException, match="enable_remote_cache_accessible"):
        a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, 1), src, tensor_num_per_layer=5)


# ---- 1c: the link-time check of llm.EnableRemoteCacheAccessible (both modes) -----------------------------
def _info(remote: int) -> LLMClusterInfo:
    info = LLMClusterInfo(remote_cluster_id=remote)
    info.append_local_ip_info("127.0.0.1", 26000)
    return info


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("local_off", "remote_off"), [(True, False), (False, True)])
def test_link_needs_identical_remote_cache_accessible(make_cluster: Any, mode: str, local_off: bool,
                                                      remote_off: bool) -> None:
    cluster = cluster_for(make_cluster, mode, local_off=local_off, remote_off=remote_off, link=())
    a, b = cluster.node(1), cluster.node(2)
    # link_clusters reports it in its statuses (it does not raise) ...
    assert a.datadist.link_clusters([_info(2)]) == (S.LLM_PARAM_INVALID, [S.LLM_PARAM_INVALID])
    assert b.datadist.link_clusters([_info(1)]) == (S.LLM_PARAM_INVALID, [S.LLM_PARAM_INVALID])
    # ... and no link exists afterwards
    assert a.engine.fabric.usable_link(a.engine, 2) is None
    assert b.engine.fabric.usable_link(b.engine, 1) is None
    # the backend's Cluster.link raises, naming the status and the reason
    with pytest.raises(RuntimeError, match="LLM_PARAM_INVALID.*RemoteCacheAccessible is not identical"):
        cluster.link(1, 2)
    if not local_off:  # a push from the node with the option on finds no link
        src = a.cache_manager.allocate_cache(CacheDesc(2, [1, 4], DataType.DT_INT8))
        dst = b.cache_manager.allocate_cache(CacheDesc(2, [1, 4], DataType.DT_INT8))
        assert status_of(a.cache_manager.push_cache, CacheKeyByIdAndIndex(2, dst.cache_id),
                         src) == S.LLM_NOT_YET_LINK


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("off", [True, False])
def test_link_with_identical_option_succeeds(make_cluster: Any, mode: str, off: bool) -> None:
    cluster = cluster_for(make_cluster, mode, local_off=off, remote_off=off, link=())
    cluster.link(1, 2)
    cluster.link(2, 1)
    a = cluster.node(1)
    assert a.engine.fabric.usable_link(a.engine, 2) is not None


def test_link_check_without_cache_manager() -> None:
    """Nodes without the options at all (both default '0') link; one with '1' and one without does not."""
    from reference_impl import LLMDataDist

    fabric = Fabric()
    plain = LLMDataDist(LLMRole.MIX, 1, fabric=fabric)
    plain.init({})
    other = LLMDataDist(LLMRole.MIX, 2, fabric=fabric)
    other.init({})
    on = LLMDataDist(LLMRole.MIX, 3, fabric=fabric)
    on.init({"llm.EnableRemoteCacheAccessible": "1"})
    try:
        assert plain.link_clusters([_info(2)])[0] == S.LLM_SUCCESS
        assert plain.link_clusters([_info(3)])[0] == S.LLM_PARAM_INVALID
        assert fabric.link_errors[(1, 3)].startswith("RemoteCacheAccessible is not identical")
    finally:
        for node in (plain, other, on):
            node.finalize()


# ---- 1d: the remote table is synced at the first transfer attempt (both modes) ---------------------------
@pytest.mark.parametrize("mode", MODES)
def test_failed_first_attempt_still_syncs(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(2, [1, 4], DataType.DT_INT8)
    src = a.cache_manager.allocate_cache(d)
    b.cache_manager.allocate_cache(d)  # the server has published a cache: its table version is not 0
    assert status_of(a.cache_manager.push_cache, CacheKeyByIdAndIndex(2, 999), src) == S.LLM_KV_CACHE_NOT_EXIST
    link = a.engine.fabric.usable_link(a.engine, 2)
    assert link.table is not None and link.table.version > 0
    late = b.cache_manager.allocate_cache(d)  # after the (failed) first attempt: invisible over this link
    key = CacheKeyByIdAndIndex(2, late.cache_id)
    assert status_of(a.cache_manager.push_cache, key, src) == S.LLM_KV_CACHE_NOT_EXIST
    relink(cluster)
    a.cache_manager.push_cache(key, src)


@pytest.mark.parametrize("mode", MODES)
def test_version_zero_table_is_synced_again(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(2, [1, 4], DataType.DT_INT8)
    src = a.cache_manager.allocate_cache(d)
    a.write_tensor(src, 1, np.arange(4, dtype=np.uint8))
    # the server never published a cache: the first attempt syncs an empty table of version 0
    assert status_of(a.cache_manager.push_cache, CacheKeyByIdAndIndex(2, 1), src) == S.LLM_KV_CACHE_NOT_EXIST
    assert a.engine.fabric.usable_link(a.engine, 2).table.version == 0
    dst = b.cache_manager.allocate_cache(d)
    a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id), src)  # synced again: visible
    assert b.read_tensor(dst, 1).tolist() == [0, 1, 2, 3]
    later = b.cache_manager.allocate_cache(d)  # version > 0 now: no further sync on this link
    assert status_of(a.cache_manager.push_cache, CacheKeyByIdAndIndex(2, later.cache_id),
                     src) == S.LLM_KV_CACHE_NOT_EXIST


@pytest.mark.parametrize("mode", MODES)
def test_python_level_refusal_is_no_transfer_attempt(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(2, [1, 4], DataType.DT_INT8)
    src = a.cache_manager.allocate_cache(d)
    b.cache_manager.allocate_cache(d)
    with pytest.raises(LLMException, match="size"):
        a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, 1), src, size=0)
    assert a.engine.fabric.usable_link(a.engine, 2).table is None
    dst = b.cache_manager.allocate_cache(d)  # still before the first transfer attempt: visible
    a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id), src)


# ---- vendor: tensor_num_per_layer above the tensor count ---------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tnpl", [5, 100])
def test_tnpl_above_tensor_count(make_cluster: Any, mode: str, tnpl: int) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(4, [2, 8], DataType.DT_INT8)
    src, dst = a.cache_manager.allocate_cache(d), b.cache_manager.allocate_cache(d)
    fill_random(a, src, seed=2)
    filled(b, dst, SENTINEL)
    key = CacheKeyByIdAndIndex(2, dst.cache_id)
    if mode == "reference":  # documentation: tensor_num_per_layer in [1, num_tensors]
        assert status_of(a.cache_manager.push_cache, key, src, tensor_num_per_layer=tnpl) == S.LLM_PARAM_INVALID
    else:  # both default ranges become range(0, 0): returns having done nothing
        assert a.cache_manager.push_cache(key, src, tensor_num_per_layer=tnpl) is None
        # with explicit ranges the native layer check (N9) refuses it
        assert status_of(a.cache_manager.push_cache, key, src, 0, range(0, 1), range(0, 1),
                         tensor_num_per_layer=tnpl) == S.LLM_PARAM_INVALID
    assert all((t == SENTINEL).all() for t in snapshot(b, dst))


# ---- vendor: a source entry larger than the destination's is copied with the local stride ------------------
@pytest.mark.parametrize("mode", MODES)
def test_larger_source_entry_overflows_into_next_slot_and_tensor(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    src = a.cache_manager.allocate_cache(CacheDesc(2, [2, 12], DataType.DT_INT8))  # stride 12
    dst = b.cache_manager.allocate_cache(CacheDesc(2, [2, 8], DataType.DT_INT8))   # stride 8, 16 B per tensor
    bystander = b.cache_manager.allocate_cache(CacheDesc(1, [16], DataType.DT_INT8))  # next in the pool
    data = fill_random(a, src, seed=7)
    filled(b, dst, SENTINEL)
    filled(b, bystander, SENTINEL)
    if mode == "reference":  # documentation (memory safety): refused before any byte moves
        for batch in (0, 1):
            assert status_of(a.cache_manager.push_cache, CacheKeyByIdAndIndex(2, dst.cache_id, batch),
                             src, 1) == S.LLM_PARAM_INVALID
        assert all((t == SENTINEL).all() for t in snapshot(b, dst) + snapshot(b, bystander))
        return
    # batch 0: 12 bytes from offset 0 -> the whole batch-0 entry and 4 bytes of batch 1
    a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id, 0), src, 1)
    got = snapshot(b, dst)
    for t in range(2):
        assert np.array_equal(got[t][:12], data[t][12:24]) and (got[t][12:] == SENTINEL).all()
    # batch 1: 12 bytes from offset 8 -> 8 in the entry, 4 past the tensor's end: into the next tensor's first
    # bytes, and for the last tensor into the bystander cache that follows it in the pool
    filled(b, dst, SENTINEL)
    a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id, 1), src, 0)
    got, by = snapshot(b, dst), snapshot(b, bystander)
    assert np.array_equal(got[0][8:16], data[0][:8])
    assert np.array_equal(got[1][:4], data[0][8:12])  # tensor 0's overflow (tensor 1's own copy is at 8..16)
    assert np.array_equal(got[1][8:16], data[1][:8])
    dst_entry = b.engine.lookup(dst.cache_id)
    after = dst_entry.tensor_addrs[1] + 16  # the pool bytes right after the last tensor (its page's rest)
    assert np.array_equal(b.read_memory(after, 4), data[1][8:12])
    assert all((t == SENTINEL).all() for t in by)  # the bystander starts on the next pool page


@pytest.mark.parametrize("mode", MODES)
def test_larger_source_entry_overwrites_an_adjacent_cache(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    src = a.cache_manager.allocate_cache(CacheDesc(1, [1, 24], DataType.DT_INT8))
    data = fill_random(a, src, seed=5)
    base = b.alloc_memory("DEVICE", 32)  # one segment: dst's only tensor (16 B), then a neighbour's (16 B)
    b.write_memory(base, np.full(32, SENTINEL, np.uint8))
    dst = b.cache_manager.register_cache(CacheDesc(1, [2, 8], DataType.DT_INT8), [base], remote_accessible=True)
    neighbour = b.cache_manager.register_cache(CacheDesc(1, [16], DataType.DT_INT8), [base + 16],
                                               remote_accessible=True)
    key = CacheKeyByIdAndIndex(2, dst.cache_id, 1)
    if mode == "reference":
        assert status_of(a.cache_manager.push_cache, key, src, 0, None, None, -1, 1) == S.LLM_PARAM_INVALID
        assert (b.read_memory(base, 32) == SENTINEL).all()
        return
    a.cache_manager.push_cache(key, src, 0, None, None, -1, 1)  # 24 bytes at offset 8 of a 16-byte tensor
    assert np.array_equal(b.read_tensor(dst, 0)[8:], data[0][:8])
    got = b.read_tensor(neighbour, 0)
    assert np.array_equal(got[:16], data[0][8:24])


@pytest.mark.parametrize("mode", MODES)
def test_larger_source_entry_into_guarded_raw_memory(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    src = a.cache_manager.allocate_cache(CacheDesc(2, [2, 16], DataType.DT_INT8))
    data = fill_random(a, src, seed=11)
    guard, n = 32, 16  # dst tensors of 2 x 8 bytes, each in its own raw segment between guard bands
    bases = [b.alloc_memory("DEVICE", n + 2 * guard) for _ in range(2)]
    for base in bases:
        b.write_memory(base, np.full(n + 2 * guard, SENTINEL, np.uint8))
    dst = b.cache_manager.register_cache(CacheDesc(2, [2, 8], DataType.DT_INT8), [x + guard for x in bases],
                                         remote_accessible=True)
    key = CacheKeyByIdAndIndex(2, dst.cache_id, 1)
    if mode == "reference":
        assert status_of(a.cache_manager.push_cache, key, src) == S.LLM_PARAM_INVALID
        assert all((b.read_memory(x, n + 2 * guard) == SENTINEL).all() for x in bases)
        return
    a.cache_manager.push_cache(key, src)  # 16 bytes at offset 8: 8 in the entry, 8 into the guard band
    for t, base in enumerate(bases):
        region = b.read_memory(base, n + 2 * guard)
        assert np.array_equal(region[guard + 8:guard + 24], data[t][:16])
        assert (region[:guard + 8] == SENTINEL).all() and (region[guard + 24:] == SENTINEL).all()


def test_vendor_overflow_past_a_segment_end_does_not_crash(make_cluster: Any) -> None:
    """The count runs past the end of the raw segment that holds the tensor: the bytes that land in modelled
    memory are written, the rest go nowhere, and the call returns normally."""
    cluster = cluster_for(make_cluster, "vendor")
    a, b = cluster.node(1), cluster.node(2)
    src = a.cache_manager.allocate_cache(CacheDesc(1, [1, 64], DataType.DT_INT8))
    data = fill_random(a, src, seed=3)
    base = b.alloc_memory("DEVICE", 16)  # exactly the tensor: nothing modelled follows it
    b.write_memory(base, np.full(16, SENTINEL, np.uint8))
    dst = b.cache_manager.register_cache(CacheDesc(1, [2, 8], DataType.DT_INT8), [base], remote_accessible=True)
    a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id, 1), src, 0, None, None, -1, 1)
    region = b.read_memory(base, 16)
    assert (region[:8] == SENTINEL).all() and np.array_equal(region[8:], data[0][:8])


# ---- vendor: a freed and reused destination is written through the stale table ------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_freed_and_reused_destination(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(4, [2, 8], DataType.DT_INT8)
    src = a.cache_manager.allocate_cache(d)
    old = b.cache_manager.allocate_cache(d)
    old_addrs = list(old.tensor_addrs)
    key = CacheKeyByIdAndIndex(2, old.cache_id, 1)
    a.cache_manager.push_cache(key, src)  # first transfer: the link syncs the table, which holds `old`
    data = fill_random(a, src, seed=8)
    b.cache_manager.deallocate_cache(old)
    reuse = b.cache_manager.allocate_cache(d)  # a newer cache in the same pool memory
    assert reuse.cache_id != old.cache_id and list(reuse.tensor_addrs) == old_addrs
    filled(b, reuse, SENTINEL)
    if mode == "reference":  # memory safety: the live lookup fails, nothing is written
        assert status_of(a.cache_manager.push_cache, key, src) == S.LLM_KV_CACHE_NOT_EXIST
        assert all((t == SENTINEL).all() for t in snapshot(b, reuse))
        return
    a.cache_manager.push_cache(key, src)  # the stale table still holds `old`: its memory is written
    got = snapshot(b, reuse)
    for t in range(4):
        assert np.array_equal(got[t][8:], data[t][:8]) and (got[t][:8] == SENTINEL).all()


@pytest.mark.parametrize("mode", MODES)
def test_freed_before_first_sync_is_unknown(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(2, [1, 4], DataType.DT_INT8)
    src = a.cache_manager.allocate_cache(d)
    old = b.cache_manager.allocate_cache(d)
    b.cache_manager.deallocate_cache(old)
    reuse = b.cache_manager.allocate_cache(d)
    filled(b, reuse, SENTINEL)
    assert status_of(a.cache_manager.push_cache, CacheKeyByIdAndIndex(2, old.cache_id),
                     src) == S.LLM_KV_CACHE_NOT_EXIST
    assert all((t == SENTINEL).all() for t in snapshot(b, reuse))


def test_vendor_stale_key_fallback(make_cluster: Any) -> None:
    """cache_id 0 resolves through the (req_id 0, model_id 0) key of the synced table, also once freed."""
    from reference_impl import CacheKey

    cluster = cluster_for(make_cluster, "vendor")
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(2, [1, 4], DataType.DT_INT8)
    src = a.cache_manager.allocate_cache(d)
    keyed = b.cache_manager.allocate_cache(d, [CacheKey(2, 0, 0)])
    a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, 0), src)
    a.write_tensor(src, 0, np.full(4, 9, np.uint8))
    addrs = list(keyed.tensor_addrs)
    b.cache_manager.deallocate_cache(keyed)
    a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, 0), src)
    assert b.read_memory(addrs[0], 4).tolist() == [9] * 4


# ---- the modes share everything else ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_plain_push_is_identical(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    d = CacheDesc(6, [3, 5], DataType.DT_FLOAT)
    src, dst = a.cache_manager.allocate_cache(d), b.cache_manager.allocate_cache(d)
    data = fill_random(a, src, seed=3)
    a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id, 2), src, 1)
    for t in range(6):
        got = b.read_tensor(dst, t)
        assert np.array_equal(got[40:60], data[t][20:40]) and not got[:40].any()


@pytest.mark.parametrize("mode", MODES)
def test_no_rollback_and_native_status(make_cluster: Any, mode: str) -> None:
    cluster = cluster_for(make_cluster, mode)
    a, b = cluster.node(1), cluster.node(2)
    src = a.cache_manager.allocate_cache(CacheDesc(8, [1, 4], DataType.DT_INT8))
    dst = b.cache_manager.allocate_cache(CacheDesc(4, [1, 4], DataType.DT_INT8))
    filled(a, src, 3)
    with pytest.raises(LLMException, match="layer index") as info:
        a.cache_manager.push_cache(CacheKeyByIdAndIndex(2, dst.cache_id), src, 0, range(0, 4), range(0, 4))
    assert info.value.status_code == S.LLM_PARAM_INVALID
    assert all((t == 3).all() for t in snapshot(b, dst))  # layers 0 and 1 landed before layer 2 failed

"""A local node's memory shared with the parent (nodehost.shared): reads and writes by address with no request,
the same bytes the node reads and writes itself, and every access the node would answer otherwise left to it."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from nodehost.shared import SharedHeap, SharedView
from tests.helpers.data import GUARD, GUARD_BYTES, fill_random, guarded_cache
from tests.helpers.nodes import relink

pytestmark = pytest.mark.nixl


def _desc(api: Any, placement: str, num_tensors: int = 4, shape: tuple[int, ...] = (2, 32)) -> Any:
    return api.CacheDesc(num_tensors, list(shape), api.DataType.DT_UINT8, getattr(api.Placement, placement))


def _spy(node: Any) -> list[str]:
    calls: list[str] = []
    real = node.proc.call
    node.proc.call = lambda op, *a, **k: (calls.append(op), real(op, *a, **k))[1]
    return calls


def _node_reads(node: Any, cache: Any) -> list[list[int]]:
    """Every tensor of ``cache`` as the node process reads it (a request, whatever the parent maps)."""
    return [node.proc.call("node", "read_tensor", (cache, t)).tolist() for t in range(cache.cache_desc.num_tensors)]


def test_a_local_nodes_bytes_are_read_and_written_in_shared_memory_without_a_request(make_cluster: Any) -> None:
    from conformance_tests.backend import call_each

    cluster = make_cluster(1, 2)
    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    assert local.shared is not None and remote.shared is not None
    src = local.cache_manager.allocate_cache(_desc(api, "HOST"))  # in a pool: mapped since the node's init
    dev = local.cache_manager.allocate_cache(_desc(api, "DEVICE"))
    calls = _spy(local)
    data = fill_random(local, src, seed=5)
    call_each(local, "write_tensor", [(dev, t, data[3 - t]) for t in range(4)])
    got = call_each(local, "read_tensor", [(src, t) for t in range(4)] + [(dev, t) for t in range(4)])
    assert calls == [], f"requests for pool memory the parent maps: {calls}"
    assert [g.tolist() for g in got] == [d.tolist() for d in data + data[::-1]]
    assert _node_reads(local, src) == [d.tolist() for d in data]  # the node reads what the parent wrote
    assert _node_reads(local, dev) == [d.tolist() for d in data[::-1]]

    calls = _spy(remote)
    dst, addrs = guarded_cache(remote, _desc(api, "DEVICE"))  # memory the host allocated: one list of it after
    # each allocation's reply names its memory; the guard bytes written into it are then no request
    assert calls == ["node_alloc"] * 4 + ["cm"], calls
    batch = call_each(remote, "alloc_memory", [("HOST", 100), ("DEVICE", 5000)])  # one request, both named
    remote.write_memory(batch[1], np.full(5000, 3, dtype=np.uint8))
    assert calls[-1] == "node_alloc" and calls.count("node_alloc") == 5 and len(calls) == 6, calls
    assert (remote.read_memory(batch[1] + 4990, 10) == 3).all()
    before = len(calls)
    assert (remote.read_memory(addrs[0] - GUARD_BYTES, GUARD_BYTES) == GUARD).all()
    assert [g.tolist() for g in call_each(remote, "read_memory", [(a + 1, 3) for a in addrs])] == [[GUARD] * 3] * 4
    assert len(calls) == before
    relink(cluster)
    local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
    half = dst.cache_desc.size // 2  # batch 0 of each tensor: what NIXL wrote; batch 1 as it was
    expected = [[*d[:half].tolist(), *[GUARD] * half] for d in data]
    assert [remote.read_tensor(dst, t).tolist() for t in range(4)] == expected
    assert remote.proc.call("node", "read_memory", (addrs[1], 8)).tolist() == data[1][:8].tolist()


def test_what_the_node_would_refuse_or_cannot_be_mapped_goes_to_the_node(make_cluster: Any) -> None:
    from conformance_tests.backend import call_each

    cluster = make_cluster(1, 2)
    local, remote = cluster.node(1), cluster.node(2)
    api = local.api
    cache = local.cache_manager.allocate_cache(_desc(api, "HOST"))
    other = remote.cache_manager.allocate_cache(_desc(api, "HOST"))
    calls = _spy(local)
    with pytest.raises(ValueError, match="write_tensor needs"):
        local.write_tensor(cache, 0, np.zeros(3, dtype=np.uint8))  # the node's own check
    with pytest.raises(ValueError, match="write_tensor needs"):
        local.write_tensor(cache, 0, np.zeros(cache.cache_desc.size, dtype=np.int8))
    with pytest.raises(IndexError):
        local.read_tensor(cache, 4)
    with pytest.raises(ValueError, match="address 0"):
        local.read_memory(0, 8)
    assert calls == ["node"] * 4
    assert local.owns(cache) and not local.owns(other)  # another node's addresses are not this node's
    local.read_memory(int(other.tensor_addrs[0]), 0)  # outside every segment of this node's
    assert calls == ["node"] * 5
    data = np.full(cache.cache_desc.size, 7, dtype=np.uint8)
    with pytest.raises(IndexError):  # tensor 9: the write of tensor 1 after it never runs; tensor 0's did
        call_each(local, "write_tensor", [(cache, 0, data), (cache, 9, data), (cache, 1, data + 1)])
    assert calls[-1] == "node_each"
    assert (local.read_tensor(cache, 0) == 7).all() and not (local.read_tensor(cache, 1) == 8).any()


def test_a_dead_or_closed_node_is_not_read_from_memory_the_parent_still_maps(make_cluster: Any) -> None:
    cluster = make_cluster(1, 2)
    node = cluster.node(2)
    cache = node.cache_manager.allocate_cache(_desc(node.api, "HOST"))
    node.read_tensor(cache, 0)
    node.inject({"kind": "kill_node"})
    with pytest.raises(Exception, match="node 2"):
        node.read_tensor(cache, 0)
    survivor = cluster.node(1)
    kept = survivor.cache_manager.allocate_cache(_desc(survivor.api, "HOST"))
    survivor.read_tensor(kept, 0)
    cluster.close()
    with pytest.raises(Exception, match="is not running"):  # the process is the pool's now
        survivor.read_tensor(kept, 0)


def test_a_segment_is_mapped_only_where_the_fd_still_names_it() -> None:
    """The parent maps a segment by the node's fd only when the inode and size are the ones the node listed: an
    fd number the node has given to another buffer since is refused (the node is then asked)."""
    heap = SharedHeap()
    buf = heap.alloc(4096)
    (seg,) = heap.segments()
    addr, nbytes, fd, ino = seg
    assert (addr, nbytes) == (int(buf.ctypes.data), 4096) and not buf.any()
    wrong = SharedView(os.getpid())
    wrong.update([[addr, nbytes, fd, ino + 1]])
    assert wrong.span(addr, 16) is None
    view = SharedView(os.getpid())
    view.update([seg, ["not", "a", "segment", 1]])
    span = view.span(addr + 100, 8)
    assert span is not None and view.span(addr + 4090, 8) is None and view.span(addr - 1, 2) is None
    span[:] = 9
    assert buf[100:108].tolist() == [9] * 8  # one memory: the node's buffer and the parent's mapping
    other = heap.alloc(8192)
    assert heap.containing(addr + 10, 100) == (addr, 4096) and heap.containing(addr + 4000, 200) is None
    assert heap.containing(int(other.ctypes.data) + 8191, 1) == (int(other.ctypes.data), 8192)
    heap.free(other)
    heap.free(buf)
    assert heap.segments() == [] and heap.containing(addr + 10, 100) is None
    with pytest.raises(OSError):
        os.fstat(fd)  # the node's fd is closed with it


def test_a_cache_registered_in_one_shared_buffer_is_one_nixl_registration(make_cluster: Any) -> None:
    """The reference registers with NIXL the whole shared buffer that holds an adopted tensor: a cache whose tensors
    share one allocation costs one registration (and one new metadata), not one per tensor."""
    cluster = make_cluster(1, 2)
    node = cluster.node(2)
    desc = _desc(node.api, "DEVICE")
    base = node.alloc_memory("DEVICE", 4 * desc.size + 64)
    before = node.stats()["registered"]
    node.cache_manager.register_cache(desc, [base + 16 + t * desc.size for t in range(4)])
    assert node.stats()["registered"] == before + 1
    node.cache_manager.register_cache(desc, [base + 32 + t * desc.size for t in range(4)])  # the same buffer again
    assert node.stats()["registered"] == before + 1

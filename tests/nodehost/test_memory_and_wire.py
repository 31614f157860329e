"""The node host's memory accessors and pipe codec, in one process (no node processes, no NIXL)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import reference_impl as ref
from datawire import WireError, rpc
from nodehost.memory import HostMemory, Intervals, device_accessor_kind
from nodehost.wire import NodeCodec, ParentCodec


def test_host_memory_by_address() -> None:
    mem = HostMemory()
    addr = mem.alloc(64)
    data = np.arange(64, dtype=np.uint8)
    mem.write(addr, data)
    assert np.array_equal(mem.read(addr, 64), data)
    mem.write(addr + 8, np.full(4, 0xEE, dtype=np.uint8))
    assert list(mem.read(addr + 6, 8)) == [6, 7, 0xEE, 0xEE, 0xEE, 0xEE, 12, 13]
    with pytest.raises(ValueError):
        mem.alloc(0)
    with pytest.raises(ValueError):
        mem.read(0, 4)
    assert mem.count() == 1
    mem.release_all()
    assert mem.count() == 0


def test_host_memory_serves_a_buffer_again_zeroed_one_release_later_and_frees_the_rest() -> None:
    """Buffers come in power-of-two sizes; a released one cools for one release (a transfer of the cluster that
    ended may still land in it), then serves again zeroed, at the same address; beyond KEPT_PER_SIZE of a size the
    rest are freed."""
    from nodehost import memory, shared

    mem = HostMemory()
    first = [mem.alloc(5000) for _ in range(memory.KEPT_PER_SIZE + 2)]  # served with 8 KiB each
    for addr in first:
        mem.write(addr, np.full(8192, 7, dtype=np.uint8))
    mem.release_all()
    cooling = {mem.alloc(6000) for _ in range(2)}
    assert not cooling & set(first)  # still cooling: not served again yet
    mem.release_all()
    again = [mem.alloc(8000) for _ in range(memory.KEPT_PER_SIZE)]
    assert set(again) <= set(first) and len(set(again)) == memory.KEPT_PER_SIZE
    assert all((mem.read(a, 8192) == 0).all() for a in again)
    h = shared.heap()
    if h is not None:  # the two beyond those kept are no shared buffers any more
        live = {seg[0] for seg in h.segments()}
        assert len(set(first) - live) == 2 and set(again) <= live


def test_intervals_merge_what_touches_and_cover_only_what_they_hold() -> None:
    """Which memory is DEVICE memory: every tensor range and allocation added, merged where they overlap or touch,
    so a span covered by two neighbouring tensors is covered, and one reaching past the set is not."""
    ranges = Intervals()
    for lo, hi in [(100, 200), (300, 400), (200, 250), (390, 500), (50, 60), (600, 600)]:
        ranges.add(lo, hi)
    assert len(ranges) == 3  # [50, 60), [100, 250), [300, 500); the empty [600, 600) adds nothing
    assert ranges.covers(100, 250) and ranges.covers(150, 220) and ranges.covers(300, 500) and ranges.covers(55, 60)
    assert not ranges.covers(99, 150) and not ranges.covers(240, 260) and not ranges.covers(450, 501)
    assert not ranges.covers(10, 20) and not ranges.covers(600, 601) and not ranges.covers(250, 250)
    ranges.add(0, 1000)
    assert len(ranges) == 1 and ranges.covers(0, 1000)
    ranges.clear()
    assert len(ranges) == 0 and not ranges.covers(100, 101)


@pytest.mark.parametrize(("policy", "says_host", "acl", "want"), [
    ("auto", True, False, "host"), ("auto", False, False, None), ("auto", False, True, "acl"),
    ("host", False, False, "host"), ("none", True, True, None), ("acl", False, False, "acl"),
])
def test_device_accessor_policy(monkeypatch: pytest.MonkeyPatch, policy: str, says_host: bool, acl: bool,
                                want: str | None) -> None:
    import nodehost.memory as memory

    monkeypatch.setattr(memory, "acl_missing", lambda: None if acl else "ModuleNotFoundError: acl")
    assert device_accessor_kind(policy, says_host) == want


def test_device_accessor_policy_rejects_typos() -> None:
    with pytest.raises(ValueError, match="NODEHOST_DEVICE_MEMORY"):
        device_accessor_kind("gpu", False)


def _cache(cache_id: int = 7) -> ref.Cache:
    desc = ref.CacheDesc(2, [2, 8], ref.DataType.DT_UINT8, ref.Placement.HOST)
    return ref.Cache(cache_id, desc, [4096, 8192], None, False, False)


def _sections(*sections: object) -> list[bytes]:
    """Sections as a frame delivers them (a codec message's buffers joined)."""
    return [b"".join(s) if isinstance(s, list) else bytes(s) for s in sections]  # type: ignore[arg-type]


def _to_parent(node: NodeCodec, parent: ParentCodec, value: object, status: str = "ok") -> object:
    message = rpc.read_message(_sections(*rpc.reply_frame(5, status, node.reply(status, value, []))))
    assert (message.kind, message.rid, message.word) == (rpc.REPLY, 5, status)
    return parent.reply(status, message.body)


def test_caches_travel_as_handles_and_come_back_as_themselves() -> None:
    node, parent = NodeCodec(ref, cluster_id=1), ParentCodec(ref)
    real = _cache()
    proxy = _to_parent(node, parent, real)
    assert isinstance(proxy, ref.Cache) and proxy is not real
    assert (proxy.cache_id, proxy.tensor_addrs, proxy.is_blocks_cache) == (7, [4096, 8192], False)
    assert proxy.cache_desc.shape == [2, 8] and proxy.cache_desc.data_type is ref.DataType.DT_UINT8
    assert _to_parent(node, parent, real) is proxy  # one proxy per handle
    (args, _kwargs), seen = node.decode_request("cm", _sections(parent.request(("call", proxy), {}))[0])
    assert args[1] is real and seen == [real]


def test_value_types_and_enums_are_rebuilt_with_the_receivers_classes() -> None:
    node, parent = NodeCodec(ref, cluster_id=1), ParentCodec(ref)
    key = ref.CacheKeyByIdAndIndex(2, 9, 1)
    (args, _kw), _seen = node.decode_request("cm", _sections(parent.request((key, ref.Placement.DEVICE), {}))[0])
    assert args[0] == key and args[0] is not key and args[1] is ref.Placement.DEVICE


def test_a_handle_from_another_process_or_cluster_never_resolves() -> None:
    node = NodeCodec(ref, cluster_id=1)
    real = _cache()
    handle = node.handle_of(real)
    assert node.resolve(1, handle, (7, real.cache_desc, [1], False)) is real
    later = node.successor(cluster_id=1)  # the same process serving the next cluster
    foreign = later.resolve(1, handle, (7, real.cache_desc, [1], False))
    assert foreign is not real and isinstance(foreign, ref.Cache)
    other_process = (handle[0] + "x", handle[1])
    assert node.resolve(1, other_process, (7, real.cache_desc, [1], False)) is not real


def test_exceptions_cross_as_records_and_keep_their_status_code() -> None:
    node, parent = NodeCodec(ref), ParentCodec(ref)
    exc = ref.LLMException("no such cache", status_code=ref.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST)
    back = _to_parent(node, parent, exc, "err")
    assert isinstance(back, ref.LLMException)
    assert back.status_code == ref.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST and "no such cache" in str(back)
    assert type(_to_parent(node, parent, TypeError("src_cache only support ['Cache']"), "err")) is TypeError

    class Odd(Exception):
        def __reduce__(self) -> object:
            return (print, ("never called",))

    plain = _to_parent(node, parent, Odd("x"), "err")
    assert type(plain) is Exception and "x" in str(plain)


def test_a_reply_that_is_not_the_wire_is_refused() -> None:
    with pytest.raises(WireError):
        rpc.read_message([pickle.dumps((1, "ok")), b""])
    with pytest.raises(WireError):
        ParentCodec(ref).reply("ok", pickle.dumps([1, []]))


@pytest.mark.parametrize("reply", [
    [[4, 4], np.zeros(7, dtype=np.uint8)],  # the sizes add up to more than the bytes
    [[4], np.zeros(4, dtype=np.uint8)],  # one size for two reads
    [[4, -4], np.zeros(0, dtype=np.uint8)],
    [[4, 4], np.zeros(8, dtype=np.int64)],
    [[4, 4], b"\0" * 8],
])
def test_joined_reads_that_are_not_a_size_per_read_and_their_bytes_are_a_wire_error(reply: list) -> None:
    """A batch of reads comes back as one buffer and the size of each read (``node_read``); a reply that does not
    split into one read each is refused, never cut into wrong pieces."""
    from nodehost.node_access import ProcessNode

    node = ProcessNode()
    node.proc = type("Proc", (), {"call": staticmethod(lambda *args: reply)})()
    with pytest.raises(WireError, match="joined reads"):
        node.call_each("read_memory", [(64, 4), (128, 4)])


def test_joined_reads_split_into_one_array_per_read() -> None:
    from nodehost.node_access import ProcessNode

    node = ProcessNode()
    node.proc = type("Proc", (), {"call": staticmethod(lambda *args: [[2, 0, 3], np.arange(5, dtype=np.uint8)])})()
    got = node.call_each("read_memory", [(64, 2), (99, 0), (128, 3)])
    assert [g.tolist() for g in got] == [[0, 1], [], [2, 3, 4]]

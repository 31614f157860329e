"""The node host's memory accessors and pipe codec, in one process (no node processes, no NIXL)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import reference_impl as ref
from nodehost.memory import HostMemory, device_accessor_kind
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


def test_caches_travel_as_handles_and_come_back_as_themselves() -> None:
    node, parent = NodeCodec(ref, cluster_id=1), ParentCodec(ref)
    real = _cache()
    proxy = parent.loads(node.dumps(real))
    assert isinstance(proxy, ref.Cache) and proxy is not real
    assert (proxy.cache_id, proxy.tensor_addrs, proxy.is_blocks_cache) == (7, [4096, 8192], False)
    assert parent.loads(node.dumps(real)) is proxy  # one proxy per handle
    back, seen = node.loads(parent.dumps(("call", proxy)))
    assert back[1] is real and seen == [real]


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


def test_llm_exception_keeps_its_status_code() -> None:
    node, parent = NodeCodec(ref), ParentCodec(ref)
    exc = ref.LLMException("no such cache", status_code=ref.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST)
    back = parent.decode_error(node.encode_error(exc), "node 2")
    assert isinstance(back, ref.LLMException)
    assert back.status_code == ref.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST and "no such cache" in str(back)
    typed = parent.decode_error(node.encode_error(TypeError("src_cache only support ['Cache']")), "node 2")
    assert type(typed) is TypeError

    class Odd(Exception):
        def __reduce__(self) -> object:
            raise pickle.PicklingError("no")

    plain = parent.decode_error(node.encode_error(Odd("x")), "node 2")
    assert isinstance(plain, RuntimeError) and "Odd" in str(plain)

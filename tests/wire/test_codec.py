"""The one wire (datawire): its closed vocabulary crosses intact, anything else is refused in one line, and nothing
a message says is ever executed or imported."""

from __future__ import annotations

import inspect
import os
import pickle
import socket
import struct
from multiprocessing.connection import Connection, Pipe

import msgpack
import numpy as np
import pytest

import reference_impl.backend as ref
from datawire import (
    Codec,
    ErrorRecord,
    Names,
    NotData,
    Opaque,
    RemoteInterrupt,
    WireError,
    frames,
    rebuild,
    record_of,
)
from datawire.codec import HANDLE, MAX_FRAME, REF, VALUE

API = ref.API


def framed(body: bytes) -> bytes:
    """A codec message around a body of the test's making (its length first, no arrays after it)."""
    return len(body).to_bytes(4, "little") + body


def roundtrip(value, codec: Codec | None = None):
    codec = codec or Codec(Names.of(API))
    return codec.decode(codec.encode(value))


def test_plain_data_crosses_intact():
    value = {"none": None, "flags": [True, False], "ints": [0, -1, (1 << 64) - 1, -(1 << 63), 1 << 64, -(1 << 70)],
             "float": 1.5, "nan": float("inf"), "text": "é", "bytes": b"\x00\xff", "tuple": (1, (2, 3), [4]),
             (1, "key"): "tuple key", "range": range(2, 9, 3), "empty": ()}
    got = roundtrip(value)
    assert got == value and type(got["tuple"]) is tuple and type(got["tuple"][2]) is list


def test_numpy_arrays_and_scalars_cross_as_dtype_shape_and_bytes():
    arrays = [np.arange(24, dtype=np.int32).reshape(2, 3, 4), np.zeros((0, 5), np.uint8), np.arange(8)[::2],
              np.array([True, False]), np.float16(2.5), np.uint64(1 << 63), np.complex64(1 + 2j)]
    for arr in arrays:
        got = roundtrip(arr)
        assert type(got) is type(arr) and np.asarray(got).dtype == np.asarray(arr).dtype
        assert np.array_equal(got, arr)
    writable = roundtrip(np.ones(4, np.uint8))
    writable[0] = 7  # a received array is the receiver's own
    with pytest.raises(NotData, match="not data"):
        Codec().encode(np.array([object()]))


def test_the_apis_enums_and_value_types_cross_by_name_and_are_rebuilt_by_the_receiver():
    desc = API.CacheDesc(2, [4, 8], API.DataType.DT_BF16, API.Placement.HOST, batch_dim_index=0)
    key = API.CacheKey(1, 2, 3)
    got = roundtrip([API.LLMStatusCode.LLM_TIMEOUT, desc, key, API.CacheKeyByIdAndIndex(2, 5, 1),
                     API.BlocksCacheKey(3)])
    assert got[0] is API.LLMStatusCode.LLM_TIMEOUT
    assert isinstance(got[1], API.CacheDesc) and got[1].shape == [4, 8] and got[1].data_type is API.DataType.DT_BF16
    assert got[2] == key and got[3] == API.CacheKeyByIdAndIndex(2, 5, 1) and got[4].model_id == 0
    # an end without the value types keeps them where they are: here, not data at all
    with pytest.raises(NotData):
        Codec(Names.of(API, values=False)).encode(desc)
    # an end that does not know an enum refuses its members
    bare = Codec()
    with pytest.raises(WireError, match="not one this end knows"):
        bare.decode(Codec(Names.of(API)).encode(API.Placement.HOST))


def test_handles_are_what_each_end_makes_of_them():
    kept: list[object] = []

    def export(obj):
        kept.append(obj)
        return [len(kept) - 1, type(obj).__name__]

    class Thing:
        pass

    sender = Codec(export=export)
    receiver = Codec(import_handle=lambda fields: ("stand-in", *fields))
    assert receiver.decode(sender.encode({"t": Thing()})) == {"t": ("stand-in", 0, "Thing")}
    with pytest.raises(WireError, match="a handle, where this end takes none"):
        Codec().decode(sender.encode(Thing()))
    with pytest.raises(NotData, match="is not data"):
        Codec().encode(Thing())


def test_exceptions_cross_as_records_and_come_back_as_the_receivers_classes():
    exc = API.LLMException("boom", status_code=API.LLMStatusCode.LLM_TIMEOUT)
    record = roundtrip(exc)
    assert isinstance(record, ErrorRecord) and record.kind == "LLMException" and record.status_name == "LLM_TIMEOUT"
    again = rebuild(record, API.LLMException, API.LLMStatusCode)
    assert type(again) is API.LLMException and again.status_code is API.LLMStatusCode.LLM_TIMEOUT
    assert "boom" in str(again) and any("reference_impl.status.LLMException" in n for n in again.__notes__)

    class Mine(KeyError):
        pass

    assert type(rebuild(record_of(Mine("k")))) is KeyError  # the nearest builtin kind
    for raised in (KeyboardInterrupt("^C"), SystemExit(3)):
        back = rebuild(record_of(raised))
        assert isinstance(back, RemoteInterrupt) and isinstance(back, Exception)  # never interrupts the receiver
    with pytest.raises(WireError):
        Codec().decode(framed(msgpack.packb(msgpack.ExtType(10, msgpack.packb(["NotAKind", "", "", "", None, None])))))


def test_a_signature_crosses_with_its_defaults_and_an_opaque_repr_for_the_rest():
    def f(a, b: int = 2, *args, c: range | None = None, d=object, **kw) -> None:  # noqa: ANN001, ANN002, ANN003
        return None

    sig = roundtrip(inspect.signature(f))
    assert str(sig) == str(inspect.signature(f))  # annotations as their text, the default object as its repr
    assert list(sig.parameters) == ["a", "b", "args", "c", "d", "kw"]
    assert sig.parameters["b"].default == 2 and sig.parameters["c"].default is None
    assert isinstance(sig.parameters["d"].default, Opaque) and repr(sig.parameters["d"].default) == "<class 'object'>"
    assert sig.parameters["args"].kind is inspect.Parameter.VAR_POSITIONAL


def test_a_pickle_is_never_unpickled(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    for data in (pickle.dumps(Payload()), framed(pickle.dumps(Payload())),
                 framed(msgpack.packb(msgpack.ExtType(HANDLE, pickle.dumps(Payload())))),
                 framed(msgpack.packb([1, msgpack.ExtType(3, pickle.dumps(Payload()))]))):
        with pytest.raises(WireError):
            Codec(import_handle=lambda f: f).decode(data)
    assert not marker.exists()


def test_an_object_named_again_in_a_message_crosses_once_and_arrives_as_the_same_object():
    """A read of every tensor of a cache names the cache once per tensor: its handle (every tensor's address) is in
    the message once, and each later mention is a reference that decodes to the object the first one made."""
    made: list[object] = []

    class Cache:
        pass

    cache, other = Cache(), Cache()
    numbers = {id(cache): 1, id(other): 2}
    sender = Codec(export=lambda obj: ["cache", numbers[id(obj)], list(range(4000))] if isinstance(obj, Cache)
                   else None)

    def import_handle(fields):
        made.append(object())
        return made[-1]

    receiver = Codec(import_handle=import_handle)
    once = sender.encode([(cache, 0)])
    many = sender.encode([(cache, t) for t in range(128)] + [(other, 0)])
    assert len(many) < 2 * len(once) + 128 * 16  # the handle's 4000 addresses twice (two caches), not 129 times
    got = receiver.decode(many)
    assert len(made) == 2 and all(g[0] is made[0] for g in got[:128]) and got[128][0] is made[1]
    assert [g[1] for g in got] == [*range(128), 0]
    desc = API.CacheDesc(2, [4], API.DataType.DT_UINT8, API.Placement.HOST)
    named = Codec(Names.of(API))
    back = named.decode(named.encode({"a": desc, "b": [desc, (desc,)], "enum": [API.Placement.HOST] * 3}))
    assert back["a"] is back["b"][0] is back["b"][1][0] and back["a"].shape == [4]
    assert back["enum"] == [API.Placement.HOST] * 3


@pytest.mark.parametrize("data", [
    framed(msgpack.packb(msgpack.ExtType(REF, (0).to_bytes(4, "little")))),  # a reference to nothing before it
    framed(msgpack.packb([msgpack.ExtType(VALUE, msgpack.packb(["CacheKey", [1, 2, 3], {}])),
                          msgpack.ExtType(REF, (1).to_bytes(4, "little"))])),  # past what the message named
    framed(msgpack.packb(msgpack.ExtType(REF, b"\x00"))),  # not a 4-byte index
    framed(msgpack.packb(msgpack.ExtType(VALUE, msgpack.packb(["CacheKey", [msgpack.ExtType(REF, bytes(4))], {}])))),
])
def test_a_reference_to_nothing_named_before_it_is_a_wire_error(data):
    """References name only what the message's body named before them (inside an extension value, none)."""
    with pytest.raises(WireError, match="reference") as info:
        Codec(Names.of(API)).decode(data)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("data", [
    b"", b"\x01\x00", b"\xff" * 9, framed(b"\xc1"), framed(b"\xc0") + b"x",
    framed(msgpack.packb(msgpack.ExtType(99, b""))), framed(msgpack.packb(msgpack.ExtType(1, b"x"))),
    framed(msgpack.packb(msgpack.ExtType(2, b"12x"))), framed(msgpack.packb(msgpack.ExtType(2, b"9" * 5000))),
    framed(msgpack.packb(msgpack.ExtType(3, b"\x05\x00\x00\x00" + msgpack.packb(["|O8", [1]])))),
    framed(msgpack.packb(msgpack.ExtType(3, b"\x09\x00\x00\x00" + msgpack.packb(["<u1", [1 << 40]])))),
    framed(msgpack.packb(msgpack.ExtType(13, msgpack.packb(["<u1", [1 << 30]])))),
    framed(msgpack.packb([1, msgpack.ExtType(1, b"")])), framed(msgpack.packb(msgpack.ExtType(1, b""))),
    framed(msgpack.packb(msgpack.ExtType(5, msgpack.packb([0, "x", 1])))),
    framed(msgpack.packb({(): 1})),
    framed(msgpack.packb(msgpack.ExtType(11, msgpack.packb([[["not an identifier!", 1, False, None, None]], None])))),
])
def test_malformed_messages_are_one_line_wire_errors(data):
    with pytest.raises(WireError) as info:
        Codec(Names.of(API)).decode(data)
    assert "\n" not in str(info.value)


def test_nesting_is_bounded_both_ways():
    deep: list = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(NotData, match="nested"):
        Codec().encode(deep)
    with pytest.raises(WireError):
        Codec().decode(framed(b"\x91" * 100000 + b"\xc0"))


def test_a_frame_longer_than_the_bound_is_refused_before_it_is_read():
    a, b = socket.socketpair()
    try:
        reader = Connection(os.dup(b.fileno()))
        a.sendall(struct.pack("<I", 1) + struct.pack("<Q", MAX_FRAME * 64))  # a section of 64 GiB
        with pytest.raises(WireError, match="longer than"):
            frames.recv(reader)
        reader.close()
    finally:
        a.close()
        b.close()
    left, right = Pipe()
    frames.send(left, b"x" * 100)
    with pytest.raises(WireError):
        frames.recv(right, limit=10)


def test_arrays_cross_out_of_band_as_views_of_the_received_frame():
    left, right = Pipe()
    arrays = [np.arange(1 << 16, dtype=np.uint8), np.ones((3, 5), np.float32)]
    codec = Codec()
    frames.send(left, codec.encode_parts(("tensors", arrays)))
    (section,) = frames.recv(right)
    name, got = codec.decode(section)
    assert name == "tensors" and all(np.array_equal(g, a) for g, a in zip(got, arrays, strict=True))
    assert got[0].base is not None and got[0].flags.writeable  # a view of the frame's buffer, the receiver's own

"""What a message may make its receiver allocate (datawire.bounds): a small frame that msgpack would turn into
hundreds of megabytes of objects fails that decode in one line, before the objects exist; the kit's own large
messages (a model-scale cache's every tensor, NIXL metadata) still cross."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable

import msgpack
import numpy as np
import pytest

import reference_impl.backend as ref
from conformance_tests.spec.load import load_spec
from datawire import Codec, Names, WireError, decode_plain
from datawire.bounds import BYTES_FLOOR, MAX_VALUES, count_values
from datawire.codec import TUPLE
from tests.helpers import ROOT


def framed(body: bytes) -> bytes:
    return len(body).to_bytes(4, "little") + body


def array32(count: int, element: bytes) -> bytes:
    """A msgpack list of ``count`` copies of one encoded element, written directly (msgpack would build it)."""
    return b"\xdd" + count.to_bytes(4, "big") + element * count


def nested_tuples(depth: int, payload: bytes) -> bytes:
    """A tuple key's extension value nested ``depth`` deep around one bin: each level's payload is copied again."""
    inner = msgpack.packb([payload], use_bin_type=True)
    for _ in range(depth):
        inner = msgpack.packb([msgpack.ExtType(TUPLE, inner)])
    return inner


#: bodies of a few megabytes that decode into hundreds of megabytes (built when asked for, so a probe's process
#: holds only its own): empty maps, empty lists, short strings, ints without a cached object, maps of maps, and a
#: payload copied once per extension value around it
HOSTILE: dict[str, Callable[[], bytes]] = {
    "empty maps": lambda: array32(4 * MAX_VALUES, b"\x80"),
    "empty lists": lambda: array32(4 * MAX_VALUES, b"\x90"),
    "short strings": lambda: array32(4 * MAX_VALUES, b"\xa2ab"),
    "negative ints": lambda: array32(4 * MAX_VALUES, b"\xe0"),
    "maps of maps": lambda: array32(2 * MAX_VALUES, b"\x81\x00\x80"),
}
NESTED_COPIES = "nested copies"
HOSTILE_BYTES: dict[str, Callable[[], bytes]] = {NESTED_COPIES: lambda: nested_tuples(40, b"x" * (BYTES_FLOOR // 2))}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_body_of_too_many_values_is_a_one_line_wire_error(name):
    body = HOSTILE[name]()
    for decode, data in ((Codec(Names.of(ref.API)).decode, framed(body)), (decode_plain, body)):
        with pytest.raises(WireError, match=f"more than {MAX_VALUES} values") as info:
            decode(data)
        assert "\n" not in str(info.value), f"{decode.__name__}({name}): {info.value}"


def test_a_payload_copied_once_per_extension_value_around_it_is_bounded_by_bytes():
    with pytest.raises(WireError, match="bytes copied") as info:
        Codec().decode(framed(HOSTILE_BYTES[NESTED_COPIES]()))
    assert "\n" not in str(info.value)
    assert Codec().decode(framed(nested_tuples(2, b"x" * 1000))) == [((b"x" * 1000,),)]  # a few levels: fine


def test_an_array_header_is_bounded_before_msgpack_reads_it():
    head = msgpack.packb(["<u1", [1]]) + b"\x80" * 100_000
    with pytest.raises(WireError, match="array header of"):
        Codec().decode(framed(msgpack.packb(msgpack.ExtType(13, head))) + b"\x00" * 8)


def test_values_are_counted_exactly_at_every_depth():
    value = [[i, "ab", 1.5, None, {"k": b"xy", "t": msgpack.ExtType(5, b"abc")}] for i in range(3000)]
    assert count_values(msgpack.packb(value), 1 << 30) == 1 + 3000 * (1 + 4 + 1 + 4)
    assert count_values(msgpack.packb(value), 10) == 11  # stops past the limit


def test_the_kits_largest_messages_still_cross():
    """A read of every tensor of the spec's model layout with the most tensors, as the node host sends it (their
    sizes and bytes), a cache handle naming each tensor's address, a push batch of 1024 argument lists, and a NIXL
    metadata blob of 48 MiB in the body."""
    spec = load_spec()
    assert spec.generation is not None and spec.generation.histories is not None
    model = max(spec.generation.histories.model_layouts, key=lambda m: m.num_tensors)
    nbytes = math.prod(model.shape) * (spec.types.element_size(model.data_type) or 1)
    addrs = list(range(1 << 40, (1 << 40) + model.num_tensors))
    codec = Codec(Names.of(ref.API), export=lambda obj: ["cache", 1, "t" * 16, 7, addrs],
                  import_handle=lambda fields: fields)

    class Cache:
        pass

    tensors = [np.full(nbytes, t % 251, dtype=np.uint8) for t in range(model.num_tensors)]
    cache = Cache()
    message = {"read": [[t.size for t in tensors], tensors], "cache": cache,
               "pushes": [[cache, ref.API.CacheKeyByIdAndIndex(2, i, 0), i % 8, [0, 8], None] for i in range(1024)],
               "metadata": b"\x01" * (48 << 20)}
    got = codec.decode(b"".join(codec.encode_parts(message)))
    assert all(np.array_equal(g, t) for g, t in zip(got["read"][1], tensors, strict=True))
    assert len(got["pushes"]) == 1024 and got["pushes"][5][1] == ref.API.CacheKeyByIdAndIndex(2, 5, 0)
    assert len(got["metadata"]) == 48 << 20
    plenty = list(range(MAX_VALUES // 2))  # half the bound in one list: still data
    assert Codec().decode(Codec().encode(plenty)) == plenty


#: decodes one hostile body (by name) in a fresh process and prints its peak RSS in MiB; argv[2] "unbounded"
#: lifts the bounds first, to show what the body costs without them
PROBE = """
import json, resource, sys
import datawire.bounds as bounds, datawire.codec as codec
from tests.wire.test_bounds import HOSTILE, HOSTILE_BYTES, framed
if sys.argv[2] == "unbounded":
    bounds.MAX_VALUES = codec.MAX_VALUES = 1 << 40
    bounds.BYTES_FLOOR = 1 << 40
body = {**HOSTILE, **HOSTILE_BYTES}[sys.argv[1]]()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    codec.Codec().decode(framed(body))
    said = "decoded"
except codec.WireError as exc:
    said = str(exc)
print(json.dumps({"mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "before": before / 1024,
                  "said": said}))
"""


#: a process that does nothing but start the probe: Linux keeps the peak RSS of the process that executes a new
#: program (this test's, hundreds of MiB) as the new program's, so the probe is started from one that is small
LAUNCHER = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"


def peak(name: str, mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", LAUNCHER, sys.executable, "-c", PROBE, name, mode],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("name", ["empty maps", "short strings", NESTED_COPIES])
def test_a_hostile_body_leaves_the_receivers_peak_memory_bounded(name):
    """Measured in a fresh process (its peak RSS, resource.getrusage): the bounded decode adds under 100 MiB to what
    the process held with the body built; without the bounds the same body costs several hundred."""
    bounded = peak(name, "bounded")
    assert bounded["said"] != "decoded" and "more than" in bounded["said"], bounded
    assert bounded["mib"] - bounded["before"] < 100, f"decode({name!r}): {bounded}"
    unbounded = peak(name, "unbounded")
    assert unbounded["mib"] - unbounded["before"] > 200, f"decode({name!r}) without bounds: {unbounded}"

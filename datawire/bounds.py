"""What one message may make its receiver allocate, checked before msgpack builds anything.

A frame's length is bounded (:data:`datawire.codec.MAX_FRAME`), but msgpack turns one byte into a whole object: an
empty map is one byte on the wire and some 70 in memory, so a 10 MB frame of them costs 700 MB. Each message
decoded gets a :class:`Budget`: every msgpack buffer decoded for it (its body, each extension value's payload)
is charged its values (lists, maps and each of their elements, strings, numbers, extension values) against
:data:`MAX_VALUES`, and its bytes, with every extension payload msgpack copies, against a byte budget sized from
the message. Past either, that message is a :class:`WireError` naming what it exceeded, before the objects
exist. Arrays out of band are views of the frame (no copy), so they cost nothing here, whatever their size.
"""

from __future__ import annotations

from typing import Any

#: the most values one message holds (the kit's largest, a read or push of every tensor of a model-scale cache,
#: holds some thousands: its arrays travel out of band)
MAX_VALUES = 1 << 20
#: a buffer up to this long is charged its length in values (none takes less than a byte), a longer one is counted
COUNT_FROM = 4096
#: the bytes msgpack may copy for one message: this many times the message's length (an extension value's payload
#: is copied once per extension value it is nested in), and never less than BYTES_FLOOR
BYTES_PER_BYTE = 4
BYTES_FLOOR = 16 << 20


class WireError(ValueError):
    """A message that is not the wire's data."""


def _sizes() -> tuple[list[int], list[int]]:
    """Per msgpack lead byte: the bytes of an object whose length the lead byte alone gives (a container counts
    its header only: its elements follow and are counted as objects), else 0; and for the others (str, bin,
    ext of 8/16/32-bit length), the width of their length field (an ext has one more byte, its type)."""
    fixed, width = [0] * 256, [0] * 256
    for b in range(256):
        if b <= 0x7F or b >= 0xE0 or 0x80 <= b <= 0x9F or b in (0xC0, 0xC1, 0xC2, 0xC3):
            fixed[b] = 1  # fixint, fixmap, fixarray, nil, (never used), false, true
        elif 0xA0 <= b <= 0xBF:
            fixed[b] = 1 + (b & 0x1F)  # fixstr
    for b, n in ((0xCA, 5), (0xCB, 9), (0xCC, 2), (0xCD, 3), (0xCE, 5), (0xCF, 9), (0xD0, 2), (0xD1, 3),
                 (0xD2, 5), (0xD3, 9), (0xD4, 3), (0xD5, 4), (0xD6, 6), (0xD7, 10), (0xD8, 18),
                 (0xDC, 3), (0xDD, 5), (0xDE, 3), (0xDF, 5)):
        fixed[b] = n
    for b, n in ((0xC4, 1), (0xC5, 2), (0xC6, 4), (0xD9, 1), (0xDA, 2), (0xDB, 4), (0xC7, 1), (0xC8, 2), (0xC9, 4)):
        width[b] = n
    return fixed, width


_FIXED, _WIDTH = _sizes()
_EXT = frozenset((0xC7, 0xC8, 0xC9))


def count_values(buf: Any, limit: int) -> int:
    """The msgpack objects in ``buf`` (at every depth, an extension value's payload as one), or the first count past
    ``limit`` (the rest is not read). Malformed bytes are counted as far as they go: msgpack refuses them next."""
    data = memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf  # no copy of a frame's view
    end, at, count = len(data), 0, 0
    fixed, width = _FIXED, _WIDTH
    while at < end and count <= limit:
        lead = data[at]
        count += 1
        step = fixed[lead]
        if step:
            at += step
            continue
        w = width[lead]
        at += 1 + w + int.from_bytes(data[at + 1:at + 1 + w], "big") + (lead in _EXT)
    return count


class Budget:
    """What one message may still cost: values and bytes (see the module docstring)."""

    __slots__ = ("values", "bytes", "limit")

    def __init__(self, message_bytes: int) -> None:
        self.values = MAX_VALUES
        self.limit = max(BYTES_FLOOR, BYTES_PER_BYTE * message_bytes)
        self.bytes = self.limit

    def buffer(self, buf: Any) -> None:
        """Charge a buffer msgpack is about to decode: its values, and its bytes (what its strings copy)."""
        n = len(buf)
        self.copy(n)
        self.values -= n if n <= COUNT_FROM else count_values(buf, self.values)
        if self.values < 0:
            raise WireError(f"a message of more than {MAX_VALUES} values (lists, maps, their elements, extension "
                            "values): the wire carries at most that many in one message")

    def copy(self, n: int) -> None:
        """Charge ``n`` bytes msgpack copies (an extension value's payload)."""
        self.bytes -= n
        if self.bytes < 0:
            raise WireError(f"a message whose strings and extension values come to more than {self.limit} bytes "
                            "copied: the wire copies at most that much for it")

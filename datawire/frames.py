"""Frames: one message per frame on a connection (a socket pair or a TCP connection, as a
``multiprocessing.connection.Connection`` or a socket; or a channel with ``send_frame`` / ``recv_frame``, such as
an execnet channel to another host), its length checked before any of it is read, so a peer's length prefix can
never make this end allocate more than :data:`~datawire.codec.MAX_FRAME` bytes.

A frame holds one or more sections: ``u32 count``, a ``u64`` length per section, then the sections' bytes. A
section is bytes, or the list of buffers :meth:`datawire.Codec.encode_parts` makes; they are written with one
scatter-gather call, so an array's bytes are never copied on the way out, and read into one buffer, of which
each section is a view (a received array is a view of it too, no copy on the way in).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from typing import Any

from .codec import MAX_FRAME, WireError

#: the most sections a frame may have
MAX_SECTIONS = 8
_COUNT = struct.Struct("<I")
_LENGTH = struct.Struct("<Q")


def _buffers(sections: Sequence[Any]) -> tuple[list[Any], int]:
    if not 0 < len(sections) <= MAX_SECTIONS:
        raise WireError(f"a frame of {len(sections)} sections; the wire carries 1 to {MAX_SECTIONS}")
    parts: list[Any] = []
    lengths = []
    for section in sections:
        pieces = list(section) if isinstance(section, list) else [section]
        lengths.append(sum(memoryview(p).nbytes for p in pieces))
        parts += pieces
    head = _COUNT.pack(len(sections)) + b"".join(_LENGTH.pack(n) for n in lengths)
    total = sum(lengths)
    if total > MAX_FRAME:
        raise WireError(f"a message of {total} bytes; the wire carries at most {MAX_FRAME}")
    return [head, *parts], total


def send(conn: Any, *sections: Any) -> None:
    """One frame of ``sections`` (bytes, or lists of buffers) on ``conn``."""
    parts, _total = _buffers(sections)
    send_frame = getattr(conn, "send_frame", None)
    if send_frame is not None:
        send_frame(b"".join(parts))
        return
    sock = socket.socket(fileno=conn.fileno())
    try:
        _sendall(sock, parts)
    finally:
        sock.detach()


def _sendall(sock: socket.socket, parts: list[Any]) -> None:
    views = [memoryview(p).cast("B") for p in parts if memoryview(p).nbytes]
    while views:
        sent = sock.sendmsg(views[:512])
        while sent:
            if sent >= views[0].nbytes:
                sent -= views[0].nbytes
                views.pop(0)
            else:
                views[0] = views[0][sent:]
                sent = 0


def recv(conn: Any, limit: int = MAX_FRAME) -> list[memoryview]:
    """The next frame's sections (views of one buffer); :class:`WireError` when its prefix says more than ``limit``
    bytes or is malformed (the connection is then unusable), EOFError / OSError when the connection is closed."""
    recv_frame = getattr(conn, "recv_frame", None)
    if recv_frame is not None:
        return _split(memoryview(recv_frame(limit)))
    sock = socket.socket(fileno=conn.fileno())
    try:
        (count,) = _COUNT.unpack(_read(sock, _COUNT.size))
        if not 0 < count <= MAX_SECTIONS:
            raise WireError(f"a frame of {count} sections")
        lengths = [n for (n,) in _LENGTH.iter_unpack(_read(sock, _LENGTH.size * count))]
        total = sum(lengths)
        if total > limit:
            raise WireError(f"a frame longer than {limit} bytes")
        buf = _read(sock, total)
    finally:
        sock.detach()
    view, out, at = memoryview(buf), [], 0
    for n in lengths:
        out.append(view[at:at + n])
        at += n
    return out


def recv_raw(conn: Any, limit: int = MAX_FRAME) -> bytes:
    """The next frame whole, prefix included (to relay it as it is)."""
    sock = socket.socket(fileno=conn.fileno())
    try:
        head = _read(sock, _COUNT.size)
        (count,) = _COUNT.unpack(head)
        if not 0 < count <= MAX_SECTIONS:
            raise WireError(f"a frame of {count} sections")
        lengths = _read(sock, _LENGTH.size * count)
        total = sum(n for (n,) in _LENGTH.iter_unpack(lengths))
        if total > limit:
            raise WireError(f"a frame longer than {limit} bytes")
        return bytes(head + lengths + _read(sock, total))
    finally:
        sock.detach()


def send_raw(conn: Any, frame: bytes) -> None:
    """A whole frame (``recv_raw``'s), checked first, written as it is."""
    _split(memoryview(frame))
    sock = socket.socket(fileno=conn.fileno())
    try:
        sock.sendall(frame)
    finally:
        sock.detach()


def _split(view: memoryview) -> list[memoryview]:
    """A frame that arrived whole (over a channel) as its sections."""
    if len(view) < _COUNT.size:
        raise WireError("a frame shorter than its prefix")
    (count,) = _COUNT.unpack(view[:_COUNT.size])
    if not 0 < count <= MAX_SECTIONS:
        raise WireError(f"a frame of {count} sections")
    at = _COUNT.size + _LENGTH.size * count
    if len(view) < at:
        raise WireError("a frame shorter than its prefix")
    lengths = [n for (n,) in _LENGTH.iter_unpack(view[_COUNT.size:at])]
    if at + sum(lengths) != len(view):
        raise WireError("a frame whose sections do not add up to it")
    out = []
    for n in lengths:
        out.append(view[at:at + n])
        at += n
    return out


def _read(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise EOFError("the connection closed")
        got += k
    return buf

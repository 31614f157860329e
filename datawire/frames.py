"""Frames: one message per frame on a ``multiprocessing.connection.Connection`` (a pipe, or a socket), its length
checked before any of it is read, so a peer's length prefix can never make this end allocate more than
:data:`~datawire.codec.MAX_FRAME` bytes."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

from .codec import MAX_FRAME, WireError


def send(conn: Any, data: bytes) -> None:
    if len(data) > MAX_FRAME:
        raise WireError(f"a message of {len(data)} bytes; the wire carries at most {MAX_FRAME}")
    conn.send_bytes(data)


def recv(conn: Any, limit: int = MAX_FRAME) -> bytes:
    """The next frame; :class:`WireError` when its length prefix says more than ``limit`` (the connection is then
    unusable), EOFError / OSError when the connection is closed."""
    try:
        return bytes(conn.recv_bytes(limit))
    except OSError as exc:
        if "bad message length" in str(exc):
            raise WireError(f"a frame longer than {limit} bytes (or a malformed length prefix)") from None
        raise


def incoming(conn: Any, decode: Callable[[bytes], Any], who: str) -> Iterator[Any]:
    """Each message arriving on ``conn``, decoded, until the connection closes or a frame is not the wire's (said
    in one line on stderr, as ``who``: nothing more is taken from that connection)."""
    while True:
        try:
            data = recv(conn)
        except (EOFError, OSError, WireError):
            return
        try:
            message = decode(data)
        except (WireError, ValueError, TypeError) as exc:
            print(f"{who}: a message that is not the wire's: {exc}", file=sys.stderr, flush=True)
            return
        yield message

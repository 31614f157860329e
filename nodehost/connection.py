"""Small helpers for ``multiprocessing.connection`` sockets and pipes."""

from __future__ import annotations

import contextlib
import socket
from multiprocessing.connection import Connection
from typing import Any


def shutdown_connection(conn: Connection | Any) -> None:
    """Wake up any thread blocked reading ``conn`` (closing the fd alone would not), then close it."""
    try:
        sock = socket.socket(fileno=conn.fileno())
    except (OSError, ValueError):  # closed already, or not a socket (an execnet channel): just close it
        with contextlib.suppress(Exception):
            conn.close()
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.detach()
    with contextlib.suppress(OSError):
        conn.close()


def no_delay(conn: Connection | Any) -> Any:
    """Turn Nagle's algorithm off on a TCP connection: ``send_bytes`` writes a long message as a header and a
    body, and Nagle would hold the body back until the peer's delayed ACK (tens of ms per request)."""
    with contextlib.suppress(OSError, ValueError):
        sock = socket.socket(fileno=conn.fileno())
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        finally:
            sock.detach()
    return conn

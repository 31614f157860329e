"""Small helpers for ``multiprocessing.connection`` sockets and pipes."""

from __future__ import annotations

import contextlib
import socket
from multiprocessing.connection import Connection
from typing import Any


def shutdown_connection(conn: Connection | Any) -> None:
    """Wake every thread blocked reading ``conn`` and end its later reads and writes (EOF, EPIPE), leaving the fd
    open: the thread that reads ``conn`` closes it when it is done (under the lock its writers hold).

    Closing here would free the fd number while a reader or writer may hold it between taking the number and
    its next system call; the next socket the process opens gets that number, and the stale thread would read
    that connection's bytes (seen: a link's handshake read "bad message length" under load). Not a socket (an
    execnet channel): closed, which is what ends it."""
    try:
        sock = socket.socket(fileno=conn.fileno())
    except (OSError, ValueError):  # closed already, or not a socket: closing it is what ends it
        with contextlib.suppress(Exception):
            conn.close()
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.detach()


def drop_connection(conn: Connection | Any) -> None:
    """Shut ``conn`` down and close it: for a connection no other thread reads or writes."""
    shutdown_connection(conn)
    with contextlib.suppress(Exception):
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

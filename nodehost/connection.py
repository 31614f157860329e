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
    except (OSError, ValueError):
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.detach()
    with contextlib.suppress(OSError):
        conn.close()

"""Closing a connection that another thread reads: the fd number is never handed to a new socket while a stale
reader or writer may still use it (the bug: a link's handshake read another connection's bytes under load)."""

from __future__ import annotations

import os
import socket
import threading
import time
from multiprocessing.connection import Pipe

import pytest

from datawire import frames
from nodehost.connection import drop_connection, shutdown_connection
from reference_impl.multiprocess.control import ControlServer, PeerLink


def test_shutting_down_wakes_the_reader_and_keeps_the_fd_from_the_next_socket() -> None:
    ours, theirs = Pipe(duplex=True)
    ended: list[BaseException] = []

    def read() -> None:
        try:
            frames.recv(ours)
        except (EOFError, OSError) as exc:
            ended.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    fd = ours.fileno()
    shutdown_connection(ours)
    reader.join(5.0)
    assert not reader.is_alive() and ended, "shutdown_connection did not wake the blocked reader"
    os.fstat(fd)  # still open: a stale thread holding this number reads EOF, not someone else's bytes
    fresh = socket.socket()
    try:
        assert fresh.fileno() != fd, f"the shut-down connection's fd {fd} went to a new socket"
    finally:
        fresh.close()
        ours.close()
        theirs.close()


def test_dropping_a_connection_closes_its_fd() -> None:
    ours, theirs = Pipe(duplex=True)
    fd = ours.fileno()
    drop_connection(ours)
    with pytest.raises(OSError):
        os.fstat(fd)
    theirs.close()


def test_a_closed_links_fd_is_closed_by_its_reader_as_it_ends() -> None:
    """The fd that shutdown_connection leaves open is not leaked: the link's reader closes it."""
    key = os.urandom(32)
    server = ControlServer(key, lambda sc, op, args: None, lambda sc: None)
    try:
        peer = PeerLink(2, server.address, key)
        assert peer.request("ping", timeout=10.0) is None
        fd = peer.conn.fileno()
        peer.close()
        assert peer.broken.wait(5.0)
        for _ in range(500):  # the reader closes the fd as it ends, just after marking the link broken
            if peer.conn.closed:
                break
            time.sleep(0.01)
        assert peer.conn.closed, f"the link's reader did not close fd {fd}"
    finally:
        server.close()

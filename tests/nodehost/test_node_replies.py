"""What the node host takes from a node process's replies (nodehost.process): an answer to a request it has not made
(or has had answered) breaks the wire, so a node cannot make the node host decode and keep answers without end; a
late answer to a request whose caller stopped waiting is still taken, once."""

from __future__ import annotations

import multiprocessing
import os
import time
from typing import Any

import pytest

from datawire import Codec, frames, rpc
from nodehost.process import NodeProcess
from nodehost.wire import hello_frame

STRANGERS = 1000


def node(conn: Any, _parent_pid: int, _authkey: bytes, strangers: int, delay_s: float) -> None:
    """A node process that answers each request with its argument, after ``delay_s``, each answer preceded by
    ``strangers`` answers to requests never made."""
    frames.send(conn, *hello_frame(rpc.OK, [("127.0.0.1", 1), os.getpid()]))
    codec = Codec()
    responder = rpc.Responder(conn, lambda _op, body: (codec.decode(body), None), lambda *_: b"", "test node")
    for request in responder.requests():
        time.sleep(delay_s)
        for i in range(strangers):
            frames.send(conn, *rpc.reply_frame(request.rid + 1000 + i, rpc.OK, codec.encode_parts([None, []])))
        frames.send(conn, *rpc.reply_frame(request.rid, rpc.OK, codec.encode_parts([request.args[0][0], []])))


class PlainCodec:
    def __init__(self) -> None:
        self.codec = Codec()

    def request(self, args: Any, kwargs: Any) -> list[Any]:
        return self.codec.encode_parts([tuple(args), dict(kwargs)])

    def reply(self, _status: str, payload: Any) -> Any:
        return self.codec.decode(payload)[0]

    def _error(self, record: Any) -> BaseException:
        return RuntimeError(record.message)


def started(strangers: int, delay_s: float = 0.0) -> NodeProcess:
    proc = NodeProcess(multiprocessing.get_context("spawn"), node, (strangers, delay_s), b"k", PlainCodec(),
                       "test node", RuntimeError)
    proc.wait_ready(time.monotonic() + 60)
    return proc


def test_answers_to_requests_never_made_break_the_wire() -> None:
    proc = started(STRANGERS)
    try:
        with pytest.raises(RuntimeError, match="broke the wire: it answered request 100[0-9], which was not made"
                           ) as info:
            proc.call("echo", 7)
        assert "\n" not in str(info.value)
        assert not proc.running  # the pool replaces it
    finally:
        proc.kill()
        proc.finish(time.monotonic())


def test_a_node_that_answers_what_it_was_asked_serves_on() -> None:
    proc = started(0)
    try:
        assert [proc.call("echo", n) for n in range(3)] == [0, 1, 2]
    finally:
        proc.kill()
        proc.finish(time.monotonic())


def test_a_late_answer_to_a_request_given_up_on_is_taken_once() -> None:
    proc = started(0, delay_s=0.3)
    try:
        with pytest.raises(TimeoutError):
            proc.call_within(0.05, "echo", 1)
        assert proc.call("echo", 2) == 2  # the first's late answer came first, and did not break the wire
        assert proc.running
    finally:
        proc.kill()
        proc.finish(time.monotonic())

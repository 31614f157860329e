"""datawire.rpc, the one request/reply layer: what a client takes from its peer (a reply to a request never made, a
late reply, a peer that goes away), exceptions as records both ways, and that no other module of the project has an
envelope, a status vocabulary or a reply slot of its own."""

from __future__ import annotations

import ast
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import reference_impl as ref
from datawire import Codec, Names, WireError, frames, rebuild, rpc

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("datawire", "conformance_tests", "nodehost", "reference_impl", "mutants")
CODEC = Codec(Names.of(ref), make_error=lambda record: rebuild(record, ref.LLMException, ref.LLMStatusCode))


def _client(conn: Any, read: bool = False) -> rpc.Client:
    def next_frame(deadline: float | None) -> list[Any]:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0 or not select.select([conn], [], [], left)[0]:
            raise TimeoutError
        return frames.recv(conn)

    client = rpc.Client(conn, lambda _status, body: CODEC.decode(body), lambda: rpc.PeerGone("the peer is gone"),
                        read=next_frame if read else None)
    if not read:
        client.start_reader("test-reader")
    return client


@pytest.fixture(params=["reader thread", "waiters read"])
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[rpc.Client, socket.socket]]:
    """A client, and the peer's end of its connection (the test plays the peer by hand)."""
    ours, theirs = socket.socketpair()
    client = _client(ours, read=request.param == "waiters read")
    client.peer = theirs  # type: ignore[attr-defined]
    yield client, theirs
    _end(client)


def _requests(conn: socket.socket) -> Iterator[rpc.Message]:
    while True:
        yield rpc.read_message(frames.recv(conn))


def _reply(conn: socket.socket, rid: int, status: str, value: Any) -> None:
    frames.send(conn, *rpc.reply_frame(rid, status, CODEC.encode_parts(value)))


def _answer_in_thread(client: rpc.Client, slot: rpc.Pending, timeout: float) -> dict[str, Any]:
    got: dict[str, Any] = {}

    def wait() -> None:
        try:
            got["value"] = client.answer(slot, timeout)
        except BaseException as exc:  # noqa: BLE001 - the test looks at what it was
            got["error"] = exc

    thread = threading.Thread(target=wait)
    thread.start()
    got["thread"] = thread
    return got


def test_a_reply_to_an_unknown_id_breaks_the_conversation_and_fails_what_waits(pair) -> None:
    client, peer = pair
    slot = client.submit("echo", CODEC.encode_parts([1]))
    asked = next(_requests(peer))
    assert (asked.kind, asked.word) == (rpc.REQUEST, "echo")
    waiting = _answer_in_thread(client, slot, 10.0)
    _reply(peer, asked.rid + 1000, rpc.OK, "a stranger")
    waiting["thread"].join(10.0)
    assert isinstance(waiting.get("error"), rpc.PeerGone), waiting
    assert client.broke is not None and f"answered request {asked.rid + 1000}, which was not made" in client.broke
    with pytest.raises(rpc.PeerGone):
        client.submit("echo", CODEC.encode_parts([2]))


def test_a_reply_after_the_deadline_is_taken_once_and_the_next_request_is_served(pair) -> None:
    client, peer = pair
    requests = _requests(peer)
    late = client.submit("echo", CODEC.encode_parts([1]))
    first = next(requests)
    with pytest.raises(rpc.NoAnswer):
        client.answer(late, 0.05)
    _reply(peer, first.rid, rpc.OK, "late")
    second_slot = client.submit("echo", CODEC.encode_parts([2]))
    second = next(requests)
    _reply(peer, second.rid, rpc.OK, "in time")
    assert client.answer(second_slot, 10.0) == "in time"
    assert not client.closed.is_set() and client.broke is None
    _reply(peer, first.rid, rpc.OK, "late again")  # taken once: a second reply to it is a stranger's
    with pytest.raises(rpc.PeerGone):  # at once, or (a reader thread) when the request is made
        client.call("echo", CODEC.encode_parts([3]), 10.0)
    assert client.broke is not None and f"answered request {first.rid}" in client.broke


def test_the_peer_gone_mid_wait_fails_the_waiting_request(pair) -> None:
    client, peer = pair
    slot = client.submit("echo", CODEC.encode_parts([1]))
    waiting = _answer_in_thread(client, slot, 10.0)
    time.sleep(0.05)
    peer.shutdown(socket.SHUT_RDWR)
    waiting["thread"].join(10.0)
    assert not waiting["thread"].is_alive()
    assert isinstance(waiting.get("error"), rpc.PeerGone), waiting
    assert client.broke is None  # gone, not broken


def test_a_reply_that_is_not_data_fails_its_request_alone(pair) -> None:
    client, peer = pair
    slot = client.submit("echo", CODEC.encode_parts([1]))
    frames.send(peer, *rpc.reply_frame(next(_requests(peer)).rid, rpc.OK, b"\x04\x00\x00\x00\xc1\xc1\xc1\xc1"))
    with pytest.raises(WireError, match="not data"):
        client.answer(slot, 10.0)
    assert not client.closed.is_set()


def _end(client: rpc.Client, *threads: threading.Thread) -> None:
    """End a client and the peer serving it: every socket shut down and every reader done before any fd is closed
    (a thread still reading a closed fd's number would read the next test's socket)."""
    ours, theirs = client.conn, client.peer  # type: ignore[attr-defined]
    for sock in (ours, theirs):
        sock.shutdown(socket.SHUT_RDWR)
    for thread in (*threads, client.reader):
        if thread is not None:
            thread.join(10.0)
    ours.close()
    theirs.close()


def _serve(conn: socket.socket, handlers: dict[str, Any]) -> threading.Thread:
    responder = rpc.Responder(conn, lambda _op, body: (CODEC.decode(body), None),
                              lambda _status, value, _context: CODEC.encode_parts(value), "the test peer")

    def loop() -> None:
        for request in responder.requests():
            responder.answer(request, lambda r: handlers[r.op](*r.args))

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_an_exception_crosses_as_a_record_and_is_rebuilt_with_the_receivers_classes() -> None:
    ours, theirs = socket.socketpair()

    def missing(cache_id: int) -> None:
        raise ref.LLMException(f"cache_id: {cache_id} does not exist",
                               status_code=ref.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST)

    class Odd(ValueError):
        def __reduce__(self) -> Any:
            return (print, ("never called",))

    def odd() -> None:
        raise Odd("an odd one")

    server = _serve(theirs, {"missing": missing, "odd": odd, "lock": lambda: threading.Lock(), "echo": lambda x: x})
    client = _client(ours)
    client.peer = theirs  # type: ignore[attr-defined]
    try:
        with pytest.raises(ref.LLMException) as info:
            client.call("missing", CODEC.encode_parts([7]), 10.0)
        assert info.value.status_code == ref.LLMStatusCode.LLM_KV_CACHE_NOT_EXIST and "7 does not exist" in str(info.value)
        with pytest.raises(ValueError, match="an odd one") as odd_info:
            client.call("odd", CODEC.encode_parts([]), 10.0)
        assert type(odd_info.value) is ValueError  # the kind, never the raiser's class
        with pytest.raises(RuntimeError, match="the test peer's lock cannot be sent"):
            client.call("lock", CODEC.encode_parts([]), 10.0)
        assert client.call("echo", CODEC.encode_parts(["still served"]), 10.0) == "still served"
    finally:
        _end(client, server)


def test_a_notice_gets_no_reply_and_a_notice_to_a_client_goes_to_its_handler() -> None:
    seen: list[Any] = []
    told = threading.Event()

    def client_of(conn: socket.socket, peer: socket.socket) -> rpc.Client:
        client = rpc.Client(conn, lambda _status, body: CODEC.decode(body), lambda: rpc.PeerGone("gone"),
                            on_notice=lambda op, body: (seen.append((op, CODEC.decode(body))), told.set()))
        client.peer = peer  # type: ignore[attr-defined]
        client.start_reader("test-reader")
        return client

    ours, theirs = socket.socketpair()
    server = _serve(theirs, {"note": lambda x: seen.append(x), "echo": lambda x: x})
    client = client_of(ours, theirs)
    try:
        client.notify("note", CODEC.encode_parts(["a note"]))
        assert client.call("echo", CODEC.encode_parts([1]), 10.0) == 1  # no reply came for the note before it
        assert seen == ["a note"]
    finally:
        _end(client, server)
    ours, theirs = socket.socketpair()
    client = client_of(ours, theirs)
    try:
        rpc.Responder(theirs, lambda *_: (None, None), lambda *_: b"", "peer").notify("revoke", CODEC.encode_parts([3]))
        assert told.wait(10.0) and seen[-1] == ("revoke", [3])
    finally:
        _end(client)


# ---------------------------------------------------------------------------------------------- one layer only


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def _is_event(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Event"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "threading")


def _waiters(tree: ast.Module) -> list[str]:
    """Classes shaped as a reply slot: an Event of their own beside a status (in ``__slots__`` or set on self)."""
    found = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        names: set[str] = set()
        event = False
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == "__slots__" and isinstance(node.value, ast.Tuple):
                        names |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id == "self":
                        names.add(target.attr.lstrip("_"))
                        event = event or _is_event(node.value)
        if (event or "event" in names) and "status" in names:
            found.append(cls.name)
    return found


def _status_words(tree: ast.Module) -> list[str]:
    """Module-level names bound to a reply status word ("ok", "err", "raise")."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            if any(isinstance(v, ast.Constant) and v.value in ("ok", "err", "raise") for v in values):
                found += [ast.unparse(t) for t in node.targets]
    return found


def test_no_module_but_rpc_has_a_reply_slot_or_status_words_of_its_own() -> None:
    slots, words = [], []
    for path, tree in _modules():
        if path == ROOT / "datawire" / "rpc.py":
            assert _waiters(tree) == ["Pending"] and _status_words(tree) == ["(OK, ERR)"]
            continue
        slots += [f"{path.relative_to(ROOT)}: {name}" for name in _waiters(tree)]
        words += [f"{path.relative_to(ROOT)}: {name}" for name in _status_words(tree)]
    assert not slots, f"reply slots outside datawire.rpc: {slots}"
    assert not words, f"status words outside datawire.rpc: {words}"


#: the modules of the three former layers that send requests or answer them
LAYERS = ("conformance_tests/isolation/executor.py", "conformance_tests/isolation/child.py", "nodehost/process.py",
          "nodehost/serve.py", "reference_impl/multiprocess/control.py")


@pytest.mark.parametrize("module", LAYERS)
def test_the_three_layers_share_the_envelope(module: str) -> None:
    """Each sends and reads requests and replies through datawire.rpc, and makes no frame header of its own."""
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module == "datawire" for alias in node.names}
    assert "rpc" in imported, f"{module} does not use datawire.rpc"
    headers = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Call)
               and isinstance(node.func, ast.Name | ast.Attribute)
               and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) in ("encode_plain",
                                                                                               "decode_plain")]
    assert not headers, f"{module} makes or reads frame headers of its own: {headers}"

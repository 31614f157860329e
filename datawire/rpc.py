"""Requests and replies: the one request/reply layer of the project's wire, used at every boundary (the kit and its
isolated backend, the node host and its node processes, the multi-process reference's nodes among themselves).

**The envelope.** Every frame of a conversation is a plain header (msgpack's own types, :func:`~datawire.codec.
encode_plain`) and at most one body, a codec message that the layer's own :class:`~datawire.Codec` makes and reads
(so each layer keeps its names and handles, and nothing crosses as code):

* a request: ``["q", id, op]`` and its arguments; id 0 asks for no reply (a notice, which either end may send);
* a reply: ``["r", id, status]`` and, as ``status`` says, the value (:data:`OK`) or the exception, which the codec
  carries as an error record (:data:`ERR`). The first message a served end sends (its hello: who it is, or why it
  could not start) is the reply to request 0.

The header is plain so the receiver learns which request a reply answers even when its body is not data: that
request alone fails. A reply to a request that was never made, or that was answered already, breaks the
conversation (kept, such replies would pile up in the receiver).

**The ends.** A :class:`Client` sends requests and routes each reply to the request's :class:`Pending` slot: a
reader thread of its own reads the connection, or (``read`` given, no thread) the waiting threads take turns at
reading it, which spares a thread hand-off per reply. A slot is waited on with a deadline; when the peer goes away
every slot waiting fails with the client's ``gone`` exception. A :class:`Responder` reads requests, runs each
through the layer's handler, and replies with its value or its exception.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from . import frames
from .bounds import WireError
from .codec import MAX_FRAME, decode_plain, encode_plain

#: a reply's status: the one vocabulary of every layer
OK, ERR = "ok", "err"
STATUSES = (OK, ERR)
#: a header's first word: what the frame is
REQUEST, REPLY = "q", "r"
#: the id of a notice (a request that wants no reply) and of the hello (the reply to a request never sent)
NOTICE = HELLO = 0


class PeerGone(Exception):
    """The peer went away (its connection closed, its process died) or broke the conversation."""


class NoAnswer(TimeoutError):
    """No reply within the time a caller gave (not the peer's own TimeoutError, which crosses as a record)."""


# ---------------------------------------------------------------------------------------------- the envelope


def request_frame(rid: int, op: str, body: Any) -> tuple[Any, ...]:
    """A request's sections: its header, then its body (a codec message, or the buffers of one)."""
    return encode_plain([REQUEST, rid, op]), body


def reply_frame(rid: int, status: str, body: Any) -> tuple[Any, ...]:
    """A reply's sections: its header, then its body (the value, or the exception, as a codec message)."""
    return encode_plain([REPLY, rid, status]), body


@dataclass(frozen=True, slots=True)
class Message:
    """A frame read as the envelope: ``kind`` REQUEST or REPLY, ``word`` the op or the status, ``body`` undecoded."""

    kind: str
    rid: int
    word: str
    body: Any


def read_message(sections: list[Any]) -> Message:
    """The envelope of a frame; :class:`~datawire.WireError` when it is not one (the peer broke the wire)."""
    got: Any = decode_plain(sections[0]) if len(sections) == 2 else None
    if not (isinstance(got, list) and len(got) == 3 and got[0] in (REQUEST, REPLY) and type(got[1]) is int
            and isinstance(got[2], str) and (got[0] == REQUEST or got[2] in STATUSES)):
        raise WireError("a frame that is not [q, id, op] or [r, id, status] and a body")
    return Message(got[0], got[1], got[2], sections[1])


def read_hello(sections: list[Any]) -> Message:
    """The first message a served end sends: the reply to request 0."""
    message = read_message(sections)
    if message.kind != REPLY or message.rid != HELLO:
        raise WireError("a first message that is not a hello")
    return message


def hello_frame(status: str, body: Any) -> tuple[Any, ...]:
    return reply_frame(HELLO, status, body)


# ---------------------------------------------------------------------------------------------- the slot


class Pending:
    """One request's reply slot: filled once (by whoever reads the connection), waited on with a deadline."""

    __slots__ = ("rid", "op", "status", "value", "_event")

    def __init__(self, rid: int, op: str) -> None:
        self.rid = rid
        self.op = op
        self.status = ""
        self.value: Any = None
        self._event = threading.Event()

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def fill(self, status: str, value: Any) -> None:
        """The reply: ``value`` the decoded value (OK) or the exception to raise (ERR)."""
        self.status, self.value = status, value
        self._event.set()

    def wait(self, timeout: float | None) -> bool:
        return self._event.wait(timeout)

    def result(self) -> Any:
        """The reply's value, or its exception raised; :class:`~datawire.WireError` when an error reply does not
        hold an exception."""
        if self.status == OK:
            return self.value
        if isinstance(self.value, BaseException):
            raise self.value
        raise WireError(f"the peer raised something that is not an exception: {type(self.value).__name__}")


# ---------------------------------------------------------------------------------------------- the client


Read = Callable[[float | None], list[Any]]


class Client:
    """Requests to one peer over one connection (several threads may ask at once).

    ``decode(status, body)`` makes a reply's body a value (an exception for ERR); a body it refuses
    (:class:`~datawire.WireError`) fails that request alone. ``gone()`` is the exception every request raises once
    the peer is gone (read it when raising: the reason may be known only then); ``on_notice(op, body)`` takes the
    notices the peer sends. ``read(deadline)``, when given, is how a waiting thread reads the next frame (it raises
    TimeoutError past the monotonic ``deadline``, EOFError/OSError when the peer is gone); without it,
    :meth:`start_reader` starts a thread that reads ``conn``. ``on_close()`` runs once, when the peer is found gone,
    before the requests waiting fail."""

    def __init__(self, conn: Any, decode: Callable[[str, Any], Any], gone: Callable[[], BaseException],
                 on_notice: Callable[[str, Any], None] | None = None, read: Read | None = None,
                 on_close: Callable[[], None] | None = None, owns_conn: bool = False, limit: int = MAX_FRAME) -> None:
        self.conn = conn
        self.decode = decode
        self.gone = gone
        self.on_notice = on_notice
        self.on_close = on_close
        #: the reader thread closes the connection when it is done (it reads the fd: closed under it by another
        #: thread, the fd's number could be reused by a new socket and read here)
        self.owns_conn = owns_conn
        self.limit = limit
        self._read = read
        self._lock = threading.Lock()
        self._turn = threading.Condition(self._lock)  # a waiting thread's turn at reading (``read`` given)
        self._reading = False
        self.send_lock = threading.Lock()
        self._next = 1
        self._pending: dict[int, Pending] = {}
        #: requests whose caller stopped waiting: a late reply to each is still taken, once
        self._abandoned: set[int] = set()
        #: set when the peer is gone; ``broke`` says how it broke the conversation, if it did
        self.closed = threading.Event()
        self.broke: str | None = None
        self.reader: threading.Thread | None = None

    # ---- asking ----

    def submit(self, op: str, body: Any) -> Pending:
        """Send the request now; its slot comes back (wait with :meth:`answer`), so requests to several peers can
        run at once."""
        with self._lock:
            if self.closed.is_set():
                raise self.gone()
            rid, self._next = self._next, self._next + 1
            slot = self._pending[rid] = Pending(rid, op)
        try:
            self.send(request_frame(rid, op, body))
        except (OSError, ValueError, AttributeError):
            with self._lock:
                self._pending.pop(rid, None)
            raise self.gone() from None
        return slot

    def answer(self, slot: Pending, timeout: float | None) -> Any:
        """The slot's reply (its value, or its exception raised), waited for at most ``timeout`` seconds:
        :class:`NoAnswer` past it, and the request is abandoned (its late reply is taken and dropped)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not (self._lead(slot, deadline) if self._read is not None else slot.wait(timeout)):
            self.abandon(slot)
            raise NoAnswer(f"no answer to {slot.op!r} within {timeout} s")
        return slot.result()

    def call(self, op: str, body: Any, timeout: float | None = None) -> Any:
        return self.answer(self.submit(op, body), timeout)

    def notify(self, op: str, body: Any) -> None:
        """A notice (no reply); a peer that is gone has nothing to be told, so a failure to send is ignored."""
        try:
            self.send(request_frame(NOTICE, op, body))
        except (OSError, ValueError, AttributeError):
            pass

    def send(self, sections: tuple[Any, ...]) -> None:
        with self.send_lock:
            frames.send(self.conn, *sections)

    def abandon(self, slot: Pending) -> None:
        with self._lock:
            if self._pending.pop(slot.rid, None) is not None:
                self._abandoned.add(slot.rid)

    # ---- reading ----

    def start_reader(self, name: str) -> None:
        """Read the connection on a thread of this client's until the peer is gone."""
        self.reader = threading.Thread(target=self._read_loop, name=name, daemon=True)
        self.reader.start()

    def _read_loop(self) -> None:
        try:
            while self.take(frames.recv(self.conn, self.limit)):
                pass
        except WireError as exc:  # a frame that is not even a frame: the peer is not to be trusted with another
            self.broke = self.broke or f"sent a frame that is not the wire's ({exc})"
        except (EOFError, OSError):
            pass  # closed: the peer is gone
        finally:
            self.close()
            if self.owns_conn:
                with self.send_lock:
                    try:
                        self.conn.close()
                    except OSError:
                        pass

    def _lead(self, slot: Pending, deadline: float | None) -> bool:
        """Wait for ``slot``, reading the connection whenever no other waiting thread is (``read`` given)."""
        assert self._read is not None
        while True:
            with self._lock:
                while self._reading and not slot.done:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self._turn.wait(left)
                if slot.done:
                    return True
                self._reading = True
            try:
                if not self.take(self._read(deadline)):
                    raise PeerGone(self.broke or "")
            except TimeoutError:
                return slot.done
            except (EOFError, OSError, WireError, PeerGone) as exc:
                if isinstance(exc, WireError):
                    self.broke = self.broke or f"sent a frame that is not the wire's ({exc})"
                self.close()
                raise self.gone() from None
            finally:
                with self._lock:
                    self._reading = False
                    self._turn.notify_all()

    def take(self, sections: list[Any]) -> bool:
        """Route one frame the peer sent: a reply to its slot, a notice to ``on_notice``. False (and the client
        closed) when it breaks the conversation."""
        try:
            message = read_message(sections)
        except WireError as exc:
            return self._break(f"sent a frame that is not the wire's ({exc})")
        if message.kind == REQUEST:
            if message.rid != NOTICE or self.on_notice is None:
                return self._break(f"sent a request ({message.word!r}) where only replies come")
            self.on_notice(message.word, message.body)
            return True
        with self._lock:
            slot = self._pending.get(message.rid)
            late = slot is None and message.rid in self._abandoned
            self._abandoned.discard(message.rid)
        if slot is None and not late:
            return self._break(f"answered request {message.rid}, which was not made or was answered already")
        try:
            value = self.decode(message.word, message.body)
            status = message.word
        except WireError as exc:  # a body that is not data fails its request only
            status, value = ERR, WireError(f"a reply that is not data: {exc}")
        with self._lock:
            self._pending.pop(message.rid, None)
            if slot is not None:
                slot.fill(status, value)
            self._turn.notify_all()
        return True

    def _break(self, why: str) -> bool:
        self.broke = why
        self.close()
        return False

    def close(self) -> None:
        """The peer is gone: every request waiting fails with ``gone()``, and so does every later one."""
        with self._lock:
            first = not self.closed.is_set()
            self.closed.set()
            pending, self._pending = self._pending, {}
        if first and self.on_close is not None:
            self.on_close()
        for slot in pending.values():
            slot.fill(ERR, self.gone())
        with self._lock:
            self._turn.notify_all()


# ---------------------------------------------------------------------------------------------- the responder


@dataclass(frozen=True, slots=True)
class Request:
    """A request as its handler sees it: ``args`` its decoded body, ``context`` whatever the layer's decoder found
    beside it (the node host: the caches the request named, whose state goes back with the reply)."""

    rid: int
    op: str
    args: Any
    context: Any = None


class Responder:
    """The serving end of one connection: requests in, replies out (several threads may reply at once).

    ``decode(op, body)`` makes a request's body its ``(args, context)``; ``encode(status, value, context)`` makes a
    reply's body. ``who`` names this end in the one line a bad request or an unsendable value gets."""

    def __init__(self, conn: Any, decode: Callable[[str, Any], tuple[Any, Any]],
                 encode: Callable[[str, Any, Any], Any], who: str, limit: int = MAX_FRAME) -> None:
        self.conn = conn
        self.decode = decode
        self.encode = encode
        self.who = who
        self.limit = limit
        self.send_lock = threading.Lock()

    def requests(self) -> Iterator[Request]:
        """Each request arriving, until the connection closes or a frame is not the wire's (said in one line on
        stderr: nothing more is taken from that connection)."""
        while True:
            try:
                sections = frames.recv(self.conn, self.limit)
            except (EOFError, OSError, ValueError):  # closed (a closed socket has no fd), or not even a frame
                return
            try:
                message = read_message(sections)
                if message.kind != REQUEST:
                    raise WireError("a reply where only requests come")
                args, context = self.decode(message.word, message.body)
            except (WireError, ValueError, TypeError) as exc:
                print(f"{self.who}: a message that is not the wire's: {exc}", file=sys.stderr, flush=True)
                return
            yield Request(message.rid, message.word, args, context)

    def answer(self, request: Request, handler: Callable[[Request], Any]) -> None:
        """Run ``handler`` on ``request`` and reply with its value, or with whatever it raised."""
        try:
            value, status = handler(request), OK
        except BaseException as exc:  # noqa: BLE001 - every exception goes back to the asking end (as a record)
            value, status = exc, ERR
        self.reply(request, status, value)

    def reply(self, request: Request, status: str, value: Any) -> None:
        """Reply (nothing for a notice); a value that cannot be sent fails the request, said as such."""
        if request.rid == NOTICE:
            return
        try:
            body = self.encode(status, value, request.context)
        except Exception as exc:  # noqa: BLE001 - what cannot be sent is reported as the request's error
            status = ERR
            body = self.encode(ERR, RuntimeError(f"{self.who}'s {type(value).__name__} cannot be sent: {exc}"), None)
        self.send(reply_frame(request.rid, status, body))

    def notify(self, op: str, body: Any) -> bool:
        """A notice to the asking end; False when it cannot be sent (the peer is gone)."""
        try:
            self.send(request_frame(NOTICE, op, body))
            return True
        except (OSError, EOFError, ValueError):
            return False

    def send(self, sections: tuple[Any, ...]) -> None:
        with self.send_lock:
            frames.send(self.conn, *sections)

"""The control plane between node processes: messages of the project's one wire (:mod:`datawire`, data only) on
``multiprocessing.connection`` TCP connections authenticated with a shared key.

Every node process listens on an ephemeral loopback port (or, behind the vendor API, on its
``llm.listenIpInfo``, where another host's nodes reach it: the emulated vendor's link listener). A connection is
authenticated with the key (``multiprocessing.connection``'s HMAC challenge, both ways) on a thread of its own,
within :data:`HANDSHAKE_S`, at most :data:`MAX_HANDSHAKES` at a time, so a silent or hostile peer holds up nobody;
after that every frame is bounded (:data:`MAX_MESSAGE`) and decoded as data only: a message that is not data
closes the connection. ``link(client, server)`` makes the client connect to the server (:class:`PeerLink`); over
that connection the client asks, the server answers:

* ``hello(client_cluster_id)`` -> ``[server_cluster_id, agent_metadata, generation, removals, scratch,
  agent_name]``: the link handshake; the client loads the server's NIXL metadata (``add_remote_agent``), or keeps
  what an earlier link loaded: as it is when the server's registrations have not changed since, refreshed when
  the server only registered more, loaded afresh when it deregistered anything (``removals`` moved on).
* ``open(selector, timeout_s, known_generation)`` -> ``None`` (no such cache) or a dict describing
  the cache a transfer names (the selector: a cache id, or ``["id", cache_id]``, ``["blocks", model_id]``,
  ``["key", req_id, model_id, prefix_id]``; with a key, also the batch it is bound to) (tensor addresses in the server's address space, stride, batch size, num_tensors,
  placement, remote accessibility), a pin id and, when the client's metadata is older than the server's
  registrations, fresh metadata. The pin keeps the cache from being freed under the push (see below).
* ``close(pin)``, a notice: the push is over (no answer); ``warmed()``, a notice: the link's data path is up.

and the server may send the notice ``revoke(pin)`` at any time: the pinned cache is being deallocated. The client
stops posting (its next layer raises LLM_KV_CACHE_NOT_EXIST) and closes the pin; the server's deallocation
waits for that close (bounded), so a freed cache is never written, whatever metadata the client holds.

Requests, replies and notices are :mod:`datawire.rpc`'s envelope; a request's arguments are a list.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection, Listener, answer_challenge, deliver_challenge
from typing import TYPE_CHECKING, Any

from datawire import Codec, ErrorRecord, WireError, rpc
from nodehost.connection import drop_connection, no_delay, shutdown_connection

if TYPE_CHECKING:
    from ..engine import RemoteTable

LOOPBACK = "127.0.0.1"
#: how long a new connection may take to authenticate
HANDSHAKE_S = 5.0
#: connections authenticating at once (more are closed at once)
MAX_HANDSHAKES = 64
#: the largest control message (NIXL agent metadata is the largest part)
MAX_MESSAGE = 64 << 20


def _remote_error(record: ErrorRecord) -> BaseException:
    """A peer's exception, as its one line (a push reports it inside its own LLMException)."""
    return RuntimeError(f"{record.type_name.rsplit('.', 1)[-1] or record.kind}: {record.message}")


#: every control message is data only
_CODEC = Codec(make_error=_remote_error)


def _args(_op: str, body: Any) -> tuple[tuple[Any, ...], None]:
    args = _CODEC.decode(body)
    if not isinstance(args, list):
        raise WireError("a control request whose arguments are not a list")
    return tuple(args), None


def _body(_status: str, value: Any, _context: Any = None) -> Any:
    return _CODEC.encode_parts(value)


def _value(_status: str, body: Any) -> Any:
    return _CODEC.decode(body)


def _receive_timeout(conn: Connection, seconds: float) -> None:
    """Bound each read on ``conn`` to ``seconds`` (0: unbounded) at the socket, where Connection reads."""
    sock = socket.socket(fileno=conn.fileno())
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", int(seconds), int(seconds % 1 * 1e6)))
    finally:
        sock.detach()


class PeerGone(rpc.PeerGone):
    """The control connection to the peer is closed (the peer process died or the link was dropped)."""


class PeerTimeout(Exception):
    """The peer did not answer in time."""


# ---------------------------------------------------------------------------------------------- server


class ServerConn:
    """One accepted control connection (one linked client)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.responder = rpc.Responder(conn, _args, _body, "control server", MAX_MESSAGE)
        self.client_id: int | None = None
        #: a link of the current cluster uses it (a hello came since the node's last reset)
        self.linked = False
        #: this node's cache table as of the client's first push over the link (None before it), as the vendor
        #: syncs the remote table once per link: caches added later stay invisible to this client until it re-links
        self.table: RemoteTable | None = None

    def notify(self, op: str, *args: Any) -> bool:
        """A notice to the linked client; False when it cannot be sent."""
        return self.responder.notify(op, _CODEC.encode_parts(list(args)))


Handler = Callable[[ServerConn, str, tuple[Any, ...]], Any]


class ControlServer:
    """Listener on 127.0.0.1 (ephemeral port) or the node's listen address; a thread per connection, which first
    authenticates it (bounded), then serves it."""

    def __init__(self, authkey: bytes, handler: Handler, on_close: Callable[[ServerConn], None],
                 listen: tuple[str, int] | None = None) -> None:
        address: tuple[str, int] = (str(listen[0]), int(listen[1])) if listen else (LOOPBACK, 0)
        self._authkey = authkey
        self._listener = Listener(address, family="AF_INET")  # authenticated per connection, off the accept loop
        self.address: tuple[str, int] = self._listener.address  # type: ignore[assignment]
        self._handler = handler
        self._on_close = on_close
        self._closed = False
        self._conns: set[ServerConn] = set()
        self._conns_lock = threading.Lock()
        self._handshakes = threading.BoundedSemaphore(MAX_HANDSHAKES)
        threading.Thread(target=self._accept_loop, name="control-accept", daemon=True).start()

    def connection_count(self) -> int:
        """Connections a link of the current cluster uses."""
        with self._conns_lock:
            return sum(1 for sc in self._conns if sc.linked)

    def end_links(self) -> None:
        """The node is being reset: the links over every accepted connection end (their clients belonged to the old
        cluster); the connections stay open for a link of a later cluster, which starts with a hello."""
        with self._conns_lock:
            conns = list(self._conns)
        for sc in conns:
            sc.client_id, sc.table, sc.linked = None, None, False

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                conn = self._listener.accept()
            except OSError:
                if self._closed:
                    return
                continue
            except Exception:  # noqa: BLE001 - nothing a peer does at accept stops the server
                continue
            if not self._handshakes.acquire(blocking=False):
                drop_connection(conn)  # too many strangers at once: this one is dropped
                continue
            threading.Thread(target=self._admit, args=(conn,), name="control-conn", daemon=True).start()

    def _admit(self, conn: Connection) -> None:
        try:
            _receive_timeout(conn, HANDSHAKE_S)
            deliver_challenge(conn, self._authkey)
            answer_challenge(conn, self._authkey)
            _receive_timeout(conn, 0)
        except Exception:  # noqa: BLE001 - a wrong key, garbage, a reset or silence: that connection only
            drop_connection(conn)
            return
        finally:
            self._handshakes.release()
        sc = ServerConn(no_delay(conn))
        with self._conns_lock:
            self._conns.add(sc)
        self._serve(sc)

    def _serve(self, sc: ServerConn) -> None:
        try:
            for request in sc.responder.requests():
                try:
                    sc.responder.answer(request, lambda r: self._handler(sc, r.op, r.args))
                except (OSError, EOFError, ValueError):
                    return  # the client is gone
        finally:
            with self._conns_lock:
                self._conns.discard(sc)
            self._on_close(sc)
            with sc.responder.send_lock, contextlib.suppress(OSError):  # a revoke being sent holds the fd
                sc.conn.close()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()


# ---------------------------------------------------------------------------------------------- pins


@dataclass(eq=False)
class Pin:
    pin_id: int
    cache_id: int
    owner: ServerConn
    timeout_s: float
    released: threading.Event = field(default_factory=threading.Event)


class PinTable:
    """Destination caches that pushes are writing into; deallocation revokes and waits for them."""

    def __init__(self, wake: threading.Event | None = None) -> None:
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pins: dict[int, Pin] = {}
        self._dying: set[int] = set()
        #: set when a pin is added: a push into this node is starting (the node's one event, which outlives a
        #: reset's new table: its progress loop waits on it)
        self.wake = wake if wake is not None else threading.Event()

    @property
    def active(self) -> bool:
        return bool(self._pins)

    def dying(self, cache_id: int) -> bool:
        return cache_id in self._dying

    def add(self, cache_id: int, owner: ServerConn, timeout_s: float) -> Pin:
        """Call with ``lock`` held (together with the cache lookup)."""
        pin = Pin(next(self._ids), cache_id, owner, timeout_s)
        self._pins[pin.pin_id] = pin
        self.wake.set()
        return pin

    def release(self, pin_id: int) -> None:
        with self.lock:
            pin = self._pins.pop(pin_id, None)
        if pin is not None:
            pin.released.set()

    def release_all(self) -> None:
        """Release every pin (a reset: whoever waits on one must not wait any longer)."""
        with self.lock:
            pins, self._pins = list(self._pins.values()), {}
        for p in pins:
            p.released.set()

    def release_owner(self, owner: ServerConn) -> None:
        with self.lock:
            pins = [p for p in self._pins.values() if p.owner is owner]
            for p in pins:
                del self._pins[p.pin_id]
        for p in pins:
            p.released.set()

    @contextlib.contextmanager
    def retire(self, cache_id: int, grace_s: float = 2.0) -> Iterator[None]:
        """While the body frees ``cache_id``: no new pins on it, and every pusher has stopped writing."""
        with self.lock:
            self._dying.add(cache_id)
            victims = [p for p in self._pins.values() if p.cache_id == cache_id]
        try:
            for p in victims:
                if not p.owner.notify("revoke", p.pin_id):
                    self.release(p.pin_id)
            for p in victims:
                p.released.wait(p.timeout_s + grace_s)
            yield
        finally:
            with self.lock:
                self._dying.discard(cache_id)


# ---------------------------------------------------------------------------------------------- client


class PeerLink:
    """The client end of a link: requests with answers, notices and revocations."""

    def __init__(self, server_id: int, address: tuple[str, int], authkey: bytes) -> None:
        self.server_id = server_id
        self.address = (str(address[0]), int(address[1]))
        self.agent_name = ""
        #: set once the link's data path is up (its NIXL agent loaded and warmed) or failed to come up
        self.data_path = threading.Event()
        self.data_path_error: str | None = None
        self.conn: Connection = no_delay(Client(self.address, family="AF_INET", authkey=authkey))
        self._lock = threading.Lock()
        self._revoked: set[int] = set()
        self.rpc = rpc.Client(self.conn, _value, lambda: PeerGone(f"link to cluster {self.server_id} went down"),
                              on_notice=self._notice, owns_conn=True, limit=MAX_MESSAGE)
        #: set when the connection is closed (the peer went away, the link was dropped, the wire broke)
        self.broken = self.rpc.closed
        self.rpc.start_reader(f"peer-{server_id}")

    def _notice(self, op: str, body: Any) -> None:
        args = _CODEC.decode(body)
        if op != "revoke" or not isinstance(args, list) or len(args) != 1:
            raise WireError("a control notice that is not a revoke")
        with self._lock:
            self._revoked.add(args[0])

    def request(self, op: str, *args: Any, timeout: float) -> Any:
        """Send and wait for the answer; PeerGone / PeerTimeout / RuntimeError (the server's error)."""
        if self.broken.is_set():
            raise PeerGone(f"link to cluster {self.server_id} is down")
        slot = self.rpc.submit(op, _CODEC.encode_parts(list(args)))
        try:
            return self.rpc.answer(slot, timeout)
        except TimeoutError:
            raise PeerTimeout(f"cluster {self.server_id} did not answer {op!r} within {timeout:.3f} s") from None
        except WireError as exc:
            raise RuntimeError(str(exc)) from None

    def send(self, op: str, *args: Any) -> None:
        """A notice (errors are ignored: a dead peer has nothing to release)."""
        self.rpc.notify(op, _CODEC.encode_parts(list(args)))

    def begin(self, server_id: int) -> None:
        """A new link over this connection (kept from an earlier cluster's link to the same process)."""
        with self._lock:
            self.server_id = server_id
            self.agent_name = ""
            self._revoked.clear()
            self.data_path.clear()
            self.data_path_error = None

    def is_revoked(self, pin: int) -> bool:
        return pin in self._revoked

    def forget(self, pin: int) -> None:
        with self._lock:
            self._revoked.discard(pin)

    def close(self) -> None:
        shutdown_connection(self.conn)
        self.rpc.close()

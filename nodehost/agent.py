"""Node agents: node processes on another host, started and reached over TCP.

``python -m nodehost serve --listen ADDR:PORT`` runs an agent. The shared key comes from the environment
(``NODEHOST_KEY``) or a file (``--key-file PATH``, or ``NODEHOST_KEY_FILE``), never from the command line; every
connection is authenticated with it (``multiprocessing.connection``'s HMAC challenge, both ways), and the node
processes an agent starts use it for their own control plane too.

One TCP connection per node process. The host opens it and sends ``("start", target, args, label)``; the agent
starts the node process (multiprocessing spawn, the node's ``NODEHOST_LISTEN_IP`` set to the agent's address)
and relays bytes between the connection and the node's pipe in both directions, so the node protocol is the
same as for a local node process. When either side closes, the agent SIGKILLs the node process: closing the
connection is how the host kills a remote node, and an agent that dies takes its node processes along (their
watchdog sees their parent gone). Only the node targets in :data:`TARGETS` can be started.

On the host's side, :class:`AgentProcess` stands in for ``multiprocessing.Process`` in a
:class:`~nodehost.process.NodeProcess` (see ``NodeProcess.via_agent``).
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Sequence
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

from .connection import no_delay, shutdown_connection

KEY_ENV = "NODEHOST_KEY"
KEY_FILE_ENV = "NODEHOST_KEY_FILE"
CONNECT_TIMEOUT_S = 10.0
#: node entry points an agent may start, by name: the vendor-API node, and the reference's own node runtime
TARGETS = {
    "vendor": "nodehost.driver:node_main",
    "reference": "reference_impl.multiprocess.node:node_main",
}


def load_key(key_file: str | None = None) -> bytes:
    """The shared key: the file's content (``key_file`` or $NODEHOST_KEY_FILE), else $NODEHOST_KEY."""
    path = key_file or os.environ.get(KEY_FILE_ENV, "")
    if path:
        with open(path, "rb") as f:
            key = f.read().strip()
    else:
        key = os.environ.get(KEY_ENV, "").strip().encode()
    if len(key) < 16:
        raise SystemExit(f"node agent: no shared key (at least 16 bytes): set {KEY_ENV}, or {KEY_FILE_ENV} / "
                         "--key-file to a file holding it")
    return key


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"address must be HOST:PORT, got {text!r}")
    return host, int(port)


def _target(name: str) -> Any:
    module, _, attr = TARGETS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


# ---------------------------------------------------------------------------------------------- agent side


class Agent:
    """Accepts the host's connections and runs one node process per connection."""

    def __init__(self, listen: tuple[str, int], key: bytes) -> None:
        self.key = key
        self.listener = Listener(listen, family="AF_INET", authkey=key)
        self.address: tuple[str, int] = self.listener.address  # type: ignore[assignment]
        self._ctx = multiprocessing.get_context("spawn")
        self._procs: set[Any] = set()
        self._lock = threading.Lock()

    def serve_forever(self) -> None:
        while True:
            try:
                conn = no_delay(self.listener.accept())
            except OSError:
                return
            except Exception:  # noqa: BLE001 - a failed handshake (wrong key) must not stop the agent
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: Connection) -> None:
        try:
            kind, target, args, label = conn.recv()
            if kind != "start" or target not in TARGETS:
                raise ValueError(f"unknown request {kind!r} / target {target!r}")
        except Exception as exc:  # noqa: BLE001 - tell the host, then drop the connection
            try:
                conn.send_bytes(__import__("pickle").dumps(("fail", ("plain", type(exc).__name__, str(exc), ""))))
            finally:
                conn.close()
            return
        os.environ["NODEHOST_LISTEN_IP"] = self.address[0]
        parent_end, child_end = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(target=_target(target), args=(child_end, os.getpid(), self.key, *args), daemon=True,
                                 name=f"node-agent-{label}")
        proc.start()
        child_end.close()
        with self._lock:
            self._procs.add(proc)
        print(f"node process {proc.pid} started for {label} ({target})", flush=True)
        done = threading.Event()

        def pump(src: Connection, dst: Connection) -> None:
            try:
                while True:
                    dst.send_bytes(src.recv_bytes())
            except (EOFError, OSError, ValueError):
                pass
            finally:
                done.set()

        threading.Thread(target=pump, args=(conn, parent_end), daemon=True).start()
        threading.Thread(target=pump, args=(parent_end, conn), daemon=True).start()
        done.wait()
        proc.kill()  # either side went away: the node goes too
        proc.join(5.0)
        print(f"node process {proc.pid} ended ({proc.exitcode})", flush=True)
        shutdown_connection(conn)
        shutdown_connection(parent_end)
        with self._lock:
            self._procs.discard(proc)

    def close(self) -> None:
        self.listener.close()
        with self._lock:
            procs = list(self._procs)
        for p in procs:
            p.kill()


def serve_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m nodehost serve",
                                     description="Run a node agent: node processes for a node host on another host.")
    parser.add_argument("--listen", required=True, metavar="ADDR:PORT", help="address to listen on")
    parser.add_argument("--key-file", metavar="PATH", help=f"file holding the shared key (else ${KEY_FILE_ENV}, "
                                                           f"else ${KEY_ENV})")
    args = parser.parse_args(list(argv))
    key = load_key(args.key_file)
    agent = Agent(parse_address(args.listen), key)
    print(f"node agent listening on {agent.address[0]}:{agent.address[1]} (pid {os.getpid()})", flush=True)

    def on_term(*_: object) -> None:
        agent.close()
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    try:
        agent.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        agent.close()
    return 0


# ---------------------------------------------------------------------------------------------- host side


class AgentProcess:
    """The host's stand-in for ``multiprocessing.Process`` of a node process that an agent runs."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.pid: int | None = None  # the remote pid, known once the node reports ready
        self.exitcode: int | None = None
        self._gone = threading.Event()

    def mark_gone(self) -> None:
        if self.exitcode is None:
            self.exitcode = -signal.SIGKILL
        self._gone.set()

    def is_alive(self) -> bool:
        return not self._gone.is_set()

    def kill(self) -> None:
        """Closing the connection makes the agent SIGKILL the node process."""
        shutdown_connection(self.conn)
        self.mark_gone()

    def join(self, timeout: float | None = None) -> None:
        self._gone.wait(timeout)

    def close(self) -> None:
        pass


def connect(agent: tuple[str, int], key: bytes, target: str, args: Sequence[Any], label: str) -> Connection:
    """Open a node connection to ``agent`` and ask it to start ``target``."""
    if target not in TARGETS:
        raise ValueError(f"unknown node target {target!r}")
    conn = no_delay(Client(agent, family="AF_INET", authkey=key))
    conn.send(("start", target, tuple(args), label))
    return conn


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "serve":
        print("usage: python -m nodehost serve --listen ADDR:PORT [--key-file PATH]", file=sys.stderr)
        return 2
    return serve_main(argv[1:])

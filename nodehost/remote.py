"""The other host's side of a node: runs inside an execnet gateway that the kit's host opened over SSH.

The kit's host calls ``gateway.remote_exec(BOOTSTRAP)`` once per node process: a fixed line that imports this
module (installed on this host) and runs :func:`node` on the new channel; nothing else crosses as code.
:func:`node` reads one start message (data: ``["start", label, module, env, key]``), starts the node process
here (multiprocessing spawn, :func:`nodehost.driver.node_main`) and relays frames between the channel and the
node's pipe in both directions, whole frames (:mod:`datawire.frames`), checked on the way to the node. The node listens on this host's address as the SSH connection
names it (``SSH_CONNECTION``), which is where the other nodes (and NIXL) reach it. When the channel closes, the
kit asks (``"kill"``), or the node exits, the node process is killed and its exit code is the channel's last
message (``["exit", code]``); when the gateway dies (the SSH connection is gone) the node's watchdog ends it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import threading
from typing import Any

from datawire import decode_plain, frames

#: what the kit's host executes in the gateway for each node process
BOOTSTRAP = "import nodehost.remote as r; r.node(channel)"
#: the environment variable sshd sets: "client_ip client_port server_ip server_port"
SSH_CONNECTION = "SSH_CONNECTION"


def host_address() -> str:
    """This host's address as the SSH connection that started the gateway names it (loopback without one)."""
    parts = os.environ.get(SSH_CONNECTION, "").split()
    return parts[2] if len(parts) == 4 else "127.0.0.1"


def _python_path() -> None:
    """The gateway's PYTHONPATH (set through the spec's env: keys after it started) on sys.path, so a spawned node
    imports what the kit's host asked for (spawn gives a child its parent's sys.path)."""
    for entry in reversed([p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]):
        if entry not in sys.path:
            sys.path.insert(0, entry)


def node(channel: Any) -> None:
    from .driver import node_main

    start: Any = decode_plain(channel.receive())
    if not (isinstance(start, list) and len(start) == 5 and start[0] == "start" and isinstance(start[2], str)
            and isinstance(start[3], dict) and isinstance(start[4], bytes)):
        channel.send(["exit", -1])
        return
    _kind, label, module, env, key = start
    os.environ["NODEHOST_LISTEN_IP"] = host_address()
    _python_path()
    ctx = multiprocessing.get_context("spawn")
    parent_end, child_end = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=node_main, args=(child_end, os.getpid(), key, module, env), daemon=True,
                       name=f"node-{label}")
    proc.start()
    child_end.close()
    done = threading.Event()

    def node_to_channel() -> None:
        try:
            while True:
                channel.send(frames.recv_raw(parent_end))
        except (EOFError, OSError, ValueError):
            pass
        except Exception:  # noqa: BLE001 - the channel closed under us
            pass
        finally:
            done.set()

    threading.Thread(target=node_to_channel, name=f"{label}-out", daemon=True).start()

    def channel_to_node() -> None:
        try:
            while True:
                item = channel.receive()
                if not isinstance(item, bytes):  # "kill"
                    break
                frames.send_raw(parent_end, item)
        except Exception:  # noqa: BLE001 - EOFError, a closed channel, a dead gateway: the node goes
            pass
        finally:
            done.set()

    threading.Thread(target=channel_to_node, name=f"{label}-in", daemon=True).start()
    done.wait()
    proc.kill()
    proc.join(5.0)
    with contextlib.suppress(Exception):
        channel.send(["exit", proc.exitcode if proc.exitcode is not None else -9])
    with contextlib.suppress(Exception):
        parent_end.close()

"""Node processes on other hosts, reached through execnet gateways over SSH.

A host is an execnet spec, ``ssh=[user@]host[//ssh_config=FILE][//python=PYTHON][//env:NAME=VALUE...]``: the
transport pytest-xdist uses, so authentication and encryption are SSH's, configured the way a user configures
SSH (keys, ``~/.ssh/config``, known hosts). The kit's host opens one gateway per host (on first use, kept for the
process's life; a gateway that died is opened again) and, per node process, one channel on which the other host
runs :func:`nodehost.remote.node` (a fixed bootstrap line, the only code that crosses); the node's frames then go
through the channel as bytes (the data-only wire, :mod:`nodehost.wire`). :class:`ChannelConnection` and
:class:`RemoteProcess` stand in for the pipe and the ``multiprocessing.Process`` of a local node in a
:class:`~nodehost.process.NodeProcess`.

Nothing the kit starts outlives it: at exit (:func:`close_all`) each host's node processes still running are
ended first (so the other host's executions finish and its gateway can exit at once), then its gateways, and the
kit waits for each gateway's ``ssh`` process, killing and reaping one that does not exit in time.
"""

from __future__ import annotations

import atexit
import contextlib
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from datawire import encode_plain

from .remote import BOOTSTRAP

#: how long closing a host waits for its node processes and gateways to end before it kills their ssh processes
CLOSE_S = 10.0
#: the keys of an execnet spec that make sense for an SSH gateway (besides env:NAME=VALUE)
SPEC_KEYS = ("ssh", "ssh_config", "python", "chdir", "nice", "dont_write_bytecode", "execmodel", "id")


class HostSpecError(ValueError):
    """A host that is not an execnet SSH spec (one line)."""


def check_spec(spec: str) -> str:
    """``spec`` if it names an SSH gateway; :class:`HostSpecError` otherwise."""
    import execnet

    text = spec.strip()
    try:
        parsed = execnet.XSpec(text)
    except Exception as exc:  # noqa: BLE001 - execnet's own complaint, in one line
        raise HostSpecError(f"{text!r}: not an execnet spec ({exc})") from None
    if not getattr(parsed, "ssh", None):
        raise HostSpecError(f"{text!r}: a host is reached over SSH: ssh=[user@]host[//python=...]")
    unknown = sorted(set(vars(parsed)) - {"_spec", "env", *SPEC_KEYS})
    if unknown:
        raise HostSpecError(f"{text!r}: not an execnet spec (unknown key {unknown[0]}; known: "
                            f"{', '.join(SPEC_KEYS)}, env:NAME=VALUE)")
    return text


class ChannelConnection:
    """A node's frames over an execnet channel (one channel message per frame, :mod:`datawire.frames`)."""

    def __init__(self, channel: Any, process: RemoteProcess) -> None:
        self._channel = channel
        self._process = process
        self._held: list[Any] = []
        self._lock = threading.Lock()

    def send_frame(self, frame: bytes) -> None:
        try:
            self._channel.send(frame)
        except Exception as exc:  # noqa: BLE001 - a closed channel or a dead gateway
            raise OSError(f"the node's channel is closed ({type(exc).__name__})") from None

    def _next(self, timeout: float | None) -> Any:
        with self._lock:
            if self._held:
                return self._held.pop(0)
        return self._channel.receive(timeout)

    def poll(self, timeout: float = 0.0) -> bool:
        try:
            item = self._channel.receive(timeout)
        except self._channel.TimeoutError:
            return False
        except Exception:  # noqa: BLE001 - closed: the next read says so
            return True
        with self._lock:
            self._held.append(item)
        return True

    def recv_frame(self, maxlength: int | None = None) -> bytes:
        try:
            item = self._next(None)
        except Exception:  # noqa: BLE001 - EOFError, a remote error, a dead gateway
            self._process.mark_gone()
            raise EOFError("the node's channel closed") from None
        if isinstance(item, list) and len(item) == 2 and item[0] == "exit":  # the other host's last word
            self._process.mark_gone(item[1] if isinstance(item[1], int) else None)
            raise EOFError("the node process exited")
        if not isinstance(item, bytes) or (maxlength is not None and len(item) > maxlength):
            self._process.mark_gone()
            raise OSError("bad message length")
        return item

    def fileno(self) -> int:
        raise OSError("an execnet channel has no file descriptor")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._channel.close()


class RemoteProcess:
    """The kit's stand-in for the ``multiprocessing.Process`` of a node process on another host."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel
        self.pid: int | None = None  # the remote pid, known once the node reports ready
        self.exitcode: int | None = None
        self._gone = threading.Event()

    def mark_gone(self, exitcode: int | None = None) -> None:
        if self.exitcode is None:
            self.exitcode = exitcode if exitcode is not None else -9
        self._gone.set()

    def is_alive(self) -> bool:
        return not self._gone.is_set()

    def kill(self, timeout: float = CLOSE_S) -> None:
        """The other host SIGKILLs the node process (asked on its channel, or because the channel closes)."""
        with contextlib.suppress(Exception):
            self._channel.send("kill")
        with contextlib.suppress(Exception):  # the other host's side ends once the node is dead
            self._channel.waitclose(timeout)
        if not self._gone.is_set():
            with contextlib.suppress(Exception):
                self._channel.close()
            self.mark_gone()

    def join(self, timeout: float | None = None) -> None:
        self._gone.wait(timeout)

    def close(self) -> None:
        pass


class Host:
    """One other host: its gateway (opened on first use) and the node processes started on it."""

    def __init__(self, spec: str) -> None:
        self.spec = check_spec(spec)
        self._gateway: Any = None
        self._lock = threading.Lock()
        #: every gateway opened to the host (one that died and was replaced too: its ssh may linger) and the node
        #: processes started there
        self._opened: list[Any] = []
        self._nodes: weakref.WeakSet[RemoteProcess] = weakref.WeakSet()

    def gateway(self) -> Any:
        with self._lock:
            gw = self._gateway
            if gw is None or not gw.hasreceiver():
                if gw is not None:
                    with contextlib.suppress(Exception):
                        gw.exit()
                try:
                    gw = self._gateway = _group().makegateway(self.spec)
                    self._opened.append(gw)
                except Exception as exc:  # noqa: BLE001 - execnet's HostNotFound and the like, in one line
                    raise OSError(f"cannot reach {self.spec} over SSH ({type(exc).__name__}: {exc}; ssh's own "
                                  "message is on stderr)") from None
            return gw

    def start(self, label: str, module: str, env: Mapping[str, str], key: bytes) -> tuple[ChannelConnection,
                                                                                        RemoteProcess]:
        """Start a node process running ``module`` there; its connection and process stand-ins."""
        channel = self.gateway().remote_exec(BOOTSTRAP)
        channel.send(encode_plain(["start", label, module, dict(env), key]))
        process = RemoteProcess(channel)
        with self._lock:
            self._nodes.add(process)
        return ChannelConnection(channel, process), process

    def close(self, within: float = CLOSE_S) -> None:
        """End the node processes still running there, then the gateways, within ``within`` seconds; an ssh
        process still running then is killed, and every one is reaped."""
        deadline = time.monotonic() + within
        with self._lock:
            gateways, self._opened, self._gateway = self._opened, [], None
            nodes = [p for p in self._nodes if p.is_alive()]
        for node in nodes:  # their channels close: the other host's executions end, its gateway can exit
            node.kill(max(0.1, deadline - time.monotonic()))
        for gw in gateways:
            with contextlib.suppress(Exception):
                gw.exit()
        for gw in gateways:
            _reap_ssh(gw, deadline)


def _reap_ssh(gateway: Any, deadline: float) -> None:
    """Wait for a gateway's ssh process until ``deadline``, then kill it; reap it either way."""
    popen = getattr(getattr(gateway, "_io", None), "popen", None)  # execnet keeps the ssh Popen there
    if popen is None:
        return
    try:
        popen.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            popen.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(5.0)


_HOSTS: dict[str, Host] = {}


def host(spec: str) -> Host:
    """The process's Host for ``spec`` (one gateway per host)."""
    with _GROUP_LOCK:
        found = _HOSTS.get(spec)
        if found is None:
            found = _HOSTS[spec] = Host(spec)
        return found


_GROUP: Any = None
_GROUP_LOCK = threading.Lock()


def _group() -> Any:
    """The process's execnet group (its gateways end at exit)."""
    global _GROUP
    with _GROUP_LOCK:
        if _GROUP is None:
            import execnet

            _GROUP = execnet.Group()
            atexit.register(close_all)
        return _GROUP


def close_all() -> None:
    """Close every host (see :meth:`Host.close`), then whatever else the group holds (registered at exit)."""
    with _GROUP_LOCK:
        hosts = list(_HOSTS.values())
    for h in hosts:
        with contextlib.suppress(Exception):
            h.close()
    if _GROUP is not None:
        with contextlib.suppress(Exception):
            _GROUP.terminate(timeout=5.0)

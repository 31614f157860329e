"""The parent's side of node processes: one process per node, a pipe to each, and a pool that reuses them.

:class:`NodeProcess` starts a node process (``multiprocessing`` spawn) running a *target* (the node side:
``target(conn, parent_pid, authkey, *args)``), and calls into it from any thread: each call is one request
on the pipe, answered by the node; a reader thread hands the answers back. :class:`NodePool` keeps node
processes between clusters: ``give_back`` asks each live one to ``reset`` (back to its start-up state) and
keeps those that answer in time; :class:`LeasedProcess` is a cluster's handle, dead once the cluster is closed.

The codec (:class:`nodehost.wire.ParentCodec`) decides what travels: data only, in frames whose length is
checked before they are read; ``gone`` builds the exception a call into a dead process raises. Nothing here knows
which implementation the node runs.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from datawire import Codec as DataCodec
from datawire import ErrorRecord, WireError, frames, rpc

from .connection import shutdown_connection

READY_TIMEOUT_S = 120.0
STOP_GRACE_S = 3.0
#: a reset that takes longer than this means the process is stuck: it is replaced
RESET_TIMEOUT_S = 15.0
DEFAULT_POOL_SIZE = 8


class Codec(Protocol):
    def request(self, args: Any, kwargs: Any) -> list[Any]: ...

    def reply(self, status: str, payload: Any) -> Any: ...

    def _error(self, record: Any) -> BaseException: ...


class NodeProcess:
    """One node process and the pipe to it; calls may come from several threads at once."""

    def __init__(self, ctx: Any, target: Callable[..., None], args: Sequence[Any], authkey: bytes, codec: Codec,
                 label: str, gone: Callable[[str], BaseException]) -> None:
        """Start ``target(conn, parent_pid, authkey, *args)`` in a local process (``ctx``: a multiprocessing
        context)."""
        conn, child_conn = ctx.Pipe(duplex=True)
        process = ctx.Process(target=target, args=(child_conn, os.getpid(), authkey, *args), daemon=True,
                              name=f"node-host-{label}")
        process.start()
        child_conn.close()
        self._setup(conn, process, codec, label, gone)

    @classmethod
    def on_host(cls, host: Any, module: str, env: Mapping[str, str], authkey: bytes, codec: Codec, label: str,
                gone: Callable[[str], BaseException]) -> NodeProcess:
        """A node process running ``module`` on another host (a :class:`nodehost.hosts.Host`, reached over SSH)."""
        conn, process = host.start(label, module, env, authkey)
        self = cls.__new__(cls)
        self._setup(conn, process, codec, label, gone)
        self.host = host.spec
        return self

    def _setup(self, conn: Any, process: Any, codec: Codec, label: str, gone: Callable[[str], BaseException]) -> None:
        self.codec = codec
        self.label = label
        self._gone_exc = gone
        self.conn = conn
        self.process = process
        self.host: str | None = None  # the other host's spec, for a node there
        self.pid: int = process.pid if process.pid is not None else -1  # another host's node: known once ready
        self.address: Any = None
        #: the requests: a late answer to one whose caller stopped waiting still updates what it names, once; an
        #: answer to any other request breaks the wire (decoded, such answers would grow what the codec keeps).
        #: The codec is read for each reply: a pooled process gets the next cluster's
        self.rpc = rpc.Client(conn, lambda status, body: self.codec.reply(status, body), self.gone,
                              on_close=lambda: getattr(self.process, "mark_gone", lambda: None)())
        #: another host's node: its channel is its life (``mark_gone`` ends the process's record of it)
        self.dead = self.rpc.closed
        #: bumped each time a cluster takes the process, and when it gives it back: old handles stop working
        self.lease = 0
        #: a reset not yet answered when a cluster took the process: (its answer, the deadline for it); the
        #: cluster checks it before it trusts the process (the node runs the reset before what is sent after it)
        self.pending_reset: tuple[Callable[[float | None], Any], float] | None = None
        #: the parent's cache-manager proxy class for what this process runs (its node sends the signatures once)
        self.cm_class: Any = None

    def wait_ready(self, deadline: float) -> None:
        """Wait for the node's ``("ready", address, pid)`` (or its start-up failure)."""
        if self.rpc.reader is not None:  # ready long ago: a pooled process serving another cluster
            return
        while not self.conn.poll(0.05):
            if not self.process.is_alive():
                raise RuntimeError(f"{self.label} process exited during start-up (exit code {self.process.exitcode})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.label} process did not start within {READY_TIMEOUT_S:.0f} s")
        try:
            hello = rpc.read_hello(frames.recv(self.conn))
            first = DataCodec().decode(hello.body)
        except (EOFError, OSError):
            self.process.join(1.0)
            raise RuntimeError(f"{self.label} process exited during start-up (exit code {self.process.exitcode}); "
                               "a script that opens clusters needs an `if __name__ == '__main__':` guard "
                               "(spawn start method)") from None
        except WireError as exc:
            raise RuntimeError(f"{self.label} process sent a first message that is not the wire's: {exc}") from None
        if hello.word == rpc.ERR:
            if not isinstance(first, ErrorRecord):
                raise RuntimeError(f"{self.label} process failed to start and said something else than why")
            raise self.codec._error(first)
        if not (isinstance(first, list) and len(first) == 2 and isinstance(first[0], tuple) and type(first[1]) is int):
            raise RuntimeError(f"{self.label} process reported ready with something else than (address, pid)")
        self.address = first[0]
        if self.pid == -1:
            self.pid = int(first[1])
            self.process.pid = self.pid
        self.rpc.start_reader(f"{self.label}-reader")

    def reset_succeeded(self) -> bool:
        """Whether the reset this process was still running when the pool leased it (if any) succeeded: the node ran
        it before what the new cluster sent, so its answer comes first, or the process is not fit to serve."""
        pending, self.pending_reset = self.pending_reset, None
        if pending is None:
            return True
        answer, deadline = pending
        try:
            answer(max(0.0, deadline - time.monotonic()))
        except Exception:  # noqa: BLE001 - failed, timed out or gone: the caller replaces the process
            return False
        return self.running

    def gone(self) -> BaseException:
        if self.rpc.broke is not None:
            return self._gone_exc(f"{self.label} process (pid {self.pid}) broke the wire: it {self.rpc.broke}")
        return self._gone_exc(f"{self.label} process (pid {self.pid}) is not running")

    def call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        return self.call_within(None, op, *args, **kwargs)

    def call_within(self, timeout: float | None, op: str, *args: Any, **kwargs: Any) -> Any:
        """``call`` with a bound on the wait (TimeoutError past it; the request is then abandoned)."""
        return self.submit(op, *args, **kwargs)(timeout)

    def submit(self, op: str, *args: Any, **kwargs: Any) -> Callable[[float | None], Any]:
        """Send the request now; the returned function waits for its answer (at most its argument's seconds:
        TimeoutError past it, the request then abandoned), so requests to several nodes run at once."""
        slot = self.rpc.submit(op, self.codec.request(args, kwargs))

        def answer(timeout: float | None) -> Any:
            try:
                return self.rpc.answer(slot, timeout)
            except rpc.NoAnswer:
                raise TimeoutError(f"{self.label} did not answer {op!r} within {timeout} s") from None
            except WireError as exc:  # an undecodable reply fails that request only
                raise RuntimeError(f"{self.label} answered with something that is not data: {exc}") from None

        return answer

    @property
    def running(self) -> bool:
        return self.process.exitcode is None and not self.dead.is_set()

    def kill(self) -> None:
        """SIGKILL the process (another host's node: the other host kills it); wait until gone."""
        if self.process.exitcode is None:
            try:
                self.process.kill()
            except (ProcessLookupError, OSError):
                pass
            self.process.join(10.0)
        if self.rpc.reader is not None:
            self.dead.wait(5.0)
        else:
            self.rpc.close()

    def request_exit(self) -> None:
        if self.dead.is_set():
            return
        self.rpc.notify("exit", self.codec.request((), {}))

    def finish(self, deadline: float) -> None:
        """Wait for the process until ``deadline``, then kill it; close the pipe. One that never reported ready
        holds nothing worth a graceful exit: it is killed at once."""
        reader = self.rpc.reader
        if reader is not None:
            self.process.join(max(0.0, deadline - time.monotonic()))
        if self.process.exitcode is None:
            self.kill()
        self.process.join(5.0)
        shutdown_connection(self.conn)
        if reader is not None:
            reader.join(2.0)
        if reader is None or not reader.is_alive():  # else the fd stays with the reader still on it
            with self.rpc.send_lock, contextlib.suppress(OSError):
                self.conn.close()
        try:
            self.process.close()
        except ValueError:
            pass


def end_all(procs: Sequence[NodeProcess]) -> None:
    """Ask each process to exit, give them STOP_GRACE_S together, then kill what is left."""
    for p in procs:
        p.request_exit()
    deadline = time.monotonic() + STOP_GRACE_S
    for p in procs:
        p.finish(deadline)


class LeasedProcess:
    """A cluster's handle on a (maybe pooled) node process: valid only while that cluster holds the process.

    Once the cluster is closed (and the process reset, and maybe leased to another cluster), every call
    through an old handle raises the process's "gone" exception and ``kill`` does nothing: a node of a
    closed cluster can neither reach nor harm the cluster that holds its process now.
    """

    def __init__(self, proc: NodeProcess) -> None:
        self._proc = proc
        self._lease = proc.lease

    @property
    def current(self) -> bool:
        return self._proc.lease == self._lease

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def address(self) -> Any:
        return self._proc.address

    @property
    def dead(self) -> threading.Event:
        if self.current:
            return self._proc.dead
        gone = threading.Event()
        gone.set()
        return gone

    def call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        if not self.current:
            raise self._proc.gone()
        return self._proc.call(op, *args, **kwargs)

    def kill(self) -> None:
        if self.current:
            self._proc.kill()


Starter = Callable[[str], NodeProcess]


class NodePool:
    """Node processes kept between clusters (``lease`` / ``give_back``), plus optional spares started early.

    Starting a node process (interpreter, imports, transfer-engine agent) costs ~0.8 s, and a certification
    opens hundreds of clusters. ``give_back`` asks every live process of a closed cluster to ``reset`` and returns
    at once; the pool's settling thread keeps those whose reset succeeds, up to ``max_idle``, and ends the others (a
    process that was killed, died, or failed or timed out its reset), so state a reset might have missed never
    reaches another cluster. ``lease`` takes processes whose reset is under way before it starts a new one (the
    cluster checks the reset). ``spares`` more are started ahead whenever a cluster takes processes.

    One pool serves one kind of node process (one target, one authkey): ``key`` names it.
    """

    def __init__(self, max_idle: int = DEFAULT_POOL_SIZE, key: str = "") -> None:
        self._lock = threading.Condition()
        self._idle: list[NodeProcess] = []
        #: processes whose reset is under way: (process, its answer, the deadline for it)
        self._settling: list[tuple[NodeProcess, Callable[[float | None], Any], float]] = []
        self._settler: threading.Thread | None = None
        self.max_idle = max_idle
        self.key = key
        self.authkey = os.urandom(32)
        self.started = 0  # processes this pool started (a figure for the self-tests and benchmarks)
        self.reused = 0  # leases served by a process that had served an earlier cluster
        self.reset_timeout_s = RESET_TIMEOUT_S

    def idle_pids(self) -> list[int]:
        """The idle processes, once the resets under way have settled."""
        self.settle()
        with self._lock:
            return [p.pid for p in self._idle]

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until no reset is under way (True), at most ``timeout`` seconds (default: a reset's bound)."""
        limit = self.reset_timeout_s + STOP_GRACE_S + 5.0 if timeout is None else timeout
        with self._lock:
            return self._lock.wait_for(lambda: not self._settling, limit)

    def lease(self, n: int, spares: int, codec: Codec, start: Starter) -> list[NodeProcess]:
        """``n`` processes for a new cluster: idle ones first, then ones whose reset is under way (each taken with
        its ``pending_reset``: the caller checks it before trusting the process; the node runs what the caller sends
        next only after the reset), then new ones from ``start(label)``.

        Not waiting for a reset's answer takes a round trip off every cluster's start: the reset and the next
        init run back to back in the node."""
        with self._lock:
            live = [p for p in self._idle if p.running]
            stale = [p for p in self._idle if not p.running]
            taken, self._idle = live[:n], live[n:]
            while len(taken) < n and self._settling:
                proc, answer, deadline = self._settling.pop(0)
                if proc.running:
                    proc.pending_reset = (answer, deadline)
                    taken.append(proc)
                else:
                    stale.append(proc)
            self._lock.notify_all()
            self.reused += len(taken)
            fresh = n - len(taken)
            top_up = max(0, spares - len(self._idle) - len(self._settling))
            self.started += fresh + top_up
        taken += [start("node") for _ in range(fresh)]
        extra = [start("spare node") for _ in range(top_up)]
        with self._lock:
            self._idle.extend(extra)
        end_all(stale)
        for p in taken:
            p.codec = codec
            p.lease += 1
        return taken

    def discard(self, proc: NodeProcess) -> None:
        """A leased process that must not serve (e.g. it failed to take the new cluster's configuration)."""
        proc.lease += 1
        end_all([proc])

    def give_back(self, procs: Sequence[NodeProcess]) -> None:
        """A closed cluster's processes: the live ones are reset (every reset at once, settled by the pool's
        settling thread, while the caller goes on), the others ended."""
        for p in procs:
            p.lease += 1  # handles of the closed cluster stop working now, not at the next lease
        if self.max_idle <= 0:  # nothing would be kept: no reset, just end them
            end_all(procs)
            return
        deadline = time.monotonic() + self.reset_timeout_s
        pending, lost = [], []
        for p in procs:
            try:
                if not p.running:
                    raise RuntimeError("gone")
                pending.append((p, p.submit("reset"), deadline))
                p.label = "idle node"
            except Exception:  # noqa: BLE001 - a process that cannot take the request is not reused
                lost.append(p)
        with self._lock:
            self._settling.extend(pending)
            if pending and self._settler is None:
                self._settler = threading.Thread(target=self._settle_loop, name="pool-settle", daemon=True)
                self._settler.start()
            self._lock.notify_all()
        end_all(lost)

    def _settle_loop(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: bool(self._settling))
                entry = self._settling[0]
            proc, answer, deadline = entry
            try:
                answer(max(0.0, deadline - time.monotonic()))
                ok = proc.running
            except Exception:  # noqa: BLE001 - any failure means: do not reuse this process
                ok = False
            with self._lock:
                if not any(e is entry for e in self._settling):
                    continue  # a cluster took the process meanwhile: it checks the reset itself
                self._settling = [e for e in self._settling if e is not entry]
                keep = ok and len(self._idle) < self.max_idle
                if keep:
                    self._idle.append(proc)
                self._lock.notify_all()
            if not keep:
                end_all([proc])

    def close(self) -> None:
        self.settle()
        with self._lock:
            procs, self._idle = self._idle, []
        end_all(procs)

"""The data plane of one node process: a NIXL agent (UCX backend) over the node's memory segments.

Every segment of the node's memory (the device and host pool arenas, and each raw segment from
``alloc_memory``) is registered with the agent as DRAM. Registering bumps ``generation``; a peer that
knows an older generation gets the fresh agent metadata with its next cache lookup (see ``control.py``),
so its descriptors always refer to memory the agent has registered.

A push posts one NIXL WRITE per layer from descriptor lists prepared once per push, and polls for completion
with a short backoff; NIXL has no timeout of its own, so :meth:`NixlTransport.wait` owns the deadline and
releases (cancels) the request when it passes.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from nodehost.environment import NODE_ENV

#: environment every node process sets before importing NIXL: the node host's (loopback only, quiet logs) and
#: UCX_MEM_MMAP_HOOK_MODE=none: no mmap hooks (UCX patches mmap/munmap to invalidate its registration cache; installing
#: them cost 0.42 s of CPU per NIXL agent, 0.02 s without, so a node process killed by a fault is replaced in a
#: fraction of the time). Nothing here needs them: over loopback (tcp, shared memory, cma) a registration pins
#: nothing to invalidate, and every region a node registers stays mapped until it is deregistered (arenas for the
#: process's life, a cluster's segments until its reset)
NIXL_NODE_ENV = {**NODE_ENV, "UCX_MEM_MMAP_HOOK_MODE": "none"}


def apply_node_env(override: bool = True) -> None:
    """Set NIXL_NODE_ENV in this process; ``override=False`` keeps values already set (a node on another host
    names its own network device)."""
    for key, value in NIXL_NODE_ENV.items():
        if override:
            os.environ[key] = value
        else:
            os.environ.setdefault(key, value)


def precise_sleeps() -> None:
    """Sleeps of this process as short as asked (Linux timer slack 1 us instead of 50 us): a push polls its WRITE of
    each layer, and the target progresses for it, with sleeps of a few microseconds."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(29, 1000, 0, 0, 0)  # PR_SET_TIMERSLACK, in nanoseconds
    except (OSError, AttributeError):
        pass


def nixl_available() -> str | None:
    """None when NIXL imports, else the reason it does not."""
    try:
        import nixl._api  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return f"{type(exc).__name__}: {exc}"
    return None


class TransferTimeout(Exception):
    """The request did not complete before the deadline (it has been released)."""


class PeerDisconnected(Exception):
    """NIXL reports that the remote agent went away."""


class TransferFailed(Exception):
    """NIXL reported an error for the request."""


class NixlTransport:
    """One NIXL agent; all agent calls are serialized by a lock (held only for the call itself)."""

    def __init__(self, name: str) -> None:
        from nixl._api import nixl_agent, nixl_agent_config

        self.name = name
        self._lock = threading.Lock()
        # no progress thread: NIXL's spins (pthrDelay 0) and would burn a core per node process; the sender
        # drives progress itself while it polls a request, and a WRITE's completion needs no progress on
        # the target (measured: ~0.2 ms per WRITE + notification either way)
        self.agent = nixl_agent(name, nixl_agent_config(enable_prog_thread=False, backends=["UCX"]))
        #: moves on with every change of this agent's registrations; ``removals`` with every deregistration (a peer
        #: that loaded our metadata before a removal must load it afresh: see load_peer)
        self.generation = 0
        self.removals = 0
        self._regs: list[Any] = []  # registrations a reset ends
        #: registrations for the process's life (the scratch buffer, the node's arenas), by (address, bytes)
        self._kept: dict[tuple[int, int], Any] = {}
        self._registered: set[tuple[int, int]] = set()
        #: remote agent name -> (generation, removals) of its metadata we loaded
        self._peers: dict[str, tuple[int, int]] = {}
        self.peer_loads = 0  # remote agents loaded afresh (a figure for the self-tests)
        self.notifs_received = 0
        import numpy as np

        self.scratch = np.zeros(64, dtype=np.uint8)  # link warm-up target (first WRITE sets up the UCX endpoint)
        self.register(self.scratch.ctypes.data, self.scratch.size, keep=True)

    # ---- memory and metadata ------------------------------------------------------------------------
    def register(self, addr: int, nbytes: int, keep: bool = False) -> None:
        """Register ``[addr, addr + nbytes)`` (real process memory) once; ``keep``: for the process's life (a
        reset leaves it registered)."""
        if (addr, nbytes) in self._registered:
            return
        with self._lock:
            reg = self.agent.register_memory([(addr, nbytes, 0, "")], "DRAM")
            if keep:
                self._kept[(addr, nbytes)] = reg
            else:
                self._regs.append(reg)
            self._registered.add((addr, nbytes))
            self.generation += 1

    def release_kept(self, addr: int, nbytes: int) -> None:
        """Deregister a region registered with ``keep`` (an arena the node gives up)."""
        with self._lock:
            reg = self._kept.pop((addr, nbytes), None)
            if reg is not None:
                self.agent.deregister_memory(reg)
                self._registered.discard((addr, nbytes))
                self.generation += 1
                self.removals += 1

    def registered_regions(self) -> int:
        return len(self._regs) + len(self._kept)

    def cluster_regions(self) -> int:
        """Registrations the next reset ends (memory of the current cluster that is not an arena)."""
        return len(self._regs)

    def reset(self) -> None:
        """Deregister every segment but the kept ones (the scratch buffer, the node's arenas, shared buffers still
        alive) at a node reset. Remote agents stay loaded, endpoints and all: a peer is loaded afresh only when its
        registrations have changed since (see ``peer_state``)."""
        with self._lock:
            regs, self._regs = self._regs, []
            for reg in regs:
                self.agent.deregister_memory(reg)
            self._registered = set(self._kept)
            if regs:
                self.generation += 1
                self.removals += 1

    def peer_generations(self) -> dict[str, int]:
        return {name: gen for name, (gen, _removals) in self._peers.items()}

    def metadata(self) -> tuple[bytes, int]:
        with self._lock:
            return self.agent.get_agent_metadata(), self.generation

    def load_peer(self, metadata: bytes, generation: int, removals: int | None = None) -> str:
        """Add (or refresh in place) a remote agent from its metadata; returns its name.

        Refreshing in place merges the new registrations with those loaded before: right when the peer only
        registered more since (``removals`` unchanged, or None: within one cluster), wrong after it deregistered
        something (a stale region then shadows a new one: NIXL refused descriptors inside current registrations
        with nixlNotFoundError). ``peer_state`` tells the caller which; a peer with removals since is dropped first."""
        with self._lock:
            name = self.agent.add_remote_agent(metadata)
            name = name.decode() if isinstance(name, bytes) else str(name)
            known = self._peers.get(name)
            if known is None:
                self.peer_loads += 1
            if removals is None:  # a refresh within a cluster: the removals it was loaded at still hold
                removals = known[1] if known is not None else -1
            self._peers[name] = (generation, removals)
            return name

    def peer_state(self, name: str) -> tuple[int, int] | None:
        """(generation, removals) of the metadata loaded for ``name``, or None."""
        return self._peers.get(name)

    def peer_generation(self, name: str) -> int:
        known = self._peers.get(name)
        return known[0] if known is not None else -1

    def drop_peer(self, name: str) -> None:
        with self._lock:
            if self._peers.pop(name, None) is not None:
                try:
                    self.agent.remove_remote_agent(name)
                except Exception:  # noqa: BLE001 - the peer may be gone already
                    pass

    # ---- transfers ------------------------------------------------------------------------------------
    def prep(self, peer: str, local: Sequence[tuple[int, int, int]],
             remote: Sequence[tuple[int, int, int]]) -> tuple[Any, Any]:
        """Prepared descriptor lists (local side, remote side) for make_prepped_xfer."""
        with self._lock:
            lh = self.agent.prep_xfer_dlist("NIXL_INIT_AGENT", list(local), "DRAM")
            try:
                rh = self.agent.prep_xfer_dlist(peer, list(remote), "DRAM")
            except BaseException:
                self.agent.release_dlist_handle(lh)
                raise
            return lh, rh

    def release_prep(self, handles: tuple[Any, Any]) -> None:
        with self._lock:
            for h in handles:
                try:
                    self.agent.release_dlist_handle(h)
                except Exception:  # noqa: BLE001
                    pass

    def post(self, lh: Any, local_idx: list[int], rh: Any, remote_idx: list[int], notif: bytes,
             op: str = "WRITE") -> tuple[Any, str]:
        """Create and post one WRITE (local into remote) or READ (remote into local); returns (handle, state)."""
        with self._lock:
            try:
                h = self.agent.make_prepped_xfer(op, lh, local_idx, rh, remote_idx, notif)
            except Exception as exc:
                raise self._map(exc) from exc
            try:
                state = self.agent.transfer(h)
            except Exception as exc:
                self._release(h)
                raise self._map(exc) from exc
            return h, state

    def wait(self, handle: Any, state: str, deadline: float, abort: Callable[[], BaseException | None]) -> None:
        """Poll ``handle`` until DONE; past ``deadline`` (monotonic) release it and raise TransferTimeout.

        ``abort()`` is polled too: when it returns an exception, the request is released and that is raised.
        """
        delay = 5e-6
        try:
            while True:
                if state == "DONE":
                    return
                if state != "PROC":
                    raise TransferFailed(f"NIXL transfer state {state}")
                now = time.monotonic()
                if now >= deadline:
                    raise TransferTimeout()
                stop = abort()
                if stop is not None:
                    raise stop
                time.sleep(min(delay, max(0.0, deadline - now)))
                delay = min(delay * 2, 1e-3)
                with self._lock:
                    try:
                        state = self.agent.check_xfer_state(handle)
                    except Exception as exc:
                        raise self._map(exc) from exc
        finally:
            with self._lock:
                self._release(handle)

    def warm_up(self, peer: str, remote_scratch: int, timeout_s: float = 10.0) -> None:
        """One tiny WRITE into the peer's scratch buffer, so the first push does not pay connection set-up."""
        handles = self.prep(peer, [(self.scratch.ctypes.data, 8, 0)], [(remote_scratch, 8, 0)])
        try:
            handle, state = self.post(handles[0], [0], handles[1], [0], b"")
            self.wait(handle, state, time.monotonic() + timeout_s, lambda: None)
        finally:
            self.release_prep(handles)

    def _release(self, handle: Any) -> None:
        try:
            self.agent.release_xfer_handle(handle)
        except Exception:  # noqa: BLE001 - releasing an errored/cancelled request may complain
            pass

    @staticmethod
    def _map(exc: Exception) -> Exception:
        name = type(exc).__name__
        if name == "nixlRemoteDisconnectError":
            return PeerDisconnected(str(exc) or name)
        return TransferFailed(f"{name}: {exc}")

    def drain_notifs(self) -> None:
        with self._lock:
            notifs = self.agent.get_new_notifs()
        self.notifs_received += sum(len(v) for v in notifs.values())

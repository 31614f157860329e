"""The server side of a node: the control requests other nodes make of it (hello, open, close, warmed) and the
progress loop that completes their WRITEs into its memory and drains their notifications."""

from __future__ import annotations

import time
from typing import Any

from ..key_kinds import SELECTOR_KINDS, Found, KeyKind
from ..llm_datadist import LLMDataDist
from .control import PinTable, ServerConn
from .transport import NixlTransport

ACTIVE_POLL_S = 20e-6
IDLE_POLL_S = 0.05
#: how long a node progresses actively after a link handshake at most (the client's warm-up WRITE follows at once;
#: the client says when it has completed: ``warmed``)
LINK_PROGRESS_S = 0.1


def _selector(selector: Any) -> tuple[KeyKind, list[int]]:
    """(kind, ids) of an "open" request's selector (it came over the wire: checked, not trusted); the kinds and
    how many ids each carries are the key kinds' (``reference_impl.key_kinds``)."""
    sel: Any = ["id", selector] if isinstance(selector, int) else selector
    kind = SELECTOR_KINDS.get(sel[0]) if isinstance(sel, (list, tuple)) and sel else None
    if kind is None or len(sel) != 1 + len(kind.names) or not all(type(i) is int for i in sel[1:]):
        raise ValueError(f"not a cache selector: {selector!r}")
    return kind, [int(i) for i in sel[1:]]


class ControlServing:
    """The serving steps of :class:`~.node.NodeRuntime`, which provides the attributes below."""

    transport: NixlTransport
    pins: PinTable
    datadist: LLMDataDist | None
    _busy_until: float

    def _on_control(self, sc: ServerConn, op: str, args: tuple[Any, ...]) -> Any:
        if op == "hello":  # a link starts (on a new connection, or on one an earlier cluster's link left)
            sc.client_id, sc.table, sc.linked = args[0], None, True
            self._busy_until = time.monotonic() + LINK_PROGRESS_S
            self.pins.wake.set()
            metadata, generation = self.transport.metadata()
            cluster_id = self.datadist.cluster_id if self.datadist else None
            return (cluster_id, metadata, generation, self.transport.removals, self.transport.scratch.ctypes.data,
                    self.transport.name)
        if op == "open":
            return self._open(sc, *args)
        if op == "close":
            self.pins.release(args[0])
            return None
        if op == "warmed":  # the link's warm-up WRITE completed: no more active progress for it
            self._busy_until = 0.0
            return None
        raise ValueError(f"unknown control request {op!r}")

    def _open(self, sc: ServerConn, selector: Any, timeout_s: float, known_generation: int) -> dict[str, Any] | None:
        """The cache a transfer names (``selector``: a cache id, or a list: ["id", cache_id], ["blocks",
        model_id], ["key", req_id, model_id, prefix_id]), pinned, with its layout; None if not found."""
        datadist = self.datadist
        if datadist is None or not datadist.is_initialized or not sc.linked:  # no link of this cluster's
            return None
        kind, ids = _selector(selector)
        engine = datadist.engine
        stale = bool(getattr(datadist._cache_manager, "stale_remote_table", False))
        batch: int | None = None
        with self.pins.lock:
            if kind.live_only:
                # a pull by CacheKey: the live key table, no synced table and no remote-accessible check
                # (reference_impl.pull_transfer._resolve_pull_source); the pin keeps the source from being freed
                found = self._live(kind, engine, ids)
                if found is None:
                    return None
                entry, batch = found
                pin = self.pins.add(entry.cache_id, sc, timeout_s).pin_id
            else:
                if sc.table is None or sc.table.version == 0:  # version 0: nothing published yet, sync again
                    sc.table = engine.snapshot_table()
                if stale:
                    # vendor mode: the table synced at the link's first transfer, and nothing else (facts §1.3
                    # N8): a cache deallocated since is still found, and its old memory used; no pin protects it
                    found = kind.synced(sc.table, engine, ids)
                    if found is None:
                        return None
                    entry, pin = found[0], 0
                else:
                    # the reference's remote lookup: live, and visible only if the synced table holds it
                    found = self._live(kind, engine, ids)
                    if found is None or found[0].cache_id not in sc.table.entries:
                        return None
                    entry = found[0]
                    pin = self.pins.add(entry.cache_id, sc, timeout_s).pin_id if entry.remote_accessible else 0
            info = self._layout(engine, entry)
            info.update(pin=pin, batch=batch)
        if known_generation != self.transport.generation:
            info["metadata"], info["generation"] = self.transport.metadata()
        return info

    def _live(self, kind: KeyKind, engine: Any, ids: list[int]) -> Found | None:
        """What the selector names in the live tables, if it is alive and not being freed (so it can be pinned)."""
        found = kind.live(engine, ids)
        if found is None or not found[0].alive or self.pins.dying(found[0].cache_id):
            return None
        return found

    @staticmethod
    def _layout(engine: Any, entry: Any) -> dict[str, Any]:
        """What the client's checks read of a cache (reference_impl.engine.CacheEntry), and where the memory
        segment holding each tensor ends (vendor mode writes up to there)."""
        space = engine.memory.space(entry.placement)
        ends = []
        for v in entry.views:
            seg = space.find(v.ctypes.data, 0) if hasattr(space, "adopt") else None
            ends.append(seg.end if seg is not None else v.ctypes.data + v.size)
        return {
            "cache_id": entry.cache_id, "placement": int(entry.placement), "num_tensors": entry.num_tensors,
            "shape": entry.shape, "tensor_nbytes": entry.tensor_nbytes, "batch_size": entry.batch_size,
            "stride": entry.stride, "is_blocks": entry.is_blocks, "remote_accessible": entry.remote_accessible,
            "addrs": [v.ctypes.data for v in entry.views], "ends": ends, "alive": entry.alive,
        }

    def _notif_loop(self) -> None:
        """Progress for pushes into this node, and draining of their notifications (one per layer).

        Agents run without NIXL's progress thread (it spins a core). A WRITE with a notification completes
        at the sender only once the target's worker has progressed, so while a push holds a pin on one of
        this node's caches the loop progresses every ~50 us; otherwise it idles (woken by the next pin). A link
        handshake counts as a push until the client says its warm-up WRITE has completed (``_busy_until``): that
        WRITE needs the same progress, or it waits for the next idle tick (~40 ms measured per link with pooled
        processes).
        """
        while True:
            if self.pins.active or time.monotonic() < self._busy_until:
                time.sleep(ACTIVE_POLL_S)
            else:
                self.pins.wake.wait(IDLE_POLL_S)
                self.pins.wake.clear()
            try:
                self.transport.drain_notifs()
            except Exception:  # noqa: BLE001 - keep draining
                pass

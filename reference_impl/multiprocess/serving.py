"""The server side of a node: the control requests other nodes make of it (hello, open, close, warmed) and the
progress loop that completes their WRITEs into its memory and drains their notifications."""

from __future__ import annotations

import time
from typing import Any

from ..llm_datadist import LLMDataDist
from .control import PinTable, ServerConn
from .transport import NixlTransport

ACTIVE_POLL_S = 20e-6
IDLE_POLL_S = 0.05
#: how long a node progresses actively after a link handshake at most (the client's warm-up WRITE follows at once;
#: the client says when it has completed: ``warmed``)
LINK_PROGRESS_S = 0.1


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

    def _open(self, sc: ServerConn, cache_id: int, timeout_s: float, known_generation: int) -> dict[str, Any] | None:
        datadist = self.datadist
        if datadist is None or not datadist.is_initialized or not sc.linked:  # no link of this cluster's
            return None
        engine = datadist.engine
        stale = bool(getattr(datadist._cache_manager, "stale_remote_table", False))
        with self.pins.lock:
            if sc.table is None or sc.table.version == 0:  # version 0: nothing published yet, sync again
                sc.table = engine.snapshot_table()
            if stale:
                # vendor mode: the table synced at the link's first push, and nothing else (facts §1.3 N8): a
                # cache deallocated since is still found, and its old memory written; no pin protects it
                entry = sc.table.find(cache_id)
                if entry is None:
                    return None
                pin = 0
            else:
                # the reference's remote lookup: by id, or (cache_id <= 0) the key with req_id 0 and model_id 0
                entry = engine.lookup(cache_id) if cache_id > 0 else engine.lookup_by_key(0, 0)
                if (entry is None or not entry.alive or self.pins.dying(entry.cache_id)
                        or entry.cache_id not in sc.table.entries):
                    return None
                pin = self.pins.add(entry.cache_id, sc, timeout_s).pin_id if entry.remote_accessible else 0
            space = engine.memory.space(entry.placement)
            ends = []
            for v in entry.views:
                seg = space.find(v.ctypes.data, 0) if hasattr(space, "adopt") else None
                ends.append(seg.end if seg is not None else v.ctypes.data + v.size)
            info: dict[str, Any] = {
                "cache_id": entry.cache_id, "placement": int(entry.placement), "num_tensors": entry.num_tensors,
                "shape": entry.shape, "tensor_nbytes": entry.tensor_nbytes, "batch_size": entry.batch_size,
                "stride": entry.stride, "is_blocks": entry.is_blocks, "remote_accessible": entry.remote_accessible,
                "addrs": [v.ctypes.data for v in entry.views], "pin": pin, "ends": ends,
            }
        if known_generation != self.transport.generation:
            info["metadata"], info["generation"] = self.transport.metadata()
        return info

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

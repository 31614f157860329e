"""The node host's benchmark baseline: raw NIXL WRITEs of a cache into a linked server's cache, without any of
push_cache's checks, timed in the node process."""

from __future__ import annotations

import time
from typing import Any

from ..llm_datadist import LLMDataDist
from .control import PeerLink
from .links import LINK_SETUP_S
from .transport import NixlTransport


class RawBench:
    """``bench_raw`` of :class:`~.node.NodeRuntime`, which provides the attributes below."""

    transport: NixlTransport
    links: dict[int, PeerLink]

    def _datadist(self) -> LLMDataDist:
        raise NotImplementedError

    def bench_raw(self, server_id: int, src: Any, dst_cache_id: int, tpl: int, repeats: int, per_layer: bool,
                  notify: bool) -> list[float]:
        """Raw NIXL WRITEs of batch 0 of every tensor of ``src`` into the remote cache (no push_cache checks):
        one request with all descriptors, or (``per_layer``) one request of ``tpl`` descriptors per layer.
        Returns the seconds of each repeat, measured in this process."""
        peer = self.links[server_id]
        peer.data_path.wait(LINK_SETUP_S)
        entry = self._datadist().cache_manager.entry_of(src)
        assert entry is not None
        info = peer.request("open", dst_cache_id, 10.0, self.transport.peer_generation(peer.agent_name),
                            timeout=10.0)
        if info.get("metadata") is not None:
            self.transport.load_peer(info["metadata"], info["generation"])
        n = entry.stride
        ldesc = [(v.ctypes.data, n, 0) for v in entry.views]
        rdesc = [(a, n, 0) for a in info["addrs"][:len(ldesc)]]
        handles = self.transport.prep(peer.agent_name, ldesc, rdesc)
        groups = ([list(range(i, i + tpl)) for i in range(0, len(ldesc), tpl)] if per_layer
                  else [list(range(len(ldesc)))])
        notif = b"bench" if notify else b""
        times = []
        try:
            for _ in range(repeats):
                t0 = time.perf_counter()
                for idx in groups:
                    h, state = self.transport.post(handles[0], idx, handles[1], idx, notif)
                    self.transport.wait(h, state, time.monotonic() + 30.0, lambda: None)
                times.append(time.perf_counter() - t0)
        finally:
            self.transport.release_prep(handles)
            peer.send("close", info["pin"])
        return times


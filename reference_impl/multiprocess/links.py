"""The client side of a node's links: ``link`` (the hello over a new or parked control connection), the link
worker that brings the data path up (the server's NIXL metadata loaded, a first tiny WRITE), and ``unlink``."""

from __future__ import annotations

import queue
import threading

from nodehost.serve import ActiveRequests

from ..llm_datadist import LLMDataDist
from ..status import LLMStatusCode
from .control import PeerLink
from .transport import NixlTransport

#: how long a link's data path may take to come up (NIXL metadata loaded, the first WRITE made)
LINK_SETUP_S = 10.0


class LinkClient:
    """The link steps of :class:`~.node.NodeRuntime`, which provides the attributes below."""

    authkey: bytes
    transport: NixlTransport
    links: dict[int, PeerLink]
    _parked: dict[tuple[str, int], PeerLink]
    _links_lock: threading.Lock
    _setups: ActiveRequests
    _link_jobs: queue.SimpleQueue[tuple[PeerLink, bytes, int, int, int, str]]

    def _datadist(self) -> LLMDataDist:
        raise NotImplementedError

    def link(self, server_id: int, address: tuple[str, int]) -> LLMStatusCode:
        datadist = self._datadist()
        if not datadist.engine.alive:
            return LLMStatusCode.LLM_LINK_FAILED
        with self._links_lock:
            old = self.links.get(server_id)
            if old is not None and not old.broken.is_set():
                return LLMStatusCode.LLM_ALREADY_LINK
            where = (str(address[0]), int(address[1]))
            peer = self._parked.pop(where, None)
            try:
                if peer is None or peer.broken.is_set():
                    peer = PeerLink(server_id, where, self.authkey)
                else:
                    peer.begin(server_id)
                remote_id, metadata, generation, removals, scratch, agent = peer.request(
                    "hello", datadist.cluster_id, timeout=10.0)
            except Exception:  # noqa: BLE001 - an unreachable peer is a failed link
                if peer is not None:
                    peer.close()
                return LLMStatusCode.LLM_LINK_FAILED
            if remote_id != server_id:
                peer.close()
                return LLMStatusCode.LLM_LINK_FAILED
            self.links[server_id] = peer
        # the data path (the server's NIXL metadata loaded, the UCX endpoint made by a first tiny WRITE) comes up on
        # the link worker while the caller goes on; a push over the link waits for it (PeerLink.data_path)
        self._setups.started()
        self._link_jobs.put((peer, metadata, generation, removals, scratch, agent))
        return LLMStatusCode.LLM_SUCCESS

    def _link_worker(self) -> None:
        while True:
            peer, metadata, generation, removals, scratch, agent = self._link_jobs.get()
            try:
                # a peer an earlier cluster's link loaded keeps its endpoint: its metadata is refreshed where it
                # registered more since, loaded afresh (and its endpoint made again) where it deregistered anything
                loaded = self.transport.peer_state(agent)
                if loaded is not None and loaded[1] == removals:
                    if loaded[0] != generation:
                        self.transport.load_peer(metadata, generation, removals)
                    peer.agent_name = agent
                else:
                    self.transport.drop_peer(agent)
                    peer.agent_name = self.transport.load_peer(metadata, generation, removals)
                    self.transport.warm_up(peer.agent_name, scratch)
                peer.send("warmed")  # the server may stop progressing actively now
            except Exception as exc:  # noqa: BLE001 - no data path: the link is broken
                peer.data_path_error = f"{type(exc).__name__}: {exc}"
                peer.close()
            finally:
                peer.data_path.set()
                self._setups.ended()

    def unlink(self, server_id: int) -> LLMStatusCode:
        with self._links_lock:
            peer = self.links.pop(server_id, None)
        if peer is None:
            return LLMStatusCode.LLM_NOT_YET_LINK
        peer.data_path.wait(LINK_SETUP_S)  # its agent is loaded (or failed to be) before it is dropped
        peer.close()
        self.transport.drop_peer(peer.agent_name)
        return LLMStatusCode.LLM_SUCCESS


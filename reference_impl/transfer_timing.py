"""Transfer timing shared by the family: a layer's simulated time, what llm.SyncKvCacheWaitTime leaves of it,
and the wait that times out (facts §1.3 N12, §5)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .native_errors import NativeErrors
from .status import LLMStatusCode

if TYPE_CHECKING:
    from .engine import NodeEngine
    from .fabric import Link


class TransferTiming(NativeErrors):
    """The timing steps (hook points); the manager provides ``engine``. The record keeps ``spent``."""

    engine: NodeEngine

    #: what llm.SyncKvCacheWaitTime bounds: "push", the whole push ("if the execution time exceeds the value of
    #: sync_kv_timeout, an LLMException is thrown"), or "layer", each layer's transfer (the vendor: the
    #: per-layer BatchTransfer timeout, facts §1.3 N12 and §5)
    sync_timeout_scope: str = "push"

    def _transfer_seconds(self, a: Any, link: Link, nbytes: int) -> float:
        """Simulated time of one layer: link latency + bytes / bandwidth + injected delay (inf if dropped)."""
        faults = self.engine.faults
        if faults.dropped_peers and link.server.cluster_id in faults.dropped_peers:
            return float("inf")
        return link.params.seconds_for(nbytes) + faults.send_delay_s

    def _transfer_budget_s(self, a: Any, timeout: float) -> float:
        """Seconds this layer's transfer may take: what the push has left of ``timeout`` (llm.SyncKvCacheWaitTime),
        or all of it for each layer when ``sync_timeout_scope`` is "layer"."""
        if self.sync_timeout_scope == "layer":
            return timeout
        return max(0.0, timeout - a.spent)

    def _await_transfer(self, a: Any, link: Link, seconds: float) -> None:
        """Wait ``seconds`` of simulated transfer; past what is left of llm.SyncKvCacheWaitTime, wait that long and
        time out."""
        timeout = self.engine.sync_timeout_s
        budget = self._transfer_budget_s(a, timeout)
        stop = self.engine.stop_event
        if seconds > budget:
            if not stop.wait(budget):
                raise self._native_error(a, LLMStatusCode.LLM_TIMEOUT,
                                         f"transfer did not complete within {timeout * 1000:.0f} ms")
        elif not stop.wait(seconds):
            a.spent += seconds
            if self.engine.fabric.usable_link(self.engine, link.server.cluster_id) is None:
                raise self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK, "remote cluster went away")
            return
        raise self._native_error(a, LLMStatusCode.LLM_FAILED, "local engine finalized during transfer")

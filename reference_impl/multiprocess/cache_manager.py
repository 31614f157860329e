"""The reference CacheManager, with the hooks that touch the remote side moved across processes.

The Python-layer checks and the per-layer check order (facts §1.2, §1.3) are inherited unchanged; only
these hooks are replaced:

* ``_resolve_link``: the link table of this node process (a :class:`~.control.PeerLink` per linked
  cluster) instead of the in-process Fabric; a link whose peer died reads as LLM_NOT_YET_LINK.
* ``_resolve_remote_cache``: on the first layer, one control request asks the remote whether the cache
  exists and is remote accessible, pins it and returns its layout (a :class:`RemoteCache`, duck-typed like
  the reference's CacheEntry for the inherited checks N8c/N8d/restrictions/strides). Later layers only check
  that the pin was not revoked (the remote deallocated the cache): LLM_KV_CACHE_NOT_EXIST.
* ``_layer_slices``: NIXL descriptor lists (all tensors, this push's batch slot) prepared once per push; a
  layer is ``tensor_num_per_layer`` indices into them.
* ``_transfer_seconds`` / ``_await_transfer``: injected delay and dropped links, bounded by
  llm.SyncKvCacheWaitTime (LLM_TIMEOUT), interrupted by a revoke or a dead peer.
* ``_transfer_layer``: one NIXL WRITE per layer, polled to completion under the same deadline (the last layer's
  carries a notification, delivered after its data); on expiry the request is released (cancelled) and
  LLM_TIMEOUT raised.

The remote lookup, the session, the timing and the NIXL request serve the siblings too (:mod:`.siblings`:
push_blocks' layers are WRITEs, the pulls READs). Deallocation (:mod:`.retiring`) first revokes the pins other
nodes hold on the cache and waits until their transfers have stopped.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..cache import Cache
from ..cache_keys import CacheKeyByIdAndIndex
from ..enums import Placement
from ..status import LLMException, LLMStatusCode
from ..transfer_args import _NUM_TENSORS_PER_LAYER, PushArgs
from .control import PeerGone, PeerLink, PeerTimeout
from .retiring import PinnedRelease
from .siblings import Descriptors, SiblingTransfers
from .transport import PeerDisconnected, TransferFailed, TransferTimeout

if TYPE_CHECKING:
    from .runtime_view import ProcessRuntime

_push_ids = itertools.count(1)


@dataclass(slots=True, eq=False)
class RemoteCache:
    """The remote's answer to "open": what the inherited per-layer checks read from a CacheEntry."""

    cache_id: int
    placement: Placement
    num_tensors: int
    shape: tuple[int, ...]
    tensor_nbytes: int
    batch_size: int
    stride: int
    is_blocks: bool
    remote_accessible: bool
    addrs: list[int]  # real addresses of the tensors in the remote process
    pin: int
    ends: list[int]  # where the memory segment holding each tensor ends (vendor mode writes up to there)
    alive: bool = True  # False: vendor mode found a cache freed since the link's table sync


class PushSession:
    """State of one transfer call (per thread): the remote cache, its pin and the prepared lists."""

    def __init__(self) -> None:
        self.push_id = next(_push_ids)
        self.peer: PeerLink | None = None
        self.remote: RemoteCache | None = None
        self.prepped: tuple[Any, Any] | None = None
        self.nbytes = 0
        self.layers_done = 0


class MultiprocessCacheManager(SiblingTransfers, PinnedRelease):
    """CacheManager of a node process; ``runtime`` is set by the node right after init."""

    runtime: ProcessRuntime | None = None

    def __init__(self, engine: Any, options: Any) -> None:
        super().__init__(engine, options)
        self._tls = threading.local()

    # ---- push session ---------------------------------------------------------------------------------
    def push_cache(self, dst_cache_key: CacheKeyByIdAndIndex, src_cache: Cache, src_batch_index: int = 0,
                   src_layer_range: range | None = None, dst_layer_range: range | None = None, size: int = -1,
                   tensor_num_per_layer: int = _NUM_TENSORS_PER_LAYER) -> None:
        """Push batch ``src_batch_index`` of ``src_cache``, layer by layer, into the remote cache of the key."""
        with self._transfer_session():
            super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range,
                               size, tensor_num_per_layer)

    @contextlib.contextmanager
    def _transfer_session(self) -> Iterator[PushSession]:
        """One transfer call's session: its remote cache opened (and pinned) once, released at the end."""
        session = PushSession()
        outer = getattr(self._tls, "session", None)
        self._tls.session = session
        rt = self.runtime
        if rt is not None:
            rt.pushes.started()  # a reset waits until the previous cluster's transfers have ended
        try:
            yield session
        finally:
            self._tls.session = outer
            self._end_session(session)
            if rt is not None:
                rt.pushes.ended()

    def _session(self) -> PushSession:
        s = getattr(self._tls, "session", None)
        if s is None:
            s = self._tls.session = PushSession()
        return s

    def _end_session(self, s: PushSession) -> None:
        rt = self.runtime
        if s.prepped is not None and rt is not None:
            rt.transport.release_prep(s.prepped)
        if s.remote is not None and s.peer is not None:
            s.peer.send("close", s.remote.pin)
            s.peer.forget(s.remote.pin)

    def _timeout_s(self) -> float:
        return float(self.engine.sync_timeout_s)

    # ---- remote-side hooks ----------------------------------------------------------------------------
    def _resolve_link(self, a: PushArgs) -> Any:
        rt = self.runtime
        peer = rt.links.get(a.peer_cluster_id) if rt is not None else None
        if peer is None or peer.broken.is_set():
            raise self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK,
                                     "current cluster is not linked with remote cluster")
        s = self._session()
        if s.peer is None:
            # the link's data path comes up after link_clusters returned (node.py): wait for it, within the push's
            # own timeout
            if not peer.data_path.wait(self._timeout_s()):
                raise self._native_error(a, LLMStatusCode.LLM_TIMEOUT, "the link's data path did not come up in time")
            if peer.data_path_error is not None or peer.broken.is_set():
                raise self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK,
                                         f"the link has no data path ({peer.data_path_error or 'broken'})")
            s.peer = peer
        elif s.peer is not peer:  # unlinked and linked again during the push
            raise self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK, "link was re-established during the push")
        return peer

    def _resolve_remote_cache(self, a: PushArgs, link: Any) -> Any:
        s = self._session()
        if s.remote is None:
            s.remote = self._open_remote(a, link)
        elif link.is_revoked(s.remote.pin):
            raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST, f"{a.target} was deallocated")
        return s.remote

    def _open_remote(self, a: Any, link: PeerLink, accessible: bool = True) -> RemoteCache:
        """The remote cache the call's record names (``a.selector()``), pinned; ``accessible``: refuse one that
        is not remote accessible (every lookup but a pull's by CacheKey)."""
        rt = self.runtime
        assert rt is not None
        timeout = self._timeout_s()
        try:
            info = link.request("open", a.selector(), timeout,
                                rt.transport.peer_generation(link.agent_name), timeout=timeout)
        except PeerGone:
            raise self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK, "remote cluster went away") from None
        except PeerTimeout:
            raise self._native_error(a, LLMStatusCode.LLM_TIMEOUT,
                                     f"remote did not answer within {timeout * 1000:.0f} ms") from None
        except RuntimeError as exc:
            raise self._native_error(a, LLMStatusCode.LLM_FAILED, f"remote lookup failed: {exc}") from None
        if info is None:
            raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST, f"{a.target} does not exist")
        if info.get("metadata") is not None:
            rt.transport.load_peer(info["metadata"], info["generation"])
        remote = RemoteCache(
            cache_id=info["cache_id"], placement=Placement(info["placement"]), num_tensors=info["num_tensors"],
            shape=tuple(info["shape"]), tensor_nbytes=info["tensor_nbytes"], batch_size=info["batch_size"],
            stride=info["stride"], is_blocks=info["is_blocks"], remote_accessible=info["remote_accessible"],
            addrs=list(info["addrs"]), pin=info["pin"], ends=list(info["ends"]), alive=info.get("alive", True))
        found_at = getattr(a, "found_at", None)
        if found_at is not None:  # a pull: the source batch the key names
            found_at(info.get("batch"))
        if accessible and not remote.remote_accessible:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "remote cache is not remote accessible.")
        return remote

    def _layer_slices(self, a: PushArgs, link: Any, local: Any, remote: Any, src_layer: int,  # type: ignore[override]
                      dst_layer: int) -> tuple[list[int], list[int]]:
        """Indices into the prepared lists: local tensors src_layer*tpl+j, remote tensors dst_layer*tpl+j."""
        s = self._session()
        if s.prepped is None:
            rt = self.runtime
            assert rt is not None
            n = self._copy_nbytes(a, local, remote)
            so, do = self._src_offset(a, local), self._dst_offset(a, remote)
            lens = self._descriptor_lengths(remote, do, n)
            ldesc = [(local.views[t].ctypes.data + so, lens[t] if t < len(lens) else n, 0)
                     for t in range(local.num_tensors)]
            rdesc = [(remote.addrs[t] + do, lens[t], 0) for t in range(remote.num_tensors)]
            try:
                s.prepped = rt.transport.prep(link.agent_name, ldesc, rdesc)
            except Exception as exc:  # noqa: BLE001 - NIXL errors become the native failure status
                raise self._native_error(a, LLMStatusCode.LLM_FAILED,
                                         f"cannot prepare transfer descriptors: {type(exc).__name__}: {exc}") from None
            s.nbytes = n
        pairs = self._tensor_pairs(a, src_layer, dst_layer)
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def _descriptor_lengths(self, remote: RemoteCache, dst_offset: int, nbytes: int) -> list[int]:
        """Bytes written into each remote tensor (push_cache)."""
        return [self._span_length(remote, t, dst_offset, nbytes) for t in range(remote.num_tensors)]

    def _span_length(self, remote: RemoteCache, tensor: int, offset: int, nbytes: int) -> int:
        """Bytes written from ``offset`` of a remote tensor: ``nbytes`` (the strides were compared before)."""
        return nbytes

    def _transfer_seconds(self, a: PushArgs, link: Any, nbytes: int) -> float:
        faults = self.engine.faults
        if link.server_id in faults.dropped_peers:
            return math.inf
        return float(faults.send_delay_s)

    def _interrupted(self, a: PushArgs, link: Any) -> LLMException | None:
        if self.engine.stop_event.is_set():
            return self._native_error(a, LLMStatusCode.LLM_FAILED, "local engine finalized during transfer")
        if link.broken.is_set():
            return self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK, "remote cluster went away")
        s = self._session()
        if s.remote is not None and link.is_revoked(s.remote.pin):
            return self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST, f"{a.target} was deallocated")
        return None

    def _await_transfer(self, a: PushArgs, link: Any, seconds: float) -> None:
        """Wait ``seconds`` (injected delay; inf for a dropped link), at most what is left of
        llm.SyncKvCacheWaitTime (``_transfer_budget_s``)."""
        timeout = self._timeout_s()
        budget = self._transfer_budget_s(a, timeout)
        end = time.monotonic() + min(seconds, budget)
        while True:
            exc = self._interrupted(a, link)
            if exc is not None:
                raise exc
            left = end - time.monotonic()
            if left <= 0:
                break
            self.engine.stop_event.wait(min(left, 0.01))
        if seconds > budget:
            raise self._native_error(a, LLMStatusCode.LLM_TIMEOUT,
                                     f"transfer did not complete within {timeout * 1000:.0f} ms")
        a.spent += seconds

    def _transfer_layer(self, a: PushArgs, link: Any, remote: Any, pairs: Any) -> None:  # type: ignore[override]
        if isinstance(pairs, Descriptors):  # push_blocks: this layer's own descriptor lists
            self._transfer_spans(a, link, pairs, "WRITE")
            return
        rt = self.runtime
        assert rt is not None
        s = self._session()
        local_idx, remote_idx = pairs
        seconds = self._transfer_seconds(a, link, s.nbytes * len(local_idx))
        if seconds > 0:
            self._await_transfer(a, link, seconds)
        exc = self._interrupted(a, link)
        if exc is not None:
            raise exc
        assert s.prepped is not None
        # a notification only with the last layer: a WRITE that carries one completes only once the target has
        # progressed (~60 us a layer here), one without in ~15 us; every layer still completes before the next
        last = s.layers_done + 1 >= len(a.src_layer_range)
        notif = f"push:{s.push_id}:{remote.cache_id}:{remote_idx[0]}".encode() if last else b""
        self._nixl_transfer(a, link, "WRITE", s.prepped, local_idx, remote_idx, notif)
        s.layers_done += 1

    def _nixl_transfer(self, a: Any, link: Any, op: str, prepped: tuple[Any, Any], local_idx: list[int],
                       remote_idx: list[int], notif: bytes) -> None:
        """Post one NIXL request and poll it to completion within what is left of llm.SyncKvCacheWaitTime."""
        rt = self.runtime
        assert rt is not None
        timeout = self._timeout_s()
        started = time.monotonic()
        deadline = started + self._transfer_budget_s(a, timeout)
        try:
            handle, state = rt.transport.post(prepped[0], local_idx, prepped[1], remote_idx, notif, op)
            rt.transport.wait(handle, state, deadline, lambda: self._abort_in_flight(a, link))
        except TransferTimeout:
            raise self._native_error(a, LLMStatusCode.LLM_TIMEOUT,
                                     f"transfer did not complete within {timeout * 1000:.0f} ms") from None
        except PeerDisconnected:
            raise self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK, "remote cluster went away") from None
        except TransferFailed as err:
            status = LLMStatusCode.LLM_NOT_YET_LINK if link.broken.is_set() else LLMStatusCode.LLM_FAILED
            raise self._native_error(a, status, f"transfer failed: {err}") from None
        a.spent += time.monotonic() - started

    def _abort_in_flight(self, a: PushArgs, link: Any) -> LLMException | None:
        """A write in flight is abandoned only when the peer is gone (a revoke waits for it, like the
        reference's copy under the entry lock)."""
        if link.broken.is_set():
            return self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK, "remote cluster went away")
        return None

"""The transfer family's siblings across processes: push_blocks, pull_cache and pull_blocks of a node process.

Their checks, their order and the bytes they move are the in-process reference's (``reference_impl.push_blocks``,
``pull_cache``, ``pull_blocks``, ``pull_transfer``), inherited unchanged; only the steps that touch memory are
replaced, at the seams the shared modules leave for it:

* ``_block_pairs`` (push_blocks) and ``_span_pairs`` (the pulls) turn the byte spans the shared code computed into
  NIXL descriptors (:class:`Descriptors`) instead of numpy views;
* push_blocks' layer is one NIXL WRITE of its descriptors; a pull is one NIXL READ from the remote node into
  local memory, made under the local destination's lock like the in-process copy (``_pull_copy``);
* a pull's source is opened and pinned over the link like a push's destination (``_open_remote``): by cache id or
  BlocksCacheKey through the link's synced table, by CacheKey in the remote's live key table (no
  remote-accessible check, as in process); ``_pull_source_alive`` reads the pin (and vendor mode's stale entry).

Each call runs in the session push_cache uses (one open, one pin, released at the end).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..cache_manager import CacheManager
from ..status import LLMStatusCode
from ..transfer_args import NUM_TENSORS_PER_LAYER, Span

if TYPE_CHECKING:
    import contextlib

    from ..cache import Cache


@dataclass(slots=True)
class Descriptors:
    """One transfer's NIXL descriptors, ``(address, length, 0)`` each: ``local[i]`` pairs with ``remote[i]``."""

    local: list[tuple[int, int, int]]
    remote: list[tuple[int, int, int]]

    @property
    def nbytes(self) -> int:
        return sum(n for _, n, _dev in self.remote)


class SiblingTransfers(CacheManager):
    """The three siblings of :class:`~.cache_manager.MultiprocessCacheManager`, which provides the session, the
    remote lookup and the NIXL transfer steps declared below."""

    if TYPE_CHECKING:
        def _transfer_session(self) -> contextlib.AbstractContextManager[Any]: ...
        def _open_remote(self, a: Any, link: Any, accessible: bool = True) -> Any: ...
        def _session(self) -> Any: ...
        def _interrupted(self, a: Any, link: Any) -> Any: ...
        runtime: Any

        def _nixl_transfer(self, a: Any, link: Any, op: str, prepped: tuple[Any, Any], local_idx: list[int],
                           remote_idx: list[int], notif: bytes) -> None: ...
        def _span_length(self, remote: Any, tensor: int, offset: int, nbytes: int) -> int: ...

    def push_blocks(self, dst_cache_key: Any, src_cache: Cache, src_blocks: Any = (), dst_blocks: Any = (),
                    src_layer_range: range | None = None, dst_layer_range: range | None = None,
                    tensor_num_per_layer: int = NUM_TENSORS_PER_LAYER) -> None:
        """Push ``src_blocks`` of ``src_cache`` into ``dst_blocks`` of the remote blocks cache, layer by layer."""
        with self._transfer_session():
            super().push_blocks(dst_cache_key, src_cache, src_blocks, dst_blocks, src_layer_range, dst_layer_range,
                                tensor_num_per_layer)

    def pull_cache(self, cache_key: Any, cache: Cache, batch_index: int = 0, size: int = -1, **kwargs: Any) -> None:
        """Pull the remote batch the key names into batch ``batch_index`` of ``cache`` (one NIXL READ)."""
        with self._transfer_session():
            super().pull_cache(cache_key, cache, batch_index, size, **kwargs)

    def pull_blocks(self, src_cache_key: Any, dst_cache: Cache, src_blocks: Any = (), dst_blocks: Any = (),
                    **kwargs: Any) -> None:
        """Pull into ``dst_blocks`` of ``dst_cache`` (one NIXL READ)."""
        with self._transfer_session():
            super().pull_blocks(src_cache_key, dst_cache, src_blocks, dst_blocks, **kwargs)

    # ---- memory seams: spans -> NIXL descriptors ---------------------------------------------------------
    def _block_pairs(self, link: Any, local: Any, remote: Any, spans: list[Span]) -> Any:
        """push_blocks: local blocks (this process's memory) into the remote's addresses; the length is what
        ``_span_length`` lets into the remote tensor (vendor mode cuts at the end of its memory segment)."""
        out = Descriptors([], [])
        for s in spans:
            n = self._span_length(remote, s.dst_tensor, s.dst_offset, s.nbytes)
            out.local.append((local.views[s.src_tensor].ctypes.data + s.src_offset, n, 0))
            out.remote.append((remote.addrs[s.dst_tensor] + s.dst_offset, n, 0))
        return out

    def _span_pairs(self, src: Any, dst: Any, spans: list[Span]) -> Any:
        """A pull: the remote source's addresses into the local destination's memory."""
        return Descriptors([(dst.views[s.dst_tensor].ctypes.data + s.dst_offset, s.nbytes, 0) for s in spans],
                           [(src.addrs[s.src_tensor] + s.src_offset, s.nbytes, 0) for s in spans])

    def _pairs_nbytes(self, pairs: Any) -> int:
        return int(pairs.nbytes)

    def _transfer_spans(self, a: Any, link: Any, d: Descriptors, op: str) -> None:
        """One transfer of push_blocks' layer, after its simulated time."""
        seconds = self._transfer_seconds(a, link, d.nbytes)
        if seconds > 0:
            self._await_transfer(a, link, seconds)
        exc = self._interrupted(a, link)
        if exc is not None:
            raise exc
        self._move_spans(a, link, d, op)

    def _move_spans(self, a: Any, link: Any, d: Descriptors, op: str) -> None:
        """One NIXL request over descriptors prepared for it alone (push_blocks: WRITE; a pull: READ); empty
        descriptors (vendor mode's cut at a segment's end) move nothing."""
        rt = self.runtime
        assert rt is not None
        keep = [i for i, (_, n, _dev) in enumerate(d.remote) if n > 0]
        if not keep:
            return
        try:
            prepped = rt.transport.prep(link.agent_name, [d.local[i] for i in keep], [d.remote[i] for i in keep])
        except Exception as exc:  # noqa: BLE001 - NIXL errors become the native failure status
            raise self._native_error(a, LLMStatusCode.LLM_FAILED,
                                     f"cannot prepare transfer descriptors: {type(exc).__name__}: {exc}") from None
        try:
            idx = list(range(len(keep)))
            self._nixl_transfer(a, link, op, prepped, idx, idx, b"")
        finally:
            rt.transport.release_prep(prepped)

    # ---- pulls: the source over the link, the READ ----------------------------------------------------------
    def _resolve_pull_source(self, a: Any, link: Any) -> Any:
        """By CacheKey (the key kinds' ``live_only``): the remote's live key table, no remote-accessible check;
        else as a push's destination."""
        if a.key_kind.live_only:
            s = self._session()
            if s.remote is None:
                s.remote = self._open_remote(a, link, accessible=False)
            return s.remote
        return self._resolve_remote_cache(a, link)

    def _pull_source_alive(self, link: Any, remote: Any) -> bool:
        """Not revoked (the remote is deallocating it) and, in vendor mode's stale table, not freed before."""
        return bool(remote.alive) and not link.is_revoked(remote.pin)

    def _pull_copy(self, a: Any, link: Any, pairs: Any) -> None:
        exc = self._interrupted(a, link)
        if exc is not None:
            raise exc
        self._move_spans(a, link, pairs, "READ")

"""The byte copy of one transfer step, shared by the family: wait out its simulated time, then copy under the
destination entry's lock, refusing a destination freed meanwhile (facts §1.3 N12; README "Remote table")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .status import LLMStatusCode
from .transfer_args import SlicePairs
from .transfer_timing import TransferTiming

if TYPE_CHECKING:
    from .engine import CacheEntry
    from .fabric import Link


class LayerCopy(TransferTiming):
    """``_transfer_layer`` and the copy it ends with (hook points)."""

    def _dst_alive(self, remote: CacheEntry) -> bool:
        return remote.alive

    def _copy_layer(self, pairs: SlicePairs) -> None:
        for src, dst in pairs:
            np.copyto(dst, src)

    def _transfer_layer(self, a: Any, link: Link, remote: CacheEntry, pairs: SlicePairs) -> None:
        nbytes = 0
        for src, _ in pairs:
            nbytes += src.size
        seconds = self._transfer_seconds(a, link, nbytes)
        if seconds > 0:
            self._await_transfer(a, link, seconds)
        with remote.lock:
            if not self._dst_alive(remote):
                raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST,
                                         f"{a.target} was deallocated")
            self._copy_layer(pairs)

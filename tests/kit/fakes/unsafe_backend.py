"""Fake backend that is memory-unsafe: every push writes one byte just past the destination batch entry of the
last tensor of each layer (the bytes it should write are right; the byte after them is clobbered)."""

from __future__ import annotations

import numpy as np

from reference_impl.backend import ReferenceBackend
from reference_impl.cache_manager import CacheManager

SPILL = 0xA5


class SpillingCacheManager(CacheManager):
    def _layer_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        pairs = list(super()._layer_slices(a, link, local, remote, src_layer, dst_layer))
        _, last = self._tensor_pairs(a, src_layer, dst_layer)[-1]
        past_end = self._dst_offset(a, remote) + self._copy_nbytes(a, local, remote)
        spill = link.server.memory.view(remote.tensor_addrs[last] + past_end, 1)
        pairs.append((np.full(1, SPILL, dtype=np.uint8), spill))
        return pairs


backend = ReferenceBackend(name="fake-unsafe", cache_manager_cls=SpillingCacheManager)

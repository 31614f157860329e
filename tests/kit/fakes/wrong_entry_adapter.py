"""Fake vendor adapter with the defect of issue 33: a push with ``src_batch_index == 1`` lands in the wrong
destination entry (the next batch slot of the remote cache), every other push is the reference's."""

from __future__ import annotations

from typing import Any

from reference_impl.backend import ReferenceBackend
from reference_impl.cache_manager import CacheManager


class WrongEntryCacheManager(CacheManager):
    def _dst_offset(self, a: Any, remote: Any) -> int:
        slot = a.dst_cache_key.batch_index
        if a.src_batch_index == 1 and remote.batch_size > 1:
            slot = (slot + 1) % remote.batch_size  # the adapter's off-by-one: the neighbouring entry
        return int(slot * remote.stride)


backend = ReferenceBackend(name="fake-wrong-entry", cache_manager_cls=WrongEntryCacheManager)

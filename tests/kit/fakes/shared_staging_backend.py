"""A backend unsafe under threads on every transfer of the family: each node stages the bytes of a copy in one
buffer, with no lock, so two transfers at once on one node can land each other's bytes (push_cache's mutant
``shared_staging_buffer`` does this to push_cache's copy alone). One transfer at a time is exact."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from reference_impl.backend import ReferenceBackend
from reference_impl.cache_manager import CacheManager

#: how long a thread other than the main one holds the staged bytes before copying them out (widens the race)
STAGING_S = 0.002


class SharedStagingCacheManager(CacheManager):
    def _staged(self, pairs: Any) -> None:
        for k, (src, dst) in enumerate(pairs):
            stage = getattr(self, "_stage", None)
            if stage is None or stage.size < src.size:
                stage = self._stage = np.empty(src.size, dtype=np.uint8)
            stage[:src.size] = src
            if k == 0 and threading.current_thread() is not threading.main_thread():
                time.sleep(STAGING_S)
            np.copyto(dst, stage[:src.size])

    def _copy_layer(self, pairs):  # type: ignore[no-untyped-def]
        self._staged(pairs)

    def _pull_copy(self, a, link, pairs):  # type: ignore[no-untyped-def]
        self._staged(pairs)


backend = ReferenceBackend(name="shared-staging", cache_manager_cls=SharedStagingCacheManager)

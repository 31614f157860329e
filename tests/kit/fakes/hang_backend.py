"""Fake backend: push_cache never returns when asked for a source batch other than 0.

Batch 0 (what the smoke check pushes) works, so the run gets past the smoke check and the hanging tests
must fail by timeout while the run goes on.
"""

from __future__ import annotations

import threading

from _proxy import ProxyCacheManager, backend_with

_FOREVER = threading.Event()


class HangingCacheManager(ProxyCacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # noqa: ANN001
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        if src_batch_index != 0:
            while not _FOREVER.wait(3600):
                pass
        return super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range,
                                  size, tensor_num_per_layer)


backend = backend_with("fake-hang", HangingCacheManager)

"""Fake backend that stands for a user pressing Ctrl-C: the first push from source batch 1 sends SIGINT to
the process (batch 0, which the smoke check pushes, works)."""

from __future__ import annotations

import os
import signal

from _proxy import ProxyCacheManager, backend_with


class InterruptingCacheManager(ProxyCacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # noqa: ANN001
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        if type(src_batch_index) is int and src_batch_index == 1:
            os.kill(os.getpid(), signal.SIGINT)
        return super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range,
                                  size, tensor_num_per_layer)


backend = backend_with("fake-interrupt", InterruptingCacheManager)

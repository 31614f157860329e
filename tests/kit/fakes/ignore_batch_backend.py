"""Fake backend: push_cache ignores src_batch_index and always pushes source batch 0."""

from __future__ import annotations

from _proxy import ProxyCacheManager, backend_with


class IgnoringCacheManager(ProxyCacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # noqa: ANN001
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        if isinstance(src_batch_index, int) and not isinstance(src_batch_index, bool) and src_batch_index >= 0:
            src_batch_index = 0
        return super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range,
                                  size, tensor_num_per_layer)


backend = backend_with("fake-ignore-batch", IgnoringCacheManager)

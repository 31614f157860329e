"""Fake backend with exactly one must-level defect: it accepts ``src_batch_index=[0]`` (a list) as batch 0,
where the documentation requires a TypeError or ValueError for any non-int batch index."""

from __future__ import annotations

from _proxy import ProxyCacheManager, backend_with


class ListTolerantCacheManager(ProxyCacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # noqa: ANN001
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        if isinstance(src_batch_index, list) and src_batch_index == [0]:
            src_batch_index = 0
        return super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range,
                                  size, tensor_num_per_layer)


backend = backend_with("fake-accepts-list", ListTolerantCacheManager)

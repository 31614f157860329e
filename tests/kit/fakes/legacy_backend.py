"""A backend of the first documented release, 8.2.RC1.alpha002: push_cache has five parameters (no size, no
tensor_num_per_layer; one layer is two tensors). Used to show that --spec-version checks what a release states."""

from __future__ import annotations

from reference_impl.backend import ReferenceBackend
from reference_impl.cache_manager import CacheManager


class LegacyCacheManager(CacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # type: ignore[override]
                   dst_layer_range=None):
        return super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range)


class LegacyBackend(ReferenceBackend):
    def capabilities(self):  # type: ignore[no-untyped-def]
        return {**super().capabilities(), "spec_versions": ["8.2.RC1.alpha002"]}


backend = LegacyBackend(name="legacy-8.2.RC1.alpha002", cache_manager_cls=LegacyCacheManager)

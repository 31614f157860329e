"""A backend unsafe under threads on every transfer of the family: push_cache's mutant ``shared_staging_buffer``
(each node stages a copy's bytes in one buffer, with no lock, so two transfers at once on one node can land each
other's bytes) with a pull's copy staged the same way (push_blocks' copy already goes through it). One transfer at
a time is exact."""

from __future__ import annotations

from mutants.catalog import shared_staging_buffer
from reference_impl.backend import ReferenceBackend


class SharedStagingCacheManager(shared_staging_buffer.cache_manager_cls):  # type: ignore[name-defined,misc]
    def _pull_copy(self, a, link, pairs):  # type: ignore[no-untyped-def]
        self._copy_layer(pairs)


backend = ReferenceBackend(name="shared-staging", cache_manager_cls=SharedStagingCacheManager)

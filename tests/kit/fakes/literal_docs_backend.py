"""The reference made to follow the push_cache documentation literally where the vendor reads it its own way:

* a size equal to the local KV entry means what -1 means ("The default value -1 indicates the size of a local
  KV entry"), so it is accepted and pushed exactly as -1;
* with both layer ranges left unset, each means all layers of its own cache ("If this parameter is not set,
  data at all layers is transmitted"), and the two must have the same value: into a destination with another
  number of layers the push is refused before anything moves.
"""

from __future__ import annotations

import threading
from typing import Any

from reference_impl.backend import ReferenceBackend
from reference_impl.cache_manager import CacheManager
from reference_impl.status import LLMStatusCode


class LiteralDocs(CacheManager):
    _call = threading.local()

    def push_cache(self, dst_cache_key: Any, src_cache: Any, src_batch_index: int = 0,  # type: ignore[override]
                   src_layer_range: range | None = None, dst_layer_range: range | None = None, size: int = -1,
                   tensor_num_per_layer: int = 2) -> None:
        # its own call's ranges only: push_blocks and pull_cache share the restriction step on this thread
        self._call.default_ranges = src_layer_range is None and dst_layer_range is None
        try:
            super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size,
                               tensor_num_per_layer)
        finally:
            self._call.default_ranges = False

    def _check_size_value(self, a: Any) -> None:
        desc = a.src_cache.cache_desc
        if a.size != desc.size // desc.shape[0]:  # the entry size written out is -1
            super()._check_size_value(a)

    def _check_restrictions(self, a: Any, local: Any, remote: Any) -> None:
        tnpl = a.tensor_num_per_layer
        if getattr(self._call, "default_ranges", False) and remote.num_tensors // tnpl != local.num_tensors // tnpl:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     "unset ranges mean all layers of each cache, and the caches' layers differ")
        super()._check_restrictions(a, local, remote)


backend = ReferenceBackend(name="literal-docs", cache_manager_cls=LiteralDocs)

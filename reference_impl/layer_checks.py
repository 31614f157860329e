"""The native per-layer checks of a layer-wise transfer (facts §1.3 N8c..N11, plus the documentation's device-pool
and stride restrictions), shared by push_cache and push_blocks: each a hook point that raises the native error."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .native_errors import NativeErrors
from .status import LLMStatusCode

if TYPE_CHECKING:
    from .engine import CacheEntry


class NativeLayerChecks(NativeErrors):
    """The checks; the manager provides ``_enabled_mem_pool``."""

    _enabled_mem_pool: bool

    def _check_dst_layer(self, a: Any, remote: CacheEntry, dst_layer: int) -> None:
        num_layers = remote.num_tensors // a.tensor_num_per_layer
        if not dst_layer < num_layers:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"layer index[{dst_layer}] is out of range[0, {num_layers}) of remote cache")

    def _check_dst_batch(self, a: Any, remote: CacheEntry) -> None:
        if not a.dst_cache_key.batch_index < remote.batch_size:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"batch index[{a.dst_cache_key.batch_index}] is out of range"
                                     f"[0, {remote.batch_size}) of remote cache")

    def _check_src_layer(self, a: Any, local: CacheEntry, src_layer: int) -> None:
        num_layers = local.num_tensors // a.tensor_num_per_layer
        if not src_layer < num_layers:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"layer index[{src_layer}] is out of range[0, {num_layers})")

    def _check_tensor_divisible(self, a: Any, local: CacheEntry) -> None:
        if local.num_tensors % a.tensor_num_per_layer:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"tensor_num {local.num_tensors} must be a multiple of "
                                     f"tensor_num_per_layer {a.tensor_num_per_layer}")

    def _check_src_batch(self, a: Any, local: CacheEntry) -> None:
        if not a.src_batch_index < local.batch_size:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"batch index[{a.src_batch_index}] is out of range[0, {local.batch_size})")

    def _check_restrictions(self, a: Any, local: CacheEntry, remote: CacheEntry) -> None:
        """The device-pool restriction. "When src_cache is on the host and dst_cache is on the device, only
        scenarios where both caches are contiguous are supported" names no error: a blocks source is refused for
        every placement by #5, and a blocks destination is written like a contiguous one, as the vendor does (no
        native check looks at it: facts §1.3); its batch size is 1 and its block size is the stride."""
        if local.placement != remote.placement and not self._enabled_mem_pool:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     "device<->host push needs llm.MemPoolConfig (device memory pool)")

    def _check_strides(self, a: Any, local: CacheEntry, remote: CacheEntry) -> None:
        if local.stride > remote.stride:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"local batch size in bytes ({local.stride}) exceeds the remote one "
                                     f"({remote.stride})")

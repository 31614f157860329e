"""The Python-layer checks push_cache shares with push_blocks (and, for tensor_num_per_layer, with the pulls):
the flag gate, tensor_num_per_layer and the layer ranges (facts §1.2 #1, #6..#11; §2 push_blocks 1, 7..10).

Each check reads the call's record (``PushArgs`` or a sibling's): ``operation`` words the message and
``local_cache`` is the cache whose tensor count bounds tensor_num_per_layer and sets the default ranges.
"""

from __future__ import annotations

from typing import Any

from .checks import check_layer_range, check_uint32
from .status import raise_if_false


class LayerArgumentChecks:
    """The shared argument checks; the manager provides ``_enable_remote_cache_accessible``."""

    _enable_remote_cache_accessible: bool

    def _check_push_enabled(self, a: Any) -> None:
        raise_if_false(self._enable_remote_cache_accessible,
                       f"{a.operation} is only supported while enable_remote_cache_accessible is True")

    def _check_tnpl_type(self, a: Any) -> None:
        check_uint32("tensor_num_per_layer", a.tensor_num_per_layer)

    def _check_tnpl_positive(self, a: Any) -> None:
        raise_if_false(a.tensor_num_per_layer > 0,
                       "[" + a.operation + "] param check failed, tensor_num_per_layer ({0}) is invalid, "
                       "should [1, {1}]", a.tensor_num_per_layer, a.local_cache.cache_desc.num_tensors)

    def _check_src_layer_range(self, a: Any) -> None:
        check_layer_range("src_layer_range", a.src_layer_range)

    def _check_dst_layer_range(self, a: Any) -> None:
        check_layer_range("dst_layer_range", a.dst_layer_range)

    def _default_layer_ranges(self, a: Any) -> None:
        num_layers = a.local_cache.cache_desc.num_tensors // a.tensor_num_per_layer
        if a.src_layer_range is None:
            a.src_layer_range = range(0, num_layers)
        if a.dst_layer_range is None:
            a.dst_layer_range = range(0, num_layers)

    def _check_range_lengths(self, a: Any) -> None:
        raise_if_false(len(a.src_layer_range) == len(a.dst_layer_range),
                       "src_layer_range size should be equal to size of dst_layer_range size.")

    def _check_tnpl_upper_bound(self, a: Any) -> None:
        num_tensors = a.local_cache.cache_desc.num_tensors
        raise_if_false(a.tensor_num_per_layer <= num_tensors,
                       "[" + a.operation + "] param check failed, tensor_num_per_layer ({0}) is invalid, "
                       "should [1, {1}]", a.tensor_num_per_layer, num_tensors)

    def _check_range_values(self, a: Any) -> None:
        """Documentation: "Currently, src_layer_range and dst_layer_range must have the same value"."""
        raise_if_false(a.src_layer_range == a.dst_layer_range,
                       "[" + a.operation + "] param check failed, src_layer_range ({0}) and dst_layer_range ({1}) "
                       "must have the same value.", a.src_layer_range, a.dst_layer_range)

"""``CacheDesc``: the shape, type and placement of a cache's tensors."""

from __future__ import annotations

import math

from .checks import check_int32, check_isinstance, check_list_int64, check_uint32
from .enums import DataType, Placement
from .status import raise_if_false


class CacheDesc:
    """Description of a cache: ``num_tensors`` tensors, each of ``shape`` elements of ``data_type``.

    The native layer always treats ``shape[0]`` as the batch (or block) dimension.
    """

    def __init__(self, num_tensors: int, shape: list[int] | tuple[int, ...], data_type: DataType,
                 placement: Placement = Placement.DEVICE, batch_dim_index: int = 0,
                 seq_len_dim_index: int = -1, kv_tensor_format: str | None = None) -> None:
        check_uint32("num_tensors", num_tensors)
        check_isinstance("shape", shape, [list, tuple], int, allow_none=False)
        check_isinstance("data_type", data_type, [DataType], allow_none=False)
        check_isinstance("placement", placement, [Placement], allow_none=False)
        check_isinstance("batch_dim_index", batch_dim_index, [int], allow_none=False)
        check_int32("seq_len_dim_index", seq_len_dim_index)
        check_isinstance("kv_tensor_format", kv_tensor_format, [str])
        raise_if_false(0 <= batch_dim_index < len(shape), "batch_dim_index {0} out of range, [0, {1})",
                       batch_dim_index, len(shape))
        raise_if_false(seq_len_dim_index == -1 or 0 <= seq_len_dim_index < len(shape),
                       "seq_len_dim_index {0} out of range, [0, {1})", seq_len_dim_index, len(shape))
        check_list_int64("shape", shape)
        self._num_tensors = num_tensors
        self._shape = shape
        self._data_type = data_type
        self._placement = placement
        self._batch_dim_index = batch_dim_index
        self._seq_len_dim_index = seq_len_dim_index
        self._kv_tensor_format = kv_tensor_format
        self._is_blocks = False

    @property
    def num_tensors(self) -> int:
        return self._num_tensors

    @property
    def shape(self) -> list[int] | tuple[int, ...]:
        return self._shape

    @property
    def data_type(self) -> DataType:
        return self._data_type

    @property
    def placement(self) -> Placement:
        return self._placement

    @property
    def batch_dim(self) -> int:
        return self._batch_dim_index

    @property
    def batch_size(self) -> int:
        return self._shape[self._batch_dim_index]

    @property
    def seq_len_dim_index(self) -> int:
        return self._seq_len_dim_index

    @property
    def kv_tensor_format(self) -> str | None:
        return self._kv_tensor_format

    @property
    def size(self) -> int:
        """Bytes of one whole tensor: prod(shape) * element size."""
        return math.prod(self._shape) * self._data_type.itemsize

    def update_dim(self, dim_index: int, value: int) -> None:
        check_isinstance("dim_index", dim_index, [int], allow_none=False)
        check_isinstance("value", value, [int], allow_none=False)
        raise_if_false(0 <= dim_index < len(self._shape), "dim_index {0} out of range", dim_index)
        self._shape[dim_index] = value  # type: ignore[index]

    def __repr__(self) -> str:
        return (f"CacheDesc(num_tensors={self._num_tensors}, shape={list(self._shape)}, "
                f"data_type={self._data_type}, placement={self._placement!r})")

"""Enumerations of the public API: placements, data types, roles."""

from __future__ import annotations

from enum import Enum, IntEnum


class Placement(IntEnum):
    HOST = 0
    DEVICE = 1


class LLMRole(IntEnum):
    PROMPT = 1
    DECODER = 2
    MIX = 3


class DataType(Enum):
    """Element types; values are the GE ``DataType`` numbers (declared in the vendor's order)."""

    DT_FLOAT = 0
    DT_FLOAT16 = 1
    DT_BF16 = 27
    DT_INT8 = 2
    DT_INT16 = 6
    DT_UINT16 = 7
    DT_UINT8 = 4
    DT_INT32 = 3
    DT_INT64 = 9
    DT_UINT32 = 8
    DT_UINT64 = 10
    DT_BOOL = 12
    DT_DOUBLE = 11
    DT_STRING = 13

    @property
    def itemsize(self) -> int:
        """Bytes per element (DT_STRING counts 16 bytes, as the native layer does)."""
        return _ITEMSIZE[self]


_ITEMSIZE: dict[DataType, int] = {
    DataType.DT_FLOAT: 4, DataType.DT_FLOAT16: 2, DataType.DT_BF16: 2,
    DataType.DT_INT8: 1, DataType.DT_UINT8: 1, DataType.DT_BOOL: 1,
    DataType.DT_INT16: 2, DataType.DT_UINT16: 2,
    DataType.DT_INT32: 4, DataType.DT_UINT32: 4,
    DataType.DT_INT64: 8, DataType.DT_UINT64: 8, DataType.DT_DOUBLE: 8,
    DataType.DT_STRING: 16,
}


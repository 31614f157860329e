"""Argument checks shared by the API (same exception kinds and messages as ``llm_datadist.utils``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from .status import LLMStatusCode, raise_if_false

UINT16_MAX = 2**16 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
UINT32_MAX = 2**32 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1


def _names(classes: Sequence[type]) -> str:
    return "[" + ", ".join(f"'{c.__name__}'" for c in classes) + "]"


def check_isinstance(name: str, value: Any, classes: type | Sequence[type], inner_class: type | None = None,
                     extra_fmt: str = "", allow_none: bool = True) -> None:
    """TypeError unless ``value`` is one of ``classes`` (and, for containers, holds only ``inner_class``)."""
    cls_list = [classes] if isinstance(classes, type) else list(classes)
    if value is None and allow_none:
        return
    if not isinstance(value, tuple(cls_list)):
        raise TypeError(f"{extra_fmt}{name} only support {_names(cls_list)}, but got {type(value)}.")
    if inner_class is not None:
        for item in cast(Iterable[Any], value):
            if not isinstance(item, inner_class):
                raise TypeError(f"{extra_fmt}{name} element only support {_names([inner_class])}, "
                                f"but got {type(item)}.")


def _check_int_range(name: str, value: Any, lo: int, hi: int, kind: str) -> None:
    check_isinstance(name, value, [int], allow_none=False)
    if not lo <= value <= hi:
        raise ValueError(f"{name}'s value is out of range,{value} is not a {kind} value.")


def check_uint16(name: str, value: Any) -> None:
    _check_int_range(name, value, 0, UINT16_MAX, "uint16")


def check_int32(name: str, value: Any) -> None:
    _check_int_range(name, value, INT32_MIN, INT32_MAX, "int32")


def check_uint32(name: str, value: Any) -> None:
    _check_int_range(name, value, 0, UINT32_MAX, "uint32")


def check_int64(name: str, value: Any) -> None:
    _check_int_range(name, value, INT64_MIN, INT64_MAX, "int64")


def check_uint64(name: str, value: Any) -> None:
    _check_int_range(name, value, 0, UINT64_MAX, "uint64")


def check_list_int64(name: str, values: Sequence[Any]) -> None:
    for v in values:
        check_int64(name, v)


def check_layer_range(name: str, layer_range: Any) -> None:
    """None is accepted; otherwise a ``range`` with step 1 and ``0 <= start < stop``."""
    if layer_range is None:
        return
    check_isinstance(name, layer_range, [range], allow_none=False)
    raise_if_false(layer_range.step == 1, "check {0}.step == 1 failed", name,
                   status_code=LLMStatusCode.LLM_PARAM_INVALID)
    raise_if_false(0 <= layer_range.start < layer_range.stop,
                   "check 0 <= range.start < range.stop failed, {0} = {1}", name, layer_range)

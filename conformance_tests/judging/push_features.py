"""What describes one push for the report's likely-cause analysis: its arguments and its two caches' layouts as
named scalars (numbers, booleans, short words), and the values a run's passing pushes took.

The features are facts of the call the kit made (never of the backend's answer), so a failing push can be set
against the passing ones: "every failing push has src_batch_index > 0; no passing push does".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: distinct values kept per feature for the passing pushes; past it only the extremes of a number are kept
MAX_VALUES = 48

Scalar = int | float | bool | str | None


def _uint(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _range(v: Any) -> tuple[str, int | None, int | None]:
    """(form, start, length) of a layer-range argument."""
    if v is None:
        return "default", None, None
    if isinstance(v, range):
        return ("explicit" if v.step == 1 else "stepped"), v.start, len(v)
    return type(v).__name__, None, None


def features(args: Mapping[str, Any], src: Any, dst: Any, default_tnpl: int,
             entries: tuple[str, str] = ("src_batch_index", "dst_batch_index")) -> dict[str, Scalar]:
    """The features of one push: ``args`` as the oracle reads them (the key's batch index under its entries
    name), ``src``/``dst`` the testbed's caches (``CacheInfo``), ``default_tnpl`` the release's default,
    ``entries`` the names of the source's and the destination's entry (the spec's ``operation.entries``; the
    features keep push_cache's names, so a report reads the same whatever the operation)."""
    tnpl = args.get("tensor_num_per_layer", default_tnpl)
    src_entry, dst_entry = (_uint(args.get(name, 0)) for name in entries)
    src_form, src_start, src_len = _range(args.get("src_layer_range"))
    dst_form, dst_start, dst_len = _range(args.get("dst_layer_range"))
    out: dict[str, Scalar] = {
        "src_batch_index": src_entry,
        "dst_batch_index": dst_entry,
        "tensor_num_per_layer": _uint(tnpl),
        "size": _uint(args.get("size", -1)),
        "src_layer_range": src_form,
        "dst_layer_range": dst_form,
        "range_start": src_start,
        "range_layers": src_len,
        "ranges_equal": src_form == dst_form and src_start == dst_start and src_len == dst_len,
    }
    if src is not None and dst is not None:
        out.update({
            "data_type": src.data_type,
            "transfer": f"{src.placement}->{dst.placement}",
            "src_registered": bool(src.guarded),
            "dst_registered": bool(dst.guarded),
            "src_tensors": src.num_tensors,
            "dst_tensors": dst.num_tensors,
            "dst_more_tensors": dst.num_tensors > src.num_tensors,
            "src_batches": src.batch,
            "dst_batches": dst.batch,
            "rank": len(src.shape),
            "entry_bytes": src.stride,
            "entries_same_size": src.stride == dst.stride,
            "src_batch_is_last": src_entry == src.batch - 1,
            "dst_batch_is_last": dst_entry == dst.batch - 1,
        })
    return out


#: the classes a judged push is compared within: pushes that raised; pushes that returned; and of those, the
#: ones whose check compared the targeted slice byte for byte (a wrong slice is set against these only)
RAISED, RETURNED, SLICE = "raised", "returned", "returned, targeted slice checked"


def classes(returned: bool, slice_checked: bool) -> list[str]:
    """The classes a passing push belongs to."""
    if not returned:
        return [RAISED]
    return [RETURNED, SLICE] if slice_checked else [RETURNED]


def failure_class(returned: bool, wrong_slice: bool) -> str:
    """The class a failing push is compared within."""
    if not returned:
        return RAISED
    return SLICE if wrong_slice else RETURNED


def merge(stats: dict[str, dict[str, Any]], push: Mapping[str, Scalar]) -> None:
    """Fold one passing push into ``stats``: per feature, the values seen (up to MAX_VALUES) and, for numbers,
    the smallest and largest."""
    for name, value in push.items():
        entry = stats.setdefault(name, {"values": [], "more": False})
        if value not in entry["values"]:
            if len(entry["values"]) < MAX_VALUES:
                entry["values"].append(value)
            else:
                entry["more"] = True
        if isinstance(value, int | float) and not isinstance(value, bool):
            entry["min"] = value if entry.get("min") is None else min(entry["min"], value)
            entry["max"] = value if entry.get("max") is None else max(entry["max"], value)


def merge_stats(into: dict[str, dict[str, Any]], other: Mapping[str, Mapping[str, Any]]) -> None:
    """Fold one test's stats (as :func:`merge` made them) into a run's."""
    for name, entry in other.items():
        for value in entry.get("values") or ():
            merge(into, {name: value})
        target = into.setdefault(name, {"values": [], "more": False})
        target["more"] = bool(target.get("more")) or bool(entry.get("more"))
        for key, pick in (("min", min), ("max", max)):
            if entry.get(key) is not None:
                target[key] = entry[key] if target.get(key) is None else pick(target[key], entry[key])

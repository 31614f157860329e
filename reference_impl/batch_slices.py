"""Which bytes a batch-slice transfer moves (facts §3 "Batch-slice -> memory offset"): a layer's (local tensor,
remote tensor) pairs, the batch slot's offset on each side and its length, as numpy views (hook points)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .transfer_args import PushArgs, PushPlan, SlicePairs

if TYPE_CHECKING:
    import numpy as np

    from .engine import CacheEntry
    from .fabric import Link


class BatchSlices:
    """The slice steps of push_cache."""

    def _tensor_pairs(self, a: PushArgs, src_layer: int, dst_layer: int) -> list[tuple[int, int]]:
        """(local tensor, remote tensor) indices of one layer: K, V, ... in order."""
        tpl = a.tensor_num_per_layer
        s0, d0 = src_layer * tpl, dst_layer * tpl
        return [(s0 + j, d0 + j) for j in range(tpl)]

    def _src_offset(self, a: PushArgs, local: CacheEntry) -> int:
        return a.src_batch_index * local.stride

    def _dst_offset(self, a: PushArgs, remote: CacheEntry) -> int:
        return a.dst_cache_key.batch_index * remote.stride

    def _copy_nbytes(self, a: PushArgs, local: CacheEntry, remote: CacheEntry) -> int:
        """Bytes per tensor: one local batch slot (size == -1)."""
        return local.stride

    def _src_view(self, local: CacheEntry, tensor: int, offset: int, nbytes: int) -> np.ndarray:
        return local.views[tensor][offset:offset + nbytes]

    def _dst_view(self, link: Link, remote: CacheEntry, tensor: int, offset: int, nbytes: int) -> np.ndarray:
        return remote.views[tensor][offset:offset + nbytes]

    def _new_plan(self, a: PushArgs, local: CacheEntry, remote: CacheEntry) -> PushPlan:
        """The pair's offsets, and its slot views sliced once when the view and slice steps are the defaults (a
        subclass that overrides one of them gets its own step called per layer)."""
        plan = PushPlan(local, remote, self._src_offset(a, local), self._dst_offset(a, remote),
                        self._copy_nbytes(a, local, remote))
        cls = type(self)
        if (cls._layer_slices is BatchSlices._layer_slices and cls._src_view is BatchSlices._src_view
                and cls._dst_view is BatchSlices._dst_view):
            plan.src_slots = local.slot_views(plan.src_offset, plan.nbytes)
            plan.dst_slots = remote.slot_views(plan.dst_offset, plan.nbytes)
            plan.default_pairs = cls._tensor_pairs is BatchSlices._tensor_pairs
        return plan

    def _layer_slices(self, a: PushArgs, link: Link, local: CacheEntry, remote: CacheEntry, src_layer: int,
                      dst_layer: int) -> SlicePairs:
        plan = a.plan
        if plan is not None and plan.local is local and plan.remote is remote:
            ss, ds = plan.src_slots, plan.dst_slots
            if ss is not None and ds is not None:  # the default views, sliced once per cache and slot
                if plan.default_pairs:
                    tpl = a.tensor_num_per_layer
                    s0, d0 = src_layer * tpl, dst_layer * tpl
                    if s0 + tpl <= len(ss) and d0 + tpl <= len(ds):
                        return list(zip(ss[s0:s0 + tpl], ds[d0:d0 + tpl], strict=True))
                return [(ss[s], ds[d]) for s, d in self._tensor_pairs(a, src_layer, dst_layer)]
            so, do, n = plan.src_offset, plan.dst_offset, plan.nbytes
        else:
            so, do, n = self._src_offset(a, local), self._dst_offset(a, remote), self._copy_nbytes(a, local, remote)
        src_view, dst_view = self._src_view, self._dst_view
        return [(src_view(local, s, so, n), dst_view(link, remote, d, do, n))
                for s, d in self._tensor_pairs(a, src_layer, dst_layer)]

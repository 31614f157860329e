"""Deliberately broken backends: the reference with one defect each.

Each mutant is a ``CacheManager`` subclass that overrides one hook of the reference's push_cache (see
``reference_impl/README.md``, "Hook points") and a backend built from it, importable as
``mutants.catalog:<name>``. ``targets`` are the clauses (globs) whose tests must reject the defect; ``focus``
are the clauses the fast self-test runs for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from reference_impl.backend import API, ReferenceBackend
from reference_impl.cache_desc import CacheDesc
from reference_impl.cache_keys import CacheKey, CacheKeyByIdAndIndex
from reference_impl.cache_manager import CacheManager
from reference_impl.checks import check_isinstance
from reference_impl.enums import DataType
from reference_impl.status import LLMException, LLMStatusCode


@dataclass(frozen=True)
class Mutant:
    name: str
    defect: str
    targets: tuple[str, ...]
    focus: tuple[str, ...] = ()


MUTANTS: list[Mutant] = []


def mutant(defect: str, targets: tuple[str, ...], focus: tuple[str, ...] | None = None) -> Any:
    """Register a CacheManager subclass as a mutant; the module attribute of that name becomes its backend."""
    def register(cls: type[CacheManager]) -> ReferenceBackend:
        name = cls.__name__
        MUTANTS.append(Mutant(name, defect, targets, focus if focus is not None else targets))
        return ReferenceBackend(name=f"mutant-{name}", cache_manager_cls=cls)   # bound to the class's name
    return register


def _drop(order: tuple[str, ...], step: str) -> tuple[str, ...]:
    return tuple(s for s in order if s != step)


# ---------------------------------------------------------------- data path
@mutant("ignores src_batch_index: always reads source batch 0",
        ("push_cache.data.src_batch_slice", "push_cache.data.postcondition", "push_cache.data.size_default"))
class ignores_src_batch_index(CacheManager):
    def _src_offset(self, a, local):  # type: ignore[no-untyped-def]
        return 0


@mutant("always writes destination batch 0",
        ("push_cache.data.dst_batch_slice", "push_cache.data.postcondition", "push_cache.data.size_default"))
class always_dst_batch_zero(CacheManager):
    def _dst_offset(self, a, remote):  # type: ignore[no-untyped-def]
        return 0


@mutant("drops the last layer of every range with more than one layer",
        ("push_cache.restriction.layer_range.none_means_all", "push_cache.data.postcondition"))
class drops_last_layer(CacheManager):
    def _layer_pairs(self, a):  # type: ignore[no-untyped-def]
        pairs = list(super()._layer_pairs(a))
        return pairs[:-1] if len(pairs) > 1 else pairs


@mutant("moves only the first tensor of each layer",
        ("push_cache.restriction.layer_range.kv_order", "push_cache.restriction.layer_range.none_means_all",
         "push_cache.data.postcondition"))
class first_tensor_only(CacheManager):
    def _tensor_pairs(self, a, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        return super()._tensor_pairs(a, src_layer, dst_layer)[:1]


@mutant("treats layer ranges as tensor indices",
        ("push_cache.restriction.layer_range.indexes_layers", "push_cache.restriction.layer_range.kv_order",
         "push_cache.data.postcondition"))
class layers_as_tensor_indices(CacheManager):
    def _tensor_pairs(self, a, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        return [(src_layer + j, dst_layer + j) for j in range(a.tensor_num_per_layer)]


@mutant("uses src_layer_range for the destination too",
        ("push_cache.restriction.ranges_equal.values", "push_cache.data.postcondition"))
class src_range_for_dst(CacheManager):
    def _layer_pairs(self, a):  # type: ignore[no-untyped-def]
        return [(s, s) for s in a.src_layer_range]


@mutant("moves whole tensors instead of the batch entry",
        ("push_cache.data.*", "push_cache.safety.guard_bytes", "push_cache.signature.*",
         "push_cache.restriction.*"),
        focus=("push_cache.data.src_batch_slice", "push_cache.data.dst_batch_slice"))
class whole_tensors(CacheManager):
    def _src_offset(self, a, local):  # type: ignore[no-untyped-def]
        return 0

    def _dst_offset(self, a, remote):  # type: ignore[no-untyped-def]
        return 0

    def _copy_nbytes(self, a, local, remote):  # type: ignore[no-untyped-def]
        return min(local.tensor_nbytes, remote.tensor_nbytes)


@mutant("writes one byte past the destination batch entry",
        ("push_cache.safety.guard_bytes", "push_cache.data.nothing_else_changes", "push_cache.data.postcondition"))
class one_byte_past(CacheManager):
    def _layer_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        pairs = super()._layer_slices(a, link, local, remote, src_layer, dst_layer)
        end = self._dst_offset(a, remote) + self._copy_nbytes(a, local, remote)
        for _, d in self._tensor_pairs(a, src_layer, dst_layer):
            extra = link.server.memory.view(remote.tensor_addrs[d] + end, 1)
            pairs.append((np.array([0x5A], dtype=np.uint8), extra))
        return pairs


@mutant("modifies the source while pushing",
        ("push_cache.data.source_unchanged",))
class modifies_source(CacheManager):
    def _copy_layer(self, pairs):  # type: ignore[no-untyped-def]
        super()._copy_layer(pairs)
        for src, _ in pairs:
            if src.size:
                src[0] ^= 0xFF


@mutant("skips the stride check and copies the local entry size into a smaller destination entry",
        ("push_cache.safety.source_larger_than_destination",))
class no_stride_check(CacheManager):
    def _check_strides(self, a, local, remote):  # type: ignore[no-untyped-def]
        return None

    def _layer_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        so, n = self._src_offset(a, local), self._copy_nbytes(a, local, remote)
        do = self._dst_offset(a, remote)
        pairs = []
        for s, d in self._tensor_pairs(a, src_layer, dst_layer):
            dst = link.server.memory.view(remote.tensor_addrs[d] + do, n)
            pairs.append((local.views[s][so:so + n], dst))
        return pairs


@mutant("writes into a deallocated remote cache",
        ("push_cache.safety.deallocated_destination*",))
class writes_into_deallocated(CacheManager):
    def _lookup_remote_cache(self, a, server):  # type: ignore[no-untyped-def]
        return server.lookup(a.dst_cache_key.cache_id, include_dead=True)

    def _dst_alive(self, remote):  # type: ignore[no-untyped-def]
        return True


# ---------------------------------------------------------------- argument checks
@mutant("accepts a layer range step of 2",
        ("push_cache.restriction.layer_range.step*",))
class accepts_step_two(CacheManager):
    def _check_src_layer_range(self, a):  # type: ignore[no-untyped-def]
        if a.src_layer_range is not None and a.src_layer_range.step == 2:
            return
        super()._check_src_layer_range(a)

    def _check_dst_layer_range(self, a):  # type: ignore[no-untyped-def]
        if a.dst_layer_range is not None and a.dst_layer_range.step == 2:
            return
        super()._check_dst_layer_range(a)


@mutant("raises ValueError where the documentation says LLMException (abnormal layer range)",
        ("push_cache.restriction.layer_range.*",))
class value_error_for_bad_range(CacheManager):
    def _check_src_layer_range(self, a):  # type: ignore[no-untyped-def]
        try:
            super()._check_src_layer_range(a)
        except LLMException as exc:
            raise ValueError(str(exc)) from None

    def _check_dst_layer_range(self, a):  # type: ignore[no-untyped-def]
        try:
            super()._check_dst_layer_range(a)
        except LLMException as exc:
            raise ValueError(str(exc)) from None


@mutant("accepts a size other than -1",
        ("push_cache.restriction.size.only_default*",))
class accepts_any_size(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_size_value")


@mutant("accepts a CacheKey as the destination key",
        ("push_cache.restriction.remote_accessible.key_type*",))
class accepts_cache_key(CacheManager):
    def _check_dst_cache_key_type(self, a):  # type: ignore[no-untyped-def]
        check_isinstance("dst_cache_key", a.dst_cache_key, [CacheKeyByIdAndIndex, CacheKey], allow_none=False)


@mutant("skips the enable_remote_cache_accessible check",
        ("push_cache.restriction.remote_accessible.required", "push_cache.order.remote_accessible_first"))
class skips_remote_accessible_check(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_push_enabled")


@mutant("checks tensor_num_per_layer's type after the layer ranges (two checks swapped)",
        ("push_cache.order.python_checks",))
class swapped_check_order(CacheManager):
    push_check_order = tuple(
        {"_check_tnpl_type": "_check_src_layer_range", "_check_src_layer_range": "_check_tnpl_type"}.get(s, s)
        for s in CacheManager.push_check_order)


@mutant("pushes nothing when tensor_num_per_layer exceeds the tensor count (the vendor's quirk)",
        ("push_cache.restriction.tensor_num_per_layer.range",))
class no_tnpl_upper_bound(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_tnpl_upper_bound")


@mutant("does not check that tensor_num_per_layer divides the tensor count",
        ("push_cache.restriction.tensor_num_per_layer.divisor*",))
class no_divisor_check(CacheManager):
    def _check_tensor_divisible(self, a, local):  # type: ignore[no-untyped-def]
        return None


@mutant("does not check the destination batch index against the remote batch size",
        ("push_cache.remote.dst_batch_out_of_range*",))
class no_dst_batch_check(CacheManager):
    def _check_dst_batch(self, a, remote):  # type: ignore[no-untyped-def]
        return None


# ---------------------------------------------------------------- links, status codes, timeouts
@mutant("returns LLM_FAILED instead of LLM_NOT_YET_LINK for a missing link",
        ("push_cache.remote.not_linked.status", "push_cache.order.native_checks"))
class wrong_status_missing_link(CacheManager):
    def _resolve_link(self, a):  # type: ignore[no-untyped-def]
        try:
            return super()._resolve_link(a)
        except LLMException as exc:
            raise LLMException(str(exc), status_code=LLMStatusCode.LLM_FAILED) from None


@mutant("never times out: waits out any transfer delay (at most 3 s) and then copies",
        ("push_cache.timeout.*", "push_cache.config.sync_kv_timeout.*"))
class never_times_out(CacheManager):
    def _await_transfer(self, a, link, seconds):  # type: ignore[no-untyped-def]
        self.engine.stop_event.wait(min(seconds, 3.0))


@mutant("reports a transfer timeout as LLM_FAILED",
        ("push_cache.timeout.exceeded.status",))
class wrong_timeout_status(CacheManager):
    def _await_transfer(self, a, link, seconds):  # type: ignore[no-untyped-def]
        try:
            super()._await_transfer(a, link, seconds)
        except LLMException as exc:
            raise LLMException(str(exc), status_code=LLMStatusCode.LLM_FAILED) from None


# ---------------------------------------------------------------- lenient argument types and domains
@mutant("accepts a float src_batch_index (int() of it)",
        ("push_cache.param.src_batch_index.type*",))
class accepts_float_batch_index(CacheManager):
    def _check_src_batch_index(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.src_batch_index, float):
            a.src_batch_index = int(a.src_batch_index)
        super()._check_src_batch_index(a)


@mutant("reads a negative src_batch_index Python-style, from the end of the batch",
        ("push_cache.param.src_batch_index.domain*",))
class negative_batch_from_end(CacheManager):
    def _check_src_batch_index(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.src_batch_index, int) and -(2 ** 32) < a.src_batch_index < 0:
            a.src_batch_index = a.src_batch_index % a.src_cache.cache_desc.shape[0]
        super()._check_src_batch_index(a)


@mutant("wraps a src_batch_index beyond the batch around (modulo the batch size)",
        ("push_cache.param.src_batch_index.out_of_batch*",))
class wraps_src_batch_index(CacheManager):
    def _check_src_batch(self, a, local):  # type: ignore[no-untyped-def]
        return None

    def _src_offset(self, a, local):  # type: ignore[no-untyped-def]
        return (a.src_batch_index % local.batch_size) * local.stride


@mutant("does not check the type of dst_cache_key",
        ("push_cache.param.dst_cache_key.type*",))
class no_key_type_check(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_dst_cache_key_type")


@mutant("does not check the type of src_cache",
        ("push_cache.param.src_cache.type*",))
class no_src_cache_type_check(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_src_cache_type")


@mutant("turns a list or tuple layer range into a range",
        ("push_cache.param.layer_range.type*",))
class list_as_layer_range(CacheManager):
    def _check_src_layer_range(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.src_layer_range, list | tuple) and a.src_layer_range:
            a.src_layer_range = range(min(a.src_layer_range), max(a.src_layer_range) + 1)
        super()._check_src_layer_range(a)

    def _check_dst_layer_range(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.dst_layer_range, list | tuple) and a.dst_layer_range:
            a.dst_layer_range = range(min(a.dst_layer_range), max(a.dst_layer_range) + 1)
        super()._check_dst_layer_range(a)


@mutant("accepts a float tensor_num_per_layer (int() of it)",
        ("push_cache.param.tensor_num_per_layer.type*",))
class accepts_float_tnpl(CacheManager):
    def _check_tnpl_type(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.tensor_num_per_layer, float):
            a.tensor_num_per_layer = int(a.tensor_num_per_layer)
        super()._check_tnpl_type(a)


@mutant("takes the absolute value of a negative tensor_num_per_layer",
        ("push_cache.param.tensor_num_per_layer.domain*",))
class abs_tnpl(CacheManager):
    def _check_tnpl_type(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.tensor_num_per_layer, int) and a.tensor_num_per_layer < 0:
            a.tensor_num_per_layer = -a.tensor_num_per_layer
        super()._check_tnpl_type(a)


@mutant("does not check the type of size (so -1.0 passes as -1)",
        ("push_cache.param.size.type*",))
class no_size_type_check(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_size_type")


@mutant("checks size only after the layers were pushed",
        ("push_cache.safety.failed_push_writes_nothing",))
class late_size_check(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_size_value")

    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # type: ignore[no-untyped-def]
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size,
                           tensor_num_per_layer)
        self._check_size_value(_Args(size))


@dataclass
class _Args:
    size: Any


# ---------------------------------------------------------------- the remote side
@mutant("links on demand: pushes to any cluster on the fabric, linked or not",
        ("push_cache.remote.not_linked", "push_cache.remote.not_linked.status", "push_cache.remote.unlinked_after_link",
         "push_cache.order.native_checks"))
class links_on_demand(CacheManager):
    def _resolve_link(self, a):  # type: ignore[no-untyped-def]
        fabric = self.engine.fabric
        if fabric.usable_link(self.engine, a.dst_cache_key.cluster_id) is None:
            fabric.link(self.engine, a.dst_cache_key.cluster_id)
        return super()._resolve_link(a)


@mutant("falls back to the remote's first cache when the cache id is unknown",
        ("push_cache.remote.unknown_cache*", "push_cache.order.native_checks"))
class unknown_cache_fallback(CacheManager):
    def _lookup_remote_cache(self, a, server):  # type: ignore[no-untyped-def]
        found = super()._lookup_remote_cache(a, server)
        if found is None:
            for cache_id in range(1, 64):
                found = server.lookup(cache_id)
                if found is not None:
                    break
        return found


@mutant("does not check the destination layer against the remote cache",
        ("push_cache.remote.dst_layer_out_of_range*",))
class no_dst_layer_check(CacheManager):
    def _check_dst_layer(self, a, remote, dst_layer):  # type: ignore[no-untyped-def]
        return None


@mutant("writes into remote caches that are not remote-accessible",
        ("push_cache.remote.not_remote_accessible*",))
class ignores_remote_accessible(CacheManager):
    def _resolve_remote_cache(self, a, link):  # type: ignore[no-untyped-def]
        remote = self._lookup_remote_cache(a, link.server)
        if remote is None:
            return super()._resolve_remote_cache(a, link)
        return remote


# ---------------------------------------------------------------- the types
@mutant("allocates bf16 caches with 4-byte elements",
        ("push_cache.types.data_type.element_size",))
class bf16_as_four_bytes(CacheManager):
    def allocate_cache(self, cache_desc, cache_keys=()):  # type: ignore[no-untyped-def]
        if isinstance(cache_desc, CacheDesc) and cache_desc.data_type is DataType.DT_BF16:
            cache_desc = CacheDesc(cache_desc.num_tensors, list(cache_desc.shape), DataType.DT_FLOAT,
                                   cache_desc.placement)
        return super().allocate_cache(cache_desc, cache_keys)


@mutant("raises LLMException without a status code for a bad layer range",
        ("push_cache.types.llm_exception.status_code", "push_cache.restriction.layer_range.*.status"))
class exception_without_status(CacheManager):
    def _check_src_layer_range(self, a):  # type: ignore[no-untyped-def]
        try:
            super()._check_src_layer_range(a)
        except LLMException as exc:
            bare = LLMException(str(exc))
            bare._status_code = None  # type: ignore[attr-defined]
            raise bare from None


class _KeyAlwaysBatchZero(CacheKeyByIdAndIndex):
    """A CacheKeyByIdAndIndex whose batch_index property ignores the constructor's value."""

    @property
    def batch_index(self) -> int:
        return 0


class _KeyFieldBackend(ReferenceBackend):
    def open_cluster(self, node_specs):  # type: ignore[no-untyped-def]
        cluster = super().open_cluster(node_specs)
        api = type(API)(**{**vars(API), "CacheKeyByIdAndIndex": _KeyAlwaysBatchZero})
        for node in cluster.nodes.values():
            node.api = api
        return cluster


MUTANTS.append(Mutant("key_batch_index_ignored", "CacheKeyByIdAndIndex.batch_index always reads 0",
                      ("push_cache.types.cache_key_by_id_and_index.fields", "push_cache.data.dst_batch_slice")))
key_batch_index_ignored = _KeyFieldBackend(name="mutant-key_batch_index_ignored")

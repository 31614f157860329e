"""Deliberately broken backends: the reference with one defect each.

Each mutant is a ``CacheManager`` subclass that overrides one hook of the reference's push_cache (see
``reference_impl/README.md``, "Hook points") and a backend built from it, importable as
``mutants.catalog:<name>``. ``targets`` are the exact IDs of the clauses whose tests must reject the defect, all
of the level named by ``breaks``: a ``must`` mutant breaks blocking clauses (expected verdict NOT CERTIFIED), a
``should`` mutant (a "compatibility" mutant) breaks only vendor-behaviour clauses (check order, status codes) and
is expected to be reported incompatible. ``focus`` are the clauses the fast self-test runs for it.
"""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from reference_impl.backend import API, ReferenceBackend
from reference_impl.cache_desc import CacheDesc
from reference_impl.cache_keys import BlocksCacheKey, CacheKey, CacheKeyByIdAndIndex
from reference_impl.cache_manager import CacheManager
from reference_impl.checks import check_isinstance
from reference_impl.enums import DataType, Placement
from reference_impl.memory import AddressError
from reference_impl.push_blocks import num_blocks
from reference_impl.status import LLMException, LLMStatusCode, log, raise_if_false


@dataclass(frozen=True)
class Mutant:
    name: str
    defect: str
    targets: tuple[str, ...]
    focus: tuple[str, ...] = ()
    breaks: str = "must"   # "must" | "should": the level of every target, and so the expected verdict
    by: str = "clauses"    # "histories": only the stateful suite may catch it (its clause tests must not)
    #: the domain-coverage keys (report.json ``run.domain_coverage``) of the condition the defect lives in, all
    #: needed: the kill matrix says whether the run reached them (mutants/reach.py)
    reaches: tuple[str, ...] = ()


MUTANTS: list[Mutant] = []


class _ReleaseBackend(ReferenceBackend):
    """The reference backend declaring other spec releases (``capabilities()["spec_versions"]``): certify selects
    the newest of them by default, so a mutant of an older release is certified against that release."""

    def __init__(self, *, spec_versions: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec_versions = list(spec_versions)

    def capabilities(self) -> dict[str, Any]:
        return {**super().capabilities(), "spec_versions": list(self.spec_versions)}


def mutant(defect: str, targets: tuple[str, ...], focus: tuple[str, ...] | None = None,
           breaks: str = "must", spec_versions: tuple[str, ...] | None = None, by: str = "clauses",
           reaches: tuple[str, ...] = ()) -> Any:
    """Register a CacheManager subclass as a mutant; the module attribute of that name becomes its backend.
    ``spec_versions``: the releases the mutant's backend declares (default: the reference's); ``by``: which
    part of the suite is to catch it (``histories``: the stateful suite alone); ``reaches``: the partitions and
    pairs its condition needs."""
    def register(cls: type[CacheManager]) -> ReferenceBackend:
        name = cls.__name__
        MUTANTS.append(Mutant(name, defect, targets, focus if focus is not None else targets, breaks, by, reaches))
        if spec_versions is not None:
            return _ReleaseBackend(name=f"mutant-{name}", cache_manager_cls=cls, spec_versions=spec_versions)
        return ReferenceBackend(name=f"mutant-{name}", cache_manager_cls=cls)   # bound to the class's name
    return register


def _drop(order: tuple[str, ...], step: str) -> tuple[str, ...]:
    return tuple(s for s in order if s != step)


# ---------------------------------------------------------------- data path
@mutant("ignores src_batch_index: always reads source batch 0",
        ("push_cache.data.src_batch_slice", "push_cache.data.postcondition", "push_cache.data.size_default"),
        reaches=("src_batch_index=maximum",))
class ignores_src_batch_index(CacheManager):
    def _src_offset(self, a, local):  # type: ignore[no-untyped-def]
        return 0


@mutant("always writes destination batch 0",
        ("push_cache.data.dst_batch_slice", "push_cache.data.postcondition", "push_cache.data.size_default"),
        reaches=("dst_batch_index=maximum",))
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


@mutant("accepts different src/dst layer ranges and uses src_layer_range for the destination too",
        ("push_cache.restriction.ranges_equal.values", "push_cache.data.postcondition"))
class src_range_for_dst(CacheManager):
    # a reference that refuses different ranges would make this mutant equivalent to it: accept them again
    push_check_order = _drop(CacheManager.push_check_order, "_check_range_values")

    def _layer_pairs(self, a):  # type: ignore[no-untyped-def]
        return [(s, s) for s in a.src_layer_range]


@mutant("moves whole tensors instead of the batch entry",
        ("push_cache.data.postcondition", "push_cache.data.src_batch_slice", "push_cache.data.dst_batch_slice",
         "push_cache.data.size_default", "push_cache.data.nothing_else_changes", "push_cache.data.dtypes",
         "push_cache.data.placements", "push_cache.safety.guard_bytes",
         "push_cache.restriction.tensor_num_per_layer.valid", "push_cache.restriction.host_to_device.contiguous_ok"),
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
        ("push_cache.safety.deallocated_destination",))
class writes_into_deallocated(CacheManager):
    def _lookup_remote_cache(self, a, server):  # type: ignore[no-untyped-def]
        return server.lookup(a.dst_cache_key.cache_id, include_dead=True)

    def _dst_alive(self, remote):  # type: ignore[no-untyped-def]
        return True


# ---------------------------------------------------------------- argument checks
@mutant("accepts a layer range step of 2",
        ("push_cache.restriction.layer_range.step",))
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
        ("push_cache.restriction.layer_range.step", "push_cache.restriction.layer_range.bounds"))
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


@mutant("accepts a size other than -1 and pushes one entry (inside the documentation's may envelope; the vendor "
        "refuses it)",
        ("push_cache.restriction.size.only_default.status", "push_cache.restriction.size.entry_size.status"),
        breaks="should", reaches=("parameter=size:given",))
class accepts_any_size(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_size_value")


@mutant("accepts a CacheKey as the destination key",
        ("push_cache.restriction.remote_accessible.key_type",))
class accepts_cache_key(CacheManager):
    def _check_dst_cache_key_type(self, a):  # type: ignore[no-untyped-def]
        check_isinstance("dst_cache_key", a.dst_cache_key, [CacheKeyByIdAndIndex, CacheKey], allow_none=False)


@mutant("refuses a CacheKey destination with LLMException(LLM_PARAM_INVALID), not the TypeError/ValueError of a "
        "wrong data type",
        ("push_cache.restriction.remote_accessible.key_type",))
class llm_exception_for_cache_key(CacheManager):
    def _check_dst_cache_key_type(self, a):  # type: ignore[no-untyped-def]
        raise_if_false(not isinstance(a.dst_cache_key, CacheKey), "only CacheKeyByIdAndIndex is supported")
        super()._check_dst_cache_key_type(a)


@mutant("skips the enable_remote_cache_accessible check",
        ("push_cache.restriction.remote_accessible.required",), breaks="should")
class skips_remote_accessible_check(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_push_enabled")


@mutant("checks tensor_num_per_layer's type after the layer ranges (two checks swapped)",
        ("push_cache.order.python_checks",), breaks="should")
class swapped_check_order(CacheManager):
    push_check_order = tuple(
        {"_check_tnpl_type": "_check_src_layer_range", "_check_src_layer_range": "_check_tnpl_type"}.get(s, s)
        for s in CacheManager.push_check_order)


@mutant("pushes nothing when tensor_num_per_layer exceeds the tensor count (the vendor's quirk)",
        ("push_cache.restriction.tensor_num_per_layer.range",))
class no_tnpl_upper_bound(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_tnpl_upper_bound")


@mutant("does not check that tensor_num_per_layer divides the tensor count",
        ("push_cache.restriction.tensor_num_per_layer.divisor",))
class no_divisor_check(CacheManager):
    def _check_tensor_divisible(self, a, local):  # type: ignore[no-untyped-def]
        return None


@mutant("does not check the destination batch index against the remote batch size",
        ("push_cache.remote.dst_batch_out_of_range",), reaches=("dst_batch_index=past",))
class no_dst_batch_check(CacheManager):
    def _check_dst_batch(self, a, remote):  # type: ignore[no-untyped-def]
        return None


# ---------------------------------------------------------------- links, status codes, timeouts
@mutant("returns LLM_FAILED instead of LLM_NOT_YET_LINK for a missing link",
        ("push_cache.remote.not_linked.status", "push_cache.order.native_checks"), breaks="should")
class wrong_status_missing_link(CacheManager):
    def _resolve_link(self, a):  # type: ignore[no-untyped-def]
        try:
            return super()._resolve_link(a)
        except LLMException as exc:
            raise LLMException(str(exc), status_code=LLMStatusCode.LLM_FAILED) from None


@mutant("never times out: waits out any transfer delay (at most 3 s) and then copies",
        ("push_cache.timeout.exceeded", "push_cache.timeout.dropped_link", "push_cache.config.sync_kv_timeout.unit_ms",
         "push_cache.config.sync_kv_timeout.default"))
class never_times_out(CacheManager):
    def _await_transfer(self, a, link, seconds):  # type: ignore[no-untyped-def]
        self.engine.stop_event.wait(min(seconds, 3.0))


@mutant("reports a transfer timeout as LLM_FAILED",
        ("push_cache.timeout.exceeded.status",), breaks="should")
class wrong_timeout_status(CacheManager):
    def _await_transfer(self, a, link, seconds):  # type: ignore[no-untyped-def]
        try:
            super()._await_transfer(a, link, seconds)
        except LLMException as exc:
            raise LLMException(str(exc), status_code=LLMStatusCode.LLM_FAILED) from None


# ---------------------------------------------------------------- lenient argument types and domains
@mutant("accepts a float src_batch_index (int() of it)",
        ("push_cache.param.src_batch_index.type",))
class accepts_float_batch_index(CacheManager):
    def _check_src_batch_index(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.src_batch_index, float):
            a.src_batch_index = int(a.src_batch_index)
        super()._check_src_batch_index(a)


@mutant("reads a negative src_batch_index Python-style, from the end of the batch",
        ("push_cache.param.src_batch_index.domain",))
class negative_batch_from_end(CacheManager):
    def _check_src_batch_index(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.src_batch_index, int) and -(2 ** 32) < a.src_batch_index < 0:
            a.src_batch_index = a.src_batch_index % a.src_cache.cache_desc.shape[0]
        super()._check_src_batch_index(a)


@mutant("wraps a src_batch_index beyond the batch around (modulo the batch size)",
        ("push_cache.param.src_batch_index.out_of_batch",), reaches=("src_batch_index=past",))
class wraps_src_batch_index(CacheManager):
    def _check_src_batch(self, a, local):  # type: ignore[no-untyped-def]
        return None

    def _src_offset(self, a, local):  # type: ignore[no-untyped-def]
        return (a.src_batch_index % local.batch_size) * local.stride


@mutant("does not check the type of dst_cache_key",
        ("push_cache.param.dst_cache_key.type",))
class no_key_type_check(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_dst_cache_key_type")


@mutant("does not check the type of src_cache",
        ("push_cache.param.src_cache.type",))
class no_src_cache_type_check(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_src_cache_type")


@mutant("turns a list or tuple layer range into a range",
        ("push_cache.param.layer_range.type",))
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
        ("push_cache.param.tensor_num_per_layer.type",))
class accepts_float_tnpl(CacheManager):
    def _check_tnpl_type(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.tensor_num_per_layer, float):
            a.tensor_num_per_layer = int(a.tensor_num_per_layer)
        super()._check_tnpl_type(a)


@mutant("takes the absolute value of a negative tensor_num_per_layer",
        ("push_cache.param.tensor_num_per_layer.domain",))
class abs_tnpl(CacheManager):
    def _check_tnpl_type(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.tensor_num_per_layer, int) and a.tensor_num_per_layer < 0:
            a.tensor_num_per_layer = -a.tensor_num_per_layer
        super()._check_tnpl_type(a)


@mutant("does not check the type of size (so -1.0 passes as -1)",
        ("push_cache.param.size.type",))
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
        ("push_cache.remote.not_linked", "push_cache.remote.unlinked_after_link"))
class links_on_demand(CacheManager):
    def _resolve_link(self, a):  # type: ignore[no-untyped-def]
        fabric = self.engine.fabric
        if fabric.usable_link(self.engine, a.dst_cache_key.cluster_id) is None:
            fabric.link(self.engine, a.dst_cache_key.cluster_id)
        return super()._resolve_link(a)


@mutant("falls back to the remote's first cache when the cache id is unknown",
        ("push_cache.remote.unknown_cache",))
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
        ("push_cache.remote.dst_layer_out_of_range",))
class no_dst_layer_check(CacheManager):
    def _check_dst_layer(self, a, remote, dst_layer):  # type: ignore[no-untyped-def]
        return None


@mutant("writes into remote caches that are not remote-accessible",
        ("push_cache.remote.not_remote_accessible",))
class ignores_remote_accessible(CacheManager):
    def _resolve_remote_cache(self, a, link):  # type: ignore[no-untyped-def]
        remote = self._lookup_remote_cache(a, link.server)
        if remote is None:
            return super()._resolve_remote_cache(a, link)
        return remote


# ---------------------------------------------------------------- the types
@mutant("allocates bf16 caches with 4-byte elements",
        ("push_cache.types.data_type.element_size",), breaks="should")
class bf16_as_four_bytes(CacheManager):
    def allocate_cache(self, cache_desc, cache_keys=()):  # type: ignore[no-untyped-def]
        if isinstance(cache_desc, CacheDesc) and cache_desc.data_type is DataType.DT_BF16:
            cache_desc = CacheDesc(cache_desc.num_tensors, list(cache_desc.shape), DataType.DT_FLOAT,
                                   cache_desc.placement)
        return super().allocate_cache(cache_desc, cache_keys)


@mutant("raises LLMException without a status code for a bad layer range",
        ("push_cache.types.llm_exception.status_code",), breaks="should")
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
                      ("push_cache.data.dst_batch_slice",), reaches=("dst_batch_index=maximum",)))
key_batch_index_ignored = _KeyFieldBackend(name="mutant-key_batch_index_ignored")


class _FeatureOffAfterFirstCluster(CacheManager):
    feature_on = True

    def push_cache(self, *args, **kwargs):  # type: ignore[no-untyped-def,override]
        if not self.feature_on:
            raise LLMException("push_cache is not enabled on this product",
                               status_code=LLMStatusCode.LLM_FEATURE_NOT_ENABLED)
        super().push_cache(*args, **kwargs)


class _OnA3Backend(ReferenceBackend):
    """Declares an Atlas A3 product, and enables push_cache only in the first cluster it opens (the smoke check's):
    a feature flag that later clusters do not get."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cache_manager_cls=_FeatureOffAfterFirstCluster, **kwargs)
        self.opened = 0

    def capabilities(self) -> dict[str, Any]:
        return {**super().capabilities(), "product": "Atlas A3 inference products"}

    def open_cluster(self, node_specs):  # type: ignore[no-untyped-def]
        cluster = super().open_cluster(node_specs)
        self.opened += 1
        for node in cluster.nodes.values():
            node.cache_manager.feature_on = self.opened == 1
        return cluster


MUTANTS.append(Mutant("refuses_on_supported_product",
                      "on the Atlas A3 product it declares, refuses push_cache (LLM_FEATURE_NOT_ENABLED) after the "
                      "first cluster", ("push_cache.applicability.products",),
                      focus=("push_cache.applicability.products",)))
refuses_on_supported_product = _OnA3Backend(name="mutant-refuses_on_supported_product")


# ---------------------------------------------------------------- defects a weak suite lets through (issue 10)
def _valid_range(r: Any) -> bool:
    return isinstance(r, range) and r.step == 1 and 0 <= r.start < r.stop


def _lenient_src_range(a: Any) -> None:
    """Replace a bad src_layer_range by the destination range when that one is valid (None: both default)."""
    if a.dst_layer_range is None or _valid_range(a.dst_layer_range):
        a.src_layer_range = a.dst_layer_range


@mutant("accepts a src_layer_range whose step is not 1 while dst_layer_range is valid (uses the dst range)",
        ("push_cache.restriction.layer_range.step",))
class lax_src_range_step(CacheManager):
    def _check_src_layer_range(self, a):  # type: ignore[no-untyped-def]
        r = a.src_layer_range
        if isinstance(r, range) and r.step != 1:
            _lenient_src_range(a)
        super()._check_src_layer_range(a)


@mutant("accepts an empty or negative src_layer_range while dst_layer_range is valid (uses the dst range)",
        ("push_cache.restriction.layer_range.bounds",))
class lax_src_range_bounds(CacheManager):
    def _check_src_layer_range(self, a):  # type: ignore[no-untyped-def]
        r = a.src_layer_range
        if isinstance(r, range) and r.step == 1 and not 0 <= r.start < r.stop:
            _lenient_src_range(a)
        super()._check_src_layer_range(a)


@mutant("reads a source layer past the end modulo the layer count instead of refusing it (dst check kept)",
        ("push_cache.restriction.layer_range.past_end",))
class lax_src_range_past_end(CacheManager):
    def _check_src_layer(self, a, local, src_layer):  # type: ignore[no-untyped-def]
        return None

    def _layer_pairs(self, a):  # type: ignore[no-untyped-def]
        layers = a.src_cache.cache_desc.num_tensors // a.tensor_num_per_layer
        return [(s % layers, d) for s, d in super()._layer_pairs(a)]


class _Deferred(threading.local):
    errors: list[LLMException] | None = None


@mutant("copies the layer first and only then refuses a not remote-accessible cache, a source batch index "
        "or a destination batch index out of range (LLM_PARAM_INVALID after the write)",
        ("push_cache.remote.not_remote_accessible", "push_cache.param.src_batch_index.out_of_batch",
         "push_cache.remote.dst_batch_out_of_range"),
        reaches=("src_batch_index=past", "dst_batch_index=past"))
class writes_then_refuses(CacheManager):
    _deferred = _Deferred()   # per thread: concurrent pushes from one node must not share the pending error

    def _push_layer(self, a, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        self._deferred.errors = []
        super()._push_layer(a, src_layer, dst_layer)
        if self._deferred.errors:
            raise self._deferred.errors[0]

    def _later(self, check, *args):  # type: ignore[no-untyped-def]
        try:
            check(*args)
        except LLMException as exc:
            self._deferred.errors.append(exc)  # type: ignore[union-attr]

    def _check_local_remote_accessible(self, a, local):  # type: ignore[no-untyped-def]
        self._later(super()._check_local_remote_accessible, a, local)

    def _resolve_remote_cache(self, a, link):  # type: ignore[no-untyped-def]
        remote = self._lookup_remote_cache(a, link.server)
        if remote is not None and not remote.remote_accessible and self._visible_over(link, remote):
            self._later(super()._resolve_remote_cache, a, link)   # its only refusal left is "not accessible"
            return remote
        return super()._resolve_remote_cache(a, link)

    def _check_dst_batch(self, a, remote):  # type: ignore[no-untyped-def]
        self._later(super()._check_dst_batch, a, remote)

    def _check_src_batch(self, a, local):  # type: ignore[no-untyped-def]
        self._later(super()._check_src_batch, a, local)

    # out-of-range batch indices are clamped to the last entry, so the early copy stays inside the tensors
    def _src_offset(self, a, local):  # type: ignore[no-untyped-def]
        return min(a.src_batch_index, local.batch_size - 1) * local.stride

    def _dst_offset(self, a, remote):  # type: ignore[no-untyped-def]
        return min(a.dst_cache_key.batch_index, remote.batch_size - 1) * remote.stride


@mutant("checks the destination batch index against the local (source) batch size, not the remote one",
        ("push_cache.remote.dst_batch_out_of_range",), reaches=("dst_batch_index=past",))
class dst_batch_checked_against_local(CacheManager):
    def _check_dst_batch(self, a, remote):  # type: ignore[no-untyped-def]
        local_batch = a.src_cache.cache_desc.shape[0]
        if not a.dst_cache_key.batch_index < local_batch:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "batch index out of range")

    def _dst_view(self, link, remote, tensor, offset, nbytes):  # type: ignore[no-untyped-def]
        # a native copy to base + offset: past the remote tensor it writes whatever memory follows it; where no
        # node memory follows, the bytes go nowhere (the call still succeeds)
        try:
            return link.server.memory.view(remote.tensor_addrs[tensor] + offset, nbytes)
        except AddressError:
            return np.empty(nbytes, dtype=np.uint8)


_EIGHT_BYTE = {DataType.DT_INT64, DataType.DT_UINT64, DataType.DT_DOUBLE}


@mutant("reads the source batch entry at half its offset for 8-byte element types (src_batch_index > 0)",
        ("push_cache.data.dtypes",), reaches=("data_type=DT_INT64", "src_batch_index=maximum"))
class half_src_offset_8_byte(CacheManager):
    def _src_offset(self, a, local):  # type: ignore[no-untyped-def]
        if a.src_cache.cache_desc.data_type in _EIGHT_BYTE:
            return a.src_batch_index * local.stride // 2
        return super()._src_offset(a, local)


@mutant("waits out the whole injected delay (at most 3 s), writes the layer late and one byte out of place, then "
        "raises LLM_TIMEOUT", ("push_cache.timeout.exceeded",))
class late_misplaced_write_then_timeout(CacheManager):
    def _transfer_layer(self, a, link, remote, pairs):  # type: ignore[no-untyped-def]
        seconds = self._transfer_seconds(a, link, sum(src.size for src, _ in pairs))
        if self.engine.sync_timeout_s < seconds < float("inf"):   # a dropped link (inf) keeps the reference path
            self.engine.stop_event.wait(min(seconds, 3.0))        # bounded so certify of the mutant stays short
            with remote.lock:
                self._copy_layer([(np.roll(src, 1), dst) for src, dst in pairs])
            raise self._native_error(a, LLMStatusCode.LLM_TIMEOUT, "transfer did not complete in time")
        super()._transfer_layer(a, link, remote, pairs)


@mutant("counts DT_INT16/DT_UINT16 as 4-byte elements: copies twice the batch entry (clamped to the tensors)",
        ("push_cache.data.dtypes",), reaches=("data_type=DT_INT16",))
class int16_as_four_bytes(CacheManager):
    def _copy_nbytes(self, a, local, remote):  # type: ignore[no-untyped-def]
        if a.src_cache.cache_desc.data_type not in (DataType.DT_INT16, DataType.DT_UINT16):
            return super()._copy_nbytes(a, local, remote)
        # clamped so that numpy gets equal, in-bounds slices on both sides: the overrun lands in the next entry
        return min(2 * local.stride, local.tensor_nbytes - self._src_offset(a, local),
                   remote.tensor_nbytes - self._dst_offset(a, remote))


@mutant("wraps the destination batch index above 4 (writes entry batch_index % 4)",
        ("push_cache.data.postcondition", "push_cache.data.dst_batch_slice"))
class dst_batch_wraps_at_4(CacheManager):
    def _dst_offset(self, a, remote):  # type: ignore[no-untyped-def]
        return a.dst_cache_key.batch_index % 4 * remote.stride


@mutant("wraps the destination layer above 16 (writes layer dst_layer % 16)",
        ("push_cache.data.postcondition",))
class dst_layer_wraps_at_16(CacheManager):
    def _tensor_pairs(self, a, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        return super()._tensor_pairs(a, src_layer, dst_layer % 16)


def _rank4_stride(entry: Any) -> int:
    """The per-batch stride, wrong for rank >= 4: shape[1] elements instead of prod(shape[1:])."""
    inner = int(np.prod(entry.shape[2:])) if len(entry.shape) >= 4 else 1
    return int(entry.stride) // max(inner, 1)


@mutant("computes the per-batch stride from shape[1] alone for rank >= 4 shapes",
        ("push_cache.data.postcondition",))
class rank4_stride_from_dim1(CacheManager):
    def _src_offset(self, a, local):  # type: ignore[no-untyped-def]
        return a.src_batch_index * _rank4_stride(local)

    def _dst_offset(self, a, remote):  # type: ignore[no-untyped-def]
        return a.dst_cache_key.batch_index * _rank4_stride(remote)

    def _copy_nbytes(self, a, local, remote):  # type: ignore[no-untyped-def]
        return _rank4_stride(local)


# ---------------------------------------------------------------- the signature
@mutant("swaps the last two parameters: (..., dst_layer_range, tensor_num_per_layer=2, size=-1)",
        ("push_cache.signature.parameters",))
class swapped_size_and_tnpl(CacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # type: ignore[no-untyped-def,override]
                   dst_layer_range=None, tensor_num_per_layer=2, size=-1):
        super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size,
                           tensor_num_per_layer)


@mutant("an 8.2.RC1.alpha002 backend whose push_cache already takes size (the 8.2.RC1.alpha003 parameter)",
        ("push_cache.signature.parameters_v82a002",), spec_versions=("8.2.RC1.alpha002",))
class v82a002_takes_size(CacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # type: ignore[no-untyped-def,override]
                   dst_layer_range=None, size=-1):
        super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size)


@mutant("an 8.2.RC1.alpha003/8.3.RC1.alpha001 backend with the 8.3.RC1.alpha002 order: size before the ranges",
        ("push_cache.signature.parameters_v82a003",), spec_versions=("8.2.RC1.alpha003", "8.3.RC1.alpha001"))
class v82a003_size_before_ranges(CacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, size=-1,  # type: ignore[no-untyped-def,override]
                   src_layer_range=None, dst_layer_range=None):
        super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size)


@mutant("src_batch_index has no default: a call without it is a TypeError",
        ("push_cache.signature.defaults",), reaches=("parameter=src_batch_index:omitted",))
class no_batch_index_default(CacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index, src_layer_range=None,  # type: ignore[no-untyped-def,override]
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size,
                           tensor_num_per_layer)


#: the 8.2.RC1.alpha003 prototype's parameters: a stale list the logging wrapper below names positionals from
_STALE_NAMES = ("dst_cache_key", "src_cache", "src_batch_index", "src_layer_range", "dst_layer_range", "size")


def _logged(fn: Any) -> Any:
    """An argument-logging wrapper (functools.wraps: inspect.signature still shows the wrapped prototype) that
    names the positional arguments from ``_STALE_NAMES`` and passes them on as keywords."""
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if len(args) > len(_STALE_NAMES):
            raise TypeError(f"push_cache() takes {len(_STALE_NAMES)} positional arguments but {len(args)} were given")
        named = dict(zip(_STALE_NAMES, args, strict=False))   # never more args than names (checked above)
        twice = sorted(named.keys() & kwargs.keys())
        if twice:
            raise TypeError(f"push_cache() got multiple values for argument {twice[0]!r}")
        log.debug("push_cache(%s)", ", ".join(f"{k}={v!r}" for k, v in {**named, **kwargs}.items()))
        return fn(self, **named, **kwargs)
    return wrapper


@mutant("a logging wrapper names positionals from the 8.2.RC1.alpha003 list: a seventh positional is a TypeError",
        ("push_cache.signature.positional",), reaches=("call_form=positional",))
class stale_positional_names(CacheManager):
    @_logged
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # type: ignore[no-untyped-def,override]
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size,
                           tensor_num_per_layer)


@mutant("returns the native status (LLMStatusCode.LLM_SUCCESS) instead of None",
        ("push_cache.signature.returns_none",))
class returns_status(CacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # type: ignore[no-untyped-def,override]
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size,
                           tensor_num_per_layer)
        return LLMStatusCode.LLM_SUCCESS


@mutant("takes **kwargs (the 8.3.RC1.alpha002 form) and silently ignores unknown keywords",
        ("push_cache.signature.no_var_kwargs",))
class ignores_unknown_kwargs(CacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # type: ignore[no-untyped-def,override]
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2, **kwargs):
        super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size,
                           tensor_num_per_layer)


# ---------------------------------------------------------------- src_cache, check order, ranges, restrictions
@mutant("looks src_cache up by cache_id only: a Cache of another node pushes the local cache with the same id",
        ("push_cache.param.src_cache.not_local",))
class foreign_cache_by_id(CacheManager):
    def _resolve_local_cache(self, a):  # type: ignore[no-untyped-def]
        entry = self.engine.caches.get(a.src_cache.cache_id) if self.engine.alive else None
        return entry if entry is not None else super()._resolve_local_cache(a)


@mutant("checks enable_remote_cache_accessible before the argument types (the vendor's order, facts §1.2 #1)",
        ("push_cache.param.types_with_option_off",))
class option_before_types(CacheManager):
    push_check_order = ("_check_push_enabled",) + _drop(CacheManager.push_check_order, "_check_push_enabled")


@mutant("zips layer ranges of different lengths: pushes the shorter one (values compared pairwise)",
        ("push_cache.restriction.ranges_equal.length",))
class zips_unequal_ranges(CacheManager):
    push_check_order = _drop(CacheManager.push_check_order, "_check_range_lengths")

    def _check_range_values(self, a):  # type: ignore[no-untyped-def]
        raise_if_false(all(s == d for s, d in zip(a.src_layer_range, a.dst_layer_range, strict=False)),
                       "[push_cache] param check failed, src_layer_range ({0}) and dst_layer_range ({1}) "
                       "must have the same value.", a.src_layer_range, a.dst_layer_range)

    def _layer_pairs(self, a):  # type: ignore[no-untyped-def]
        return zip(a.src_layer_range, a.dst_layer_range, strict=False)   # the longer range's tail is dropped


@mutant("compares the layer ranges as passed, before None is read as every layer: refuses None beside range(0, L)",
        ("push_cache.restriction.ranges_equal.default_is_all_layers",))
class compares_ranges_before_default(CacheManager):
    push_check_order = tuple(s for step in CacheManager.push_check_order
                             for s in (("_check_ranges_as_passed", step) if step == "_default_layer_ranges" else (step,)))

    def _check_ranges_as_passed(self, a):  # type: ignore[no-untyped-def]
        raise_if_false((a.src_layer_range is None) == (a.dst_layer_range is None),
                       "[push_cache] param check failed, src_layer_range ({0}) and dst_layer_range ({1}) "
                       "must have the same value.", a.src_layer_range, a.dst_layer_range)


# ---------------------------------------------------------------- timeouts
@mutant("applies llm.SyncKvCacheWaitTime to each layer's transfer, not to the whole push (the vendor's reading)",
        ("push_cache.timeout.total_over_layers",))
class per_layer_timeout(CacheManager):
    sync_timeout_scope = "layer"


@mutant("converts llm.SyncKvCacheWaitTime from ms twice: times out after 1/1000 of the budget",
        ("push_cache.timeout.within_budget",))
class timeout_converted_twice(CacheManager):
    def _await_transfer(self, a, link, seconds):  # type: ignore[no-untyped-def]
        budget = self.engine.sync_timeout_s / 1000
        if budget < seconds <= self.engine.sync_timeout_s:   # longer transfers take the reference path
            if not self.engine.stop_event.wait(budget):
                raise self._native_error(a, LLMStatusCode.LLM_TIMEOUT,
                                         f"transfer did not complete within {budget * 1000:.0f} ms")
        super()._await_transfer(a, link, seconds)


@mutant("keeps pushing over a link whose remote node died: writes its memory and returns normally",
        ("push_cache.timeout.dead_peer",))
class pushes_to_dead_peer(CacheManager):
    def _resolve_link(self, a):  # type: ignore[no-untyped-def]
        engine, cluster_id = self.engine, a.dst_cache_key.cluster_id
        link = engine.fabric.links.get((engine.cluster_id, cluster_id))
        if link is not None and link.client is engine and engine.fabric.nodes.get(cluster_id) is link.server:
            return link   # no liveness check of the server
        return super()._resolve_link(a)


# ---------------------------------------------------------------- defects only a history shows (issue 20)
# Each passes every clause test (its focus names the clauses whose tests it goes through unseen) and is caught
# by the stateful suite (procedure history), which attributes the failure to the target clause.

#: the clause whose tests are the histories: every focus below names it
HISTORY = "push_cache.history.valid_pushes"

@mutant("keeps one comm entity per node: a new link from a node replaces its other links",
        ("push_cache.history.valid_pushes",), by="histories",
        focus=(HISTORY, "push_cache.remote.not_linked", "push_cache.remote.unlinked_after_link",
               "push_cache.data.postcondition"))
class one_link_per_node(CacheManager):
    def _resolve_link(self, a):  # type: ignore[no-untyped-def]
        link = super()._resolve_link(a)
        mine = [candidate for candidate in self.engine.fabric.links.values() if candidate.client is self.engine]
        if mine and mine[-1] is not link:   # links are kept in the order they were made: the newest wins
            raise self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK,
                                     "current cluster is not linked with remote cluster")
        return link


@mutant("looks the remote cache up by the low 32 bits of the key's cache_id",
        ("push_cache.remote.unknown_cache",), by="histories",
        focus=(HISTORY, "push_cache.remote.unknown_cache", "push_cache.remote.unknown_cache.status",
               "push_cache.types.cache_key_by_id_and_index.domains"))
class cache_id_low_32_bits(CacheManager):
    def _lookup_remote_cache(self, a, server):  # type: ignore[no-untyped-def]
        if not hasattr(getattr(a, "dst_cache_key", None), "cache_id"):  # push_cache's lookup; the others' as is
            return super()._lookup_remote_cache(a, server)
        cache_id = a.dst_cache_key.cache_id & 0xFFFF_FFFF
        return server.lookup(cache_id) if cache_id > 0 else server.lookup_by_key(0, 0)


#: pushes over one link after which the leaking mutant has no transfer slot left
LEAKED_SLOTS = 768


@mutant(f"leaks a transfer slot per push over a link: push {LEAKED_SLOTS + 1} over one link raises "
        "LLM_OUT_OF_MEMORY", ("push_cache.history.valid_pushes",), by="histories",
        focus=(HISTORY, "push_cache.data.postcondition", "push_cache.data.nothing_else_changes",
               "push_cache.data.concurrent"))
class leaks_transfer_slots(CacheManager):
    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.used_slots: dict[Any, int] = {}

    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # type: ignore[no-untyped-def,override]
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        peer = getattr(dst_cache_key, "cluster_id", None)
        used = self.used_slots.get(peer, 0)
        if used >= LEAKED_SLOTS:
            raise LLMException("[push_cache] failed, error code is LLMStatusCode.LLM_OUT_OF_MEMORY: no free transfer "
                               "slot", status_code=LLMStatusCode.LLM_OUT_OF_MEMORY)
        self.used_slots[peer] = used + 1
        super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size,
                           tensor_num_per_layer)


@mutant("stages each source batch entry at its first push and sends the staged bytes again later: a source "
        "rewritten between pushes arrives stale", ("push_cache.history.valid_pushes",), by="histories",
        focus=(HISTORY, "push_cache.data.postcondition", "push_cache.data.source_unchanged",
               "push_cache.data.src_batch_slice", "push_cache.data.dtypes"))
class stale_source_bytes(CacheManager):
    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.staged: dict[tuple[int, int, int], np.ndarray] = {}

    def _layer_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        pairs = super()._layer_slices(a, link, local, remote, src_layer, dst_layer)
        out = []
        for (src, dst), (s, _) in zip(pairs, self._tensor_pairs(a, src_layer, dst_layer), strict=True):
            key = (local.cache_id, s, a.src_batch_index)
            if key not in self.staged:
                self.staged[key] = src.copy()
            out.append((self.staged[key], dst))
        return out


# ---------------------------------------------------------------- a link after a timeout, a refusal, a fault (issue 31)
# Each leaves a link broken by what happened over it before; the clause of what came before judges the next push
# (a clause test makes that history by construction: its case's ``first`` push), and the histories judge the first
# valid push over a link after each timeout, fault or refusal by the same clause.

class _Poisoning(CacheManager):
    """A cache manager that fails every push over a link it has poisoned, until the link is made again (a new
    link is a new object)."""

    poison_status = LLMStatusCode.LLM_FAILED

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.poisoned: list[Any] = []

    def poison(self, link: Any) -> None:
        if not any(p is link for p in self.poisoned):
            self.poisoned.append(link)

    def _resolve_link(self, a):  # type: ignore[no-untyped-def]
        link = super()._resolve_link(a)
        if any(p is link for p in self.poisoned):
            raise self._native_error(a, self.poison_status, "the link failed earlier")
        return link


class _TimeoutPoisoning(_Poisoning):
    """Poisons a link when a transfer over it times out."""

    def _await_transfer(self, a, link, seconds):  # type: ignore[no-untyped-def]
        try:
            super()._await_transfer(a, link, seconds)
        except LLMException as exc:
            if exc.status_code == LLMStatusCode.LLM_TIMEOUT:
                self.poison(link)
            raise


@mutant("leaves a link broken after a transfer timeout: every later push over it raises LLM_NOT_YET_LINK until "
        "the link is made again", ("push_cache.timeout.link_recovers",))
class link_broken_after_timeout(_TimeoutPoisoning):
    poison_status = LLMStatusCode.LLM_NOT_YET_LINK


@mutant("leaves a link in its error state after a transfer timeout: every later push over it raises "
        "LLM_TIMEOUT at once, with no delay", ("push_cache.timeout.link_recovers",))
class poisoned_after_timeout(_TimeoutPoisoning):
    poison_status = LLMStatusCode.LLM_TIMEOUT


@mutant("leaves a link broken after a refused push: every later push over it raises LLM_FAILED",
        ("push_cache.remote.link_after_refusal",))
class poisoned_after_refusal(_Poisoning):
    def push_cache(self, dst_cache_key, src_cache, *args, **kwargs):  # type: ignore[no-untyped-def,override]
        try:
            super().push_cache(dst_cache_key, src_cache, *args, **kwargs)
        except (TypeError, ValueError, LLMException) as exc:
            link = self.engine.fabric.usable_link(self.engine, getattr(dst_cache_key, "cluster_id", -1))
            if link is not None and not (isinstance(exc, LLMException) and exc.status_code in (
                    LLMStatusCode.LLM_TIMEOUT, LLMStatusCode.LLM_NOT_YET_LINK)):
                self.poison(link)   # a refusal, not a timeout: what the link is blamed for
            raise


@mutant("keeps a link dropped after the fault that dropped it is cleared: every later push over it times out",
        ("push_cache.timeout.link_recovers",))
class poisoned_after_fault(CacheManager):
    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.dropped: list[Any] = []

    def _transfer_seconds(self, a, link, nbytes):  # type: ignore[no-untyped-def]
        seconds = super()._transfer_seconds(a, link, nbytes)
        if seconds == float("inf") and not any(d is link for d in self.dropped):
            self.dropped.append(link)
        return float("inf") if any(d is link for d in self.dropped) else seconds


@mutant("clamps llm.SyncKvCacheWaitTime to its default, 1000 ms", ("push_cache.timeout.within_budget",),
        by="histories", focus=(HISTORY, "push_cache.timeout.within_budget", "push_cache.timeout.exceeded",
                               "push_cache.timeout.total_over_layers", "push_cache.config.sync_kv_timeout.unit_ms",
                               "push_cache.config.sync_kv_timeout.default"))
class clamps_sync_timeout(CacheManager):
    def _transfer_budget_s(self, a, timeout):  # type: ignore[no-untyped-def]
        return super()._transfer_budget_s(a, min(timeout, 1.0))


#: how long a push from a worker thread holds a layer's first bytes in the staging buffer: the window in which a
#: DMA engine shared by the node's pushes would be busy (a push from the kit's main thread, as every long run, has
#: none; a real model's hundreds of layers keep it short)
STAGING_S = 0.002


@mutant("stages every layer's bytes in one buffer per node, with no lock: two pushes at once from one node land "
        "each other's bytes", ("push_cache.history.valid_pushes",), by="histories", reaches=("concurrency=fan_out",),
        focus=(HISTORY, "push_cache.data.postcondition", "push_cache.data.nothing_else_changes"))
class shared_staging_buffer(CacheManager):
    def _copy_layer(self, pairs):  # type: ignore[no-untyped-def]
        for k, (src, dst) in enumerate(pairs):
            stage = getattr(self, "_stage", None)
            if stage is None or stage.size < src.size:
                stage = self._stage = np.empty(src.size, dtype=np.uint8)
            stage[:src.size] = src
            if k == 0 and threading.current_thread() is not threading.main_thread():
                time.sleep(STAGING_S)
            np.copyto(dst, stage[:src.size])


@mutant("times a transfer out at 0.7 of llm.SyncKvCacheWaitTime: a delay near the budget raises LLM_TIMEOUT",
        ("push_cache.timeout.within_budget",), by="histories", reaches=("delay=near",),
        focus=(HISTORY, "push_cache.timeout.within_budget", "push_cache.timeout.exceeded",
               "push_cache.timeout.total_over_layers", "push_cache.config.sync_kv_timeout.unit_ms"))
class times_out_at_seven_tenths(CacheManager):
    def _transfer_budget_s(self, a, timeout):  # type: ignore[no-untyped-def]
        return super()._transfer_budget_s(a, 0.7 * timeout)


@mutant("keeps the per-tensor copy count in 16 bits: an entry of 64 KiB or more moves its size mod 65536 bytes",
        ("push_cache.history.valid_pushes",), by="histories",
        focus=(HISTORY, "push_cache.data.postcondition", "push_cache.data.dtypes", "push_cache.data.size_default",
               "push_cache.safety.guard_bytes"))
class copy_count_16_bits(CacheManager):
    def _copy_nbytes(self, a, local, remote):  # type: ignore[no-untyped-def]
        return super()._copy_nbytes(a, local, remote) & 0xFFFF


@mutant("keeps tensor indices in 7 bits: in caches of more than 128 tensors, tensor t is read and written as "
        "t mod 128", ("push_cache.history.valid_pushes",), by="histories",
        focus=(HISTORY, "push_cache.data.postcondition", "push_cache.restriction.layer_range.kv_order",
               "push_cache.restriction.layer_range.none_means_all", "push_cache.restriction.layer_range.indexes_layers"))
class tensor_index_7_bits(CacheManager):
    def _tensor_pairs(self, a, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        return [(s & 0x7F, d & 0x7F) for s, d in super()._tensor_pairs(a, src_layer, dst_layer)]


_FLOAT_WORDS = {DataType.DT_FLOAT: np.uint32, DataType.DT_DOUBLE: np.uint64}


@mutant("copies DT_FLOAT and DT_DOUBLE values, not bytes, through a zero test: -0.0 arrives as +0.0",
        ("push_cache.history.valid_pushes",), by="histories",
        focus=(HISTORY, "push_cache.data.dtypes", "push_cache.data.postcondition", "push_cache.data.placements"),
        reaches=("data_type=DT_FLOAT",))
class canonical_negative_zero(CacheManager):
    def _transfer_layer(self, a, link, remote, pairs):  # type: ignore[no-untyped-def]
        super()._transfer_layer(a, link, remote, pairs)
        word = _FLOAT_WORDS.get(a.src_cache.cache_desc.data_type)
        if word is None:
            return
        sign = word(1) << word(8 * np.dtype(word).itemsize - 1)
        for _, dst in pairs:
            values = dst.view(word)
            values[values == sign] = 0


@mutant("assumes registered tensors are evenly spaced: tensor t is taken at tensor_addrs[0] + t * "
        "(tensor_addrs[1] - tensor_addrs[0])", ("push_cache.history.valid_pushes",), by="histories",
        focus=(HISTORY, "push_cache.safety.guard_bytes", "push_cache.data.postcondition",
               "push_cache.data.nothing_else_changes"))
class assumes_even_spacing(CacheManager):
    def register_cache(self, cache_desc, addrs, cache_keys=(), remote_accessible=None):  # type: ignore[no-untyped-def]
        cache = super().register_cache(cache_desc, addrs, cache_keys, remote_accessible)
        entry = self.engine.lookup(cache.cache_id)
        if entry is not None and len(addrs) > 1:
            step, n = addrs[1] - addrs[0], entry.tensor_nbytes
            space = self.engine.memory.space(entry.placement)
            views = []
            for t in range(len(addrs)):
                try:
                    view = space.view_upto(addrs[0] + t * step, n)
                except AddressError:
                    view = np.empty(0, dtype=np.uint8)
                views.append(view if view.size == n else np.empty(n, dtype=np.uint8))  # past the memory: nowhere
            entry.views = views
        return cache


@mutant("pushes from a source cache this node has freed: its freed memory is read into the remote cache",
        ("push_cache.safety.deallocated_source",), by="histories",
        focus=(HISTORY, "push_cache.safety.deallocated_source", "push_cache.safety.deallocated_destination",
               "push_cache.param.src_cache.not_local", "push_cache.param.src_cache.type"))
class pushes_from_freed_source(CacheManager):
    def _resolve_local_cache(self, a):  # type: ignore[no-untyped-def]
        engine, src = self.engine, getattr(a, "src_cache", None)  # a pull's arguments name no source of this node
        if engine.alive and getattr(src, "_cache_manager", None) is self and src.cache_id not in engine.caches:
            freed = engine.dead_caches.get(src.cache_id)
            if freed is not None:
                return freed
        return super()._resolve_local_cache(a)


@mutant("moves a DT_STRING batch entry as if its elements were 8 bytes: half of each entry is left behind",
        ("push_cache.data.string_elements",), breaks="should")
class string_as_eight_bytes(CacheManager):
    def _copy_nbytes(self, a, local, remote):  # type: ignore[no-untyped-def]
        n = super()._copy_nbytes(a, local, remote)
        return n // 2 if a.src_cache.cache_desc.data_type == DataType.DT_STRING else n


# ---------------------------------------------------------------- the setup inputs (issue 29, point 1)
@mutant("takes a rank-1 source (shape [batch]) to have no element per entry: nothing moves, the call returns",
        ("push_cache.data.any_setup",), reaches=("src_rank=minimum",))
class rank_one_moves_nothing(CacheManager):
    def _copy_nbytes(self, a, local, remote):  # type: ignore[no-untyped-def]
        return 0 if len(local.shape) == 1 else super()._copy_nbytes(a, local, remote)


@mutant("a source allocated with cache_keys moves nothing: the call returns as if it had pushed",
        ("push_cache.data.any_setup",), reaches=("src_made=allocate_with_keys",))
class keyed_source_moves_nothing(CacheManager):
    def _copy_nbytes(self, a, local, remote):  # type: ignore[no-untyped-def]
        keyed = any(cache_id == local.cache_id for cache_id, _batch in self.engine.keys.values())
        return 0 if keyed else super()._copy_nbytes(a, local, remote)


# ---------------------------------------------------------------- counts (coverage counts, procedures/counts.py)
#: caches on a node, links of a node, addresses registered on a node past which the count mutants corrupt a push:
#: above what the kit's other tests hold (the histories keep at most 8 live caches in all), below the spec's max
COUNT_MUTANT_CACHES, COUNT_MUTANT_LINKS, COUNT_MUTANT_ADDRESSES = 8, 2, 128


def _one_byte_short(pairs: Any) -> Any:
    """Each (source, destination) slice pair one byte shorter (a pair of one byte stays whole)."""
    return [(s[:-1], d[:-1]) if len(s) > 1 else (s, d) for s, d in pairs]


class _DropsLastByte(CacheManager):
    """Copies one byte short of each tensor's batch entry while ``crowded`` says the push's nodes hold too much."""

    def crowded(self, link: Any) -> bool:
        raise NotImplementedError

    def _layer_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        pairs = super()._layer_slices(a, link, local, remote, src_layer, dst_layer)
        if not self.crowded(link):
            return pairs
        return _one_byte_short(pairs)


class _PastCaches(_DropsLastByte):
    """Crowded once the node the transfer's key names holds more than COUNT_MUTANT_CACHES caches."""

    def crowded(self, link):  # type: ignore[no-untyped-def]
        return len(link.server.caches) > COUNT_MUTANT_CACHES


class _PastLinks(_DropsLastByte):
    """Crowded once the calling node holds more than COUNT_MUTANT_LINKS links."""

    def crowded(self, link):  # type: ignore[no-untyped-def]
        return sum(1 for c, _ in self.engine.fabric.links if c == self.engine.cluster_id) > COUNT_MUTANT_LINKS


@mutant(f"copies one byte short once the destination node holds more than {COUNT_MUTANT_CACHES} caches",
        ("push_cache.data.counts",), reaches=("caches_per_node=maximum",))
class short_past_eight_caches(_PastCaches):
    pass


@mutant(f"copies one byte short from a node holding more than {COUNT_MUTANT_LINKS} links",
        ("push_cache.data.counts",), reaches=("links_per_node=maximum",))
class short_past_two_links(_PastLinks):
    pass


class _PastAddresses(_DropsLastByte):
    """Crowded once the node the transfer's key names has more than COUNT_MUTANT_ADDRESSES addresses registered."""

    def crowded(self, link):  # type: ignore[no-untyped-def]
        return sum(len(e.tensor_addrs) for e in link.server.caches.values()
                   if e.is_registered) > COUNT_MUTANT_ADDRESSES


@mutant(f"copies one byte short once the destination node has more than {COUNT_MUTANT_ADDRESSES} addresses "
        "registered", ("push_cache.data.registered_address_limit",), reaches=("registered_addresses=maximum",))
class short_past_128_addresses(_PastAddresses):
    pass


class _CopiesShortWhenCrowded(_DropsLastByte):
    """:class:`_DropsLastByte` on the siblings' copies too: push_blocks' block slices and a pull's one copy (their
    own certify runs judge them; push_cache's mutants above are certified against push_cache's spec alone)."""

    def _block_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        pairs = super()._block_slices(a, link, local, remote, src_layer, dst_layer)
        return _one_byte_short(pairs) if self.crowded(link) else pairs

    def _pull_copy(self, a, link, pairs):  # type: ignore[no-untyped-def]
        super()._pull_copy(a, link, _one_byte_short(pairs) if self.crowded(link) else pairs)


@mutant(f"pushes blocks one byte short once the remote node holds more than {COUNT_MUTANT_CACHES} caches",
        ("push_blocks.data.counts",), reaches=("caches_per_node=maximum",))
class blocks_short_past_eight_caches(_PastCaches, _CopiesShortWhenCrowded):
    pass


@mutant(f"pushes blocks one byte short from a node holding more than {COUNT_MUTANT_LINKS} links",
        ("push_blocks.data.counts",), reaches=("links_per_node=maximum",))
class blocks_short_past_two_links(_PastLinks, _CopiesShortWhenCrowded):
    pass


@mutant(f"pulls one byte short once the remote node holds more than {COUNT_MUTANT_CACHES} caches",
        ("pull_cache.data.counts",), reaches=("caches_per_node=maximum",))
class pull_short_past_eight_caches(_PastCaches, _CopiesShortWhenCrowded):
    pass


@mutant(f"pulls one byte short into a node holding more than {COUNT_MUTANT_LINKS} links",
        ("pull_cache.data.counts",), reaches=("links_per_node=maximum",))
class pull_short_past_two_links(_PastLinks, _CopiesShortWhenCrowded):
    pass


@mutant(f"pulls blocks one byte short once the remote node holds more than {COUNT_MUTANT_CACHES} caches",
        ("pull_blocks.data.counts",), reaches=("caches_per_node=maximum",))
class pull_blocks_short_past_eight_caches(_PastCaches, _CopiesShortWhenCrowded):
    pass


@mutant(f"pulls blocks one byte short into a node holding more than {COUNT_MUTANT_LINKS} links",
        ("pull_blocks.data.counts",), reaches=("links_per_node=maximum",))
class pull_blocks_short_past_two_links(_PastLinks, _CopiesShortWhenCrowded):
    pass


@mutant(f"pushes blocks one byte short once the remote node has more than {COUNT_MUTANT_ADDRESSES} addresses "
        "registered", ("push_blocks.data.registered_address_limit",), reaches=("registered_addresses=maximum",))
class blocks_short_past_128_addresses(_PastAddresses, _CopiesShortWhenCrowded):
    pass


@mutant(f"pulls one byte short once the remote node has more than {COUNT_MUTANT_ADDRESSES} addresses registered",
        ("pull_cache.data.registered_address_limit",), reaches=("registered_addresses=maximum",))
class pull_short_past_128_addresses(_PastAddresses, _CopiesShortWhenCrowded):
    pass


@mutant(f"pulls blocks one byte short once the remote node has more than {COUNT_MUTANT_ADDRESSES} addresses "
        "registered", ("pull_blocks.data.registered_address_limit",), reaches=("registered_addresses=maximum",))
class pull_blocks_short_past_128_addresses(_PastAddresses, _CopiesShortWhenCrowded):
    pass


# ---------------------------------------------------------------- push_blocks (spec/push_blocks.yaml)
# Each overrides a hook of the reference's push_blocks path only (reference_impl/push_blocks.py): its own check
# order, its block slices, its own checks; what push_cache shares with it is left alone.
def _replace_blocks(a: Any, src: Any, dst: Any) -> Any:
    return replace(a, src_blocks=src, dst_blocks=dst)


@mutant("pairs source blocks with destination blocks by position: block src_blocks[i] lands in block i",
        ("push_blocks.data.postcondition", "push_blocks.signature.returns_none"))
class blocks_dst_by_position(CacheManager):
    def _block_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        moved = _replace_blocks(a, a.src_blocks, list(range(len(a.src_blocks))))
        return super()._block_slices(moved, link, local, remote, src_layer, dst_layer)


@mutant("sorts both block lists before pairing them (block order lost)",
        ("push_blocks.data.postcondition", "push_blocks.signature.returns_none"))
class blocks_sorted(CacheManager):
    def _block_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        moved = _replace_blocks(a, sorted(a.src_blocks), sorted(a.dst_blocks))
        return super()._block_slices(moved, link, local, remote, src_layer, dst_layer)


@mutant("moves only the first listed block", ("push_blocks.data.postcondition", "push_blocks.data.placements"))
class blocks_first_only(CacheManager):
    def _block_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        moved = _replace_blocks(a, list(a.src_blocks)[:1], list(a.dst_blocks)[:1])
        return super()._block_slices(moved, link, local, remote, src_layer, dst_layer)


@mutant("moves every layer whatever the layer ranges say",
        ("push_blocks.restriction.layer_range.indexes_layers", "push_blocks.data.postcondition"))
class blocks_all_layers(CacheManager):
    def push_blocks(self, dst_cache_key, src_cache, src_blocks=(), dst_blocks=(),  # type: ignore[no-untyped-def]
                    src_layer_range=None, dst_layer_range=None, tensor_num_per_layer=2):
        if isinstance(src_layer_range, range) and src_layer_range == dst_layer_range and src_layer_range:
            src_layer_range = dst_layer_range = None
        return super().push_blocks(dst_cache_key, src_cache, src_blocks, dst_blocks, src_layer_range,
                                   dst_layer_range, tensor_num_per_layer)


@mutant("moves two tensors per layer whatever tensor_num_per_layer says",
        ("push_blocks.restriction.tensor_num_per_layer.valid",))
class blocks_fixed_two_tensors(CacheManager):
    def _block_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        return super()._block_slices(replace(a, tensor_num_per_layer=2), link, local, remote, src_layer, dst_layer)


@mutant("takes a CacheKeyByIdAndIndex or CacheKey as dst_cache_key too (and fails on it later)",
        ("push_blocks.param.dst_cache_key.type",))
class blocks_any_key_type(CacheManager):
    def _check_blocks_key_type(self, a):  # type: ignore[no-untyped-def]
        check_isinstance("dst_cache_key", a.dst_cache_key, [object], allow_none=False)


@mutant("does not check src_cache's type", ("push_blocks.param.src_cache.type",))
class blocks_src_type_unchecked(CacheManager):
    push_blocks_check_order = _drop(CacheManager.push_blocks_check_order, "_check_blocks_src_type")


@mutant("accepts equal-length, different layer ranges (and pushes layer src[i] into dst[i])",
        ("push_blocks.restriction.ranges_equal.values",))
class blocks_different_ranges(CacheManager):
    push_blocks_check_order = _drop(CacheManager.push_blocks_check_order, "_check_range_values")


@mutant("checks enable_remote_cache_accessible before the argument types, as the vendor does",
        ("push_blocks.param.types_with_option_off",))
class blocks_option_first(CacheManager):
    push_blocks_check_order = ("_check_push_enabled",
                               *_drop(CacheManager.push_blocks_check_order, "_check_push_enabled"))


@mutant("pushes from a contiguous source as from a blocks cache", ("push_blocks.param.src_cache.blocks_required",),
        breaks="should")
class blocks_contiguous_source(CacheManager):
    push_blocks_check_order = _drop(CacheManager.push_blocks_check_order, "_check_src_is_blocks")


@mutant("does not check the destination blocks against the remote block count (refuses them otherwise)",
        ("push_blocks.restriction.block_lists.vendor_remote_range",), breaks="should")
class blocks_remote_range_unchecked(CacheManager):
    def _check_dst_blocks_in_range(self, a, remote):  # type: ignore[no-untyped-def]
        blocks = int(remote.shape[0])
        if any(not 0 <= b < blocks for b in a.dst_blocks):
            raise ValueError(f"dst block out of range [0, {blocks})")


@mutant("returns without pushing when src_blocks is empty", ("push_blocks.restriction.block_lists.vendor_empty_src",),
        breaks="should")
class blocks_empty_source_accepted(CacheManager):
    def _check_block_transfer(self, a, local):  # type: ignore[no-untyped-def]
        if a.src_blocks:
            super()._check_block_transfer(a, local)


_BLOCKS_ORDER = CacheManager.push_blocks_check_order


@mutant("declares dst_blocks before src_blocks (a positional call swaps the lists)",
        ("push_blocks.signature.parameters", "push_blocks.signature.positional"))
class blocks_lists_swapped(CacheManager):
    def push_blocks(self, dst_cache_key, src_cache, dst_blocks=(), src_blocks=(),  # type: ignore[no-untyped-def]
                    src_layer_range=None, dst_layer_range=None, tensor_num_per_layer=2):
        return super().push_blocks(dst_cache_key, src_cache, src_blocks, dst_blocks, src_layer_range,
                                   dst_layer_range, tensor_num_per_layer)


@mutant("defaults both layer ranges to the first layer instead of all layers",
        ("push_blocks.signature.defaults.layer_ranges", "push_blocks.signature.parameters"))
class blocks_first_layer_by_default(CacheManager):
    def push_blocks(self, dst_cache_key, src_cache, src_blocks=(), dst_blocks=(),  # type: ignore[no-untyped-def]
                    src_layer_range=range(0, 1), dst_layer_range=range(0, 1),  # noqa: B008 - the defect
                    tensor_num_per_layer=2):
        return super().push_blocks(dst_cache_key, src_cache, src_blocks, dst_blocks, src_layer_range,
                                   dst_layer_range, tensor_num_per_layer)


@mutant("takes **kwargs and ignores unknown keywords", ("push_blocks.signature.no_var_kwargs",))
class blocks_ignores_unknown_keywords(CacheManager):
    def push_blocks(self, dst_cache_key, src_cache, src_blocks=(), dst_blocks=(),  # type: ignore[no-untyped-def]
                    src_layer_range=None, dst_layer_range=None, tensor_num_per_layer=2, **_ignored):
        return super().push_blocks(dst_cache_key, src_cache, src_blocks, dst_blocks, src_layer_range,
                                   dst_layer_range, tensor_num_per_layer)


@mutant("coerces each block index with int() instead of refusing a non-int",
        ("push_blocks.param.src_blocks.type", "push_blocks.param.dst_blocks.type"))
class blocks_coerced_to_int(CacheManager):
    def _check_block_lists(self, a):  # type: ignore[no-untyped-def]
        for name in ("src_blocks", "dst_blocks"):
            items = getattr(a, name)
            if isinstance(items, (list, tuple)) and all(isinstance(b, (int, float)) for b in items):
                setattr(a, name, [int(b) for b in items])
        super()._check_block_lists(a)


@mutant("takes a list or tuple [start, stop] as a layer range", ("push_blocks.param.layer_range.type",))
class blocks_list_as_range(CacheManager):
    def push_blocks(self, dst_cache_key, src_cache, src_blocks=(), dst_blocks=(),  # type: ignore[no-untyped-def]
                    src_layer_range=None, dst_layer_range=None, tensor_num_per_layer=2):
        def as_range(r):  # type: ignore[no-untyped-def]
            return range(*r) if isinstance(r, (list, tuple)) and all(isinstance(x, int) for x in r) else r
        return super().push_blocks(dst_cache_key, src_cache, src_blocks, dst_blocks, as_range(src_layer_range),
                                   as_range(dst_layer_range), tensor_num_per_layer)


@mutant("truncates a float tensor_num_per_layer instead of refusing it", ("push_blocks.param.tensor_num_per_layer.type",))
class blocks_tnpl_truncated(CacheManager):
    def push_blocks(self, dst_cache_key, src_cache, src_blocks=(), dst_blocks=(),  # type: ignore[no-untyped-def]
                    src_layer_range=None, dst_layer_range=None, tensor_num_per_layer=2):
        if isinstance(tensor_num_per_layer, float):
            tensor_num_per_layer = int(tensor_num_per_layer)
        return super().push_blocks(dst_cache_key, src_cache, src_blocks, dst_blocks, src_layer_range,
                                   dst_layer_range, tensor_num_per_layer)


@mutant("does not check the layer ranges' type, step or bounds",
        ("push_blocks.restriction.layer_range.step", "push_blocks.restriction.layer_range.bounds",
         "push_blocks.param.layer_range.type"))
class blocks_ranges_unchecked(CacheManager):
    push_blocks_check_order = _drop(_drop(_BLOCKS_ORDER, "_check_src_layer_range"), "_check_dst_layer_range")


@mutant("does not compare the two layer ranges' lengths (and fails on the mismatch with ValueError)",
        ("push_blocks.restriction.ranges_equal.length",))
class blocks_range_lengths_unchecked(CacheManager):
    push_blocks_check_order = _drop(_drop(_BLOCKS_ORDER, "_check_range_lengths"), "_check_range_values")


@mutant("compares the layer ranges before an unset one is given its default (all layers)",
        ("push_blocks.restriction.ranges_equal.default_is_all_layers",))
class blocks_ranges_compared_unset(CacheManager):
    _order = list(_drop(_BLOCKS_ORDER, "_check_range_values"))
    _order.insert(_order.index("_default_layer_ranges"), "_check_range_values")
    push_blocks_check_order = tuple(_order)


@mutant("does not check that tensor_num_per_layer divides the tensor count",
        ("push_blocks.restriction.tensor_num_per_layer.divisor",))
class blocks_tnpl_not_divisor(CacheManager):
    def _check_tensor_divisible(self, a, local):  # type: ignore[no-untyped-def]
        return None


@mutant("refuses a host source pushed into a device destination, blocks or not",
        ("push_blocks.restriction.host_to_device.blocks_ok",))
class blocks_refuses_host_to_device(CacheManager):
    def _check_restrictions(self, a, local, remote):  # type: ignore[no-untyped-def]
        raise_if_false(not (local.placement == Placement.HOST and remote.placement == Placement.DEVICE),
                       "host to device is not supported")
        super()._check_restrictions(a, local, remote)


# push_blocks over the path it shares with push_cache: the same defects as push_cache's mutants above (their
# hooks serve both operations), each certified against push_blocks' spec, so its clauses must catch them too
def _shared(backend: ReferenceBackend) -> type[CacheManager]:
    return backend.cache_manager_cls


@mutant("never times out (push_blocks): a slow transfer waits as long as it takes",
        ("push_blocks.timeout.exceeded", "push_blocks.timeout.dropped_link"))
class blocks_never_times_out(_shared(never_times_out)):  # type: ignore[misc]
    pass


@mutant("takes a negative tensor_num_per_layer as its absolute value (push_blocks)",
        ("push_blocks.param.tensor_num_per_layer.domain",))
class blocks_abs_tnpl(_shared(abs_tnpl)):  # type: ignore[misc]
    pass


@mutant("links to an unlinked cluster on demand (push_blocks)",
        ("push_blocks.remote.not_linked", "push_blocks.remote.unlinked_after_link"))
class blocks_links_on_demand(_shared(links_on_demand)):  # type: ignore[misc]
    pass


@mutant("falls back to the remote node's first blocks cache when no cache has the key's model_id",
        ("push_blocks.remote.unknown_cache",))
class blocks_unknown_model_fallback(CacheManager):
    def _lookup_remote_cache(self, a, server):  # type: ignore[no-untyped-def]
        found = super()._lookup_remote_cache(a, server)
        return found if found is not None else next(
            (e for e in server.caches.values() if e.is_blocks), None)


@mutant("does not check the source layer against the local cache's layers (push_blocks)",
        ("push_blocks.restriction.layer_range.past_end",))
class blocks_lax_src_range_past_end(_shared(lax_src_range_past_end)):  # type: ignore[misc]
    pass


@mutant("finds src_cache by its id alone, so another node's cache object names a local cache (push_blocks)",
        ("push_blocks.param.src_cache.not_local",))
class blocks_foreign_cache_by_id(_shared(foreign_cache_by_id)):  # type: ignore[misc]
    pass


@mutant("reads sync_kv_timeout as seconds where it is milliseconds, then as milliseconds (push_blocks)",
        ("push_blocks.timeout.within_budget",))
class blocks_timeout_converted_twice(_shared(timeout_converted_twice)):  # type: ignore[misc]
    pass


@mutant("times a transfer out at 0.7 of llm.SyncKvCacheWaitTime: a delay near the budget raises LLM_TIMEOUT "
        "(push_blocks)", ("push_blocks.timeout.within_budget",), by="histories", reaches=("delay=near",),
        focus=("push_blocks.history.valid_pushes", "push_blocks.timeout.within_budget", "push_blocks.timeout.exceeded"))
class blocks_times_out_at_seven_tenths(_shared(times_out_at_seven_tenths)):  # type: ignore[misc]
    pass


@mutant("pushes into a dead peer's memory over its stale link (push_blocks)", ("push_blocks.timeout.dead_peer",))
class blocks_pushes_to_dead_peer(_shared(pushes_to_dead_peer)):  # type: ignore[misc]
    pass


@mutant("blames the link for a refused push_blocks and fails every later push over it",
        ("push_blocks.remote.link_after_refusal",))
class blocks_poisoned_after_refusal(_Poisoning):
    def push_blocks(self, dst_cache_key, *args, **kwargs):  # type: ignore[no-untyped-def,override]
        try:
            super().push_blocks(dst_cache_key, *args, **kwargs)
        except (TypeError, ValueError, LLMException) as exc:
            link = self.engine.fabric.usable_link(self.engine, getattr(dst_cache_key, "cluster_id", -1))
            if link is not None and not (isinstance(exc, LLMException) and exc.status_code in (
                    LLMStatusCode.LLM_TIMEOUT, LLMStatusCode.LLM_NOT_YET_LINK)):
                self.poison(link)
            raise


@mutant("does not bound tensor_num_per_layer by the tensor count: a larger one is taken as all the tensors",
        ("push_blocks.restriction.tensor_num_per_layer.range",))
class blocks_tnpl_unbounded(CacheManager):
    push_blocks_check_order = _drop(_BLOCKS_ORDER, "_check_tnpl_upper_bound")

    def _check_src_layer(self, a, local, src_layer):  # type: ignore[no-untyped-def]
        return None

    def _check_dst_layer(self, a, remote, dst_layer):  # type: ignore[no-untyped-def]
        return None

    def _check_tensor_divisible(self, a, local):  # type: ignore[no-untyped-def]
        if a.tensor_num_per_layer <= local.num_tensors:
            super()._check_tensor_divisible(a, local)

    def _block_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        clamped = replace(a, tensor_num_per_layer=min(a.tensor_num_per_layer, local.num_tensors))
        return super()._block_slices(clamped, link, local, remote, src_layer, dst_layer)


# push_blocks' property clauses: defects only drawn layouts reach (the fixed cases use 4 and 6 blocks, FLOAT16,
# device to device)
@mutant("drops every pair naming a block at index 8 or above", ("push_blocks.data.any_setup",))
class blocks_past_eight_dropped(CacheManager):
    def _block_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        kept = [(s, d) for s, d in zip(a.src_blocks, a.dst_blocks, strict=True) if s < 8 and d < 8]
        moved = _replace_blocks(a, [s for s, _ in kept], [d for _, d in kept])
        return super()._block_slices(moved, link, local, remote, src_layer, dst_layer)


@mutant("copies each block one byte short for 8-byte element types", ("push_blocks.data.dtypes",))
class blocks_short_for_8_byte_types(CacheManager):
    def _block_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        pairs = super()._block_slices(a, link, local, remote, src_layer, dst_layer)
        if a.src_cache.cache_desc.data_type not in (DataType.DT_INT64, DataType.DT_UINT64, DataType.DT_DOUBLE):
            return pairs
        return _one_byte_short(pairs)


@mutant("moves nothing from a device source into a host destination", ("push_blocks.data.placements",))
class blocks_device_to_host_moves_nothing(CacheManager):
    def _block_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        if local.placement == Placement.DEVICE and remote.placement == Placement.HOST:
            return []
        return super()._block_slices(a, link, local, remote, src_layer, dst_layer)


def _packed_view(manager: CacheManager, entry: Any, tensor: int, offset: int, nbytes: int) -> np.ndarray:
    """Tensor ``tensor`` of ``entry`` where an allocation would have put it: right after the tensor before it
    (the pool hands a cache's tensors out back to back; registered memory need not be)."""
    space = manager.engine.memory.space(entry.placement)
    return space.view(entry.tensor_addrs[0] + tensor * entry.tensor_nbytes + offset, nbytes)


@mutant("reads the local blocks cache's tensors as if packed back to back, as an allocation lays them out: a blocks "
        "cache registered at other addresses (register_blocks_cache) is read from the wrong memory",
        ("push_blocks.history.valid_pushes",), by="histories",
        focus=("push_blocks.history.valid_pushes", "push_blocks.data.postcondition", "push_blocks.data.any_setup",
               "push_blocks.data.placements", "push_blocks.data.dtypes"))
class blocks_local_tensors_packed(CacheManager):
    def _block_pairs(self, link, local, remote, spans):  # type: ignore[no-untyped-def]
        return [(_packed_view(self, local, s.src_tensor, s.src_offset, s.nbytes),
                 self._dst_view(link, remote, s.dst_tensor, s.dst_offset, s.nbytes)) for s in spans]


class _KeepsFreedInTable(CacheManager):
    """Gives a freed cache's memory back to the pool but keeps it in the node's table, alive and bound to its
    keys: a peer still finds it, and reads or writes what the pool holds there now (a cache allocated since)."""

    def _release(self, cache):  # type: ignore[no-untyped-def]
        engine = self.engine
        entry = engine.caches.get(cache.cache_id) if self._owns(cache) else None
        models = [m for m, cid in engine.blocks_keys.items() if cid == cache.cache_id]
        super()._release(cache)
        if entry is not None:
            with engine.lock:
                engine.caches[cache.cache_id] = engine.dead_caches.pop(cache.cache_id, entry)
                engine.blocks_keys.update(dict.fromkeys(models, cache.cache_id))
            entry.alive = True


@mutant("keeps a freed blocks cache in its node's table: a push of blocks into it writes the memory the pool took "
        "back (push_blocks)", ("push_blocks.safety.deallocated_destination",))
class blocks_keeps_freed_in_table(_KeepsFreedInTable):
    pass


@mutant("pushes blocks from a blocks cache this node has freed: the released blocks' memory is read into the remote "
        "cache (push_blocks)", ("push_blocks.safety.deallocated_source",), by="histories",
        focus=("push_blocks.history.valid_pushes", "push_blocks.safety.deallocated_source",
               "push_blocks.param.src_cache.type", "push_blocks.data.postcondition"))
class blocks_push_from_freed_source(_shared(pushes_from_freed_source)):  # type: ignore[misc]
    pass


@mutant("takes a rank-1 local blocks cache (shape [blocks]) to have no element per block: nothing moves, the call "
        "returns (push_blocks)", ("push_blocks.data.setup_extremes",), reaches=("src_rank=minimum",))
class blocks_rank_one_moves_nothing(CacheManager):
    def _block_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        return [] if len(local.shape) == 1 else super()._block_slices(a, link, local, remote, src_layer, dst_layer)


@mutant("prepares a link for the direction first used over it: after a pull of blocks over a link, a push of blocks "
        "over the same link raises LLM_FAILED until the clusters are linked again", ("push_blocks.history.valid_pushes",),
        by="histories", focus=("push_blocks.history.valid_pushes", "push_blocks.data.postcondition",
                               "push_blocks.remote.link_after_refusal"))
class blocks_push_after_pull_refused(CacheManager):
    def _pull_transfer(self, a, link, local, remote, pairs):  # type: ignore[no-untyped-def]
        super()._pull_transfer(a, link, local, remote, pairs)
        self.__dict__.setdefault("read_links", set()).add(id(link))

    def _block_slices(self, a, link, local, remote, src_layer, dst_layer):  # type: ignore[no-untyped-def]
        if id(link) in self.__dict__.get("read_links", ()):
            raise self._native_error(a, LLMStatusCode.LLM_FAILED, "link prepared for read")
        return super()._block_slices(a, link, local, remote, src_layer, dst_layer)


# ---------------------------------------------------------------- pull_cache (spec/pull_cache.yaml)
# Each overrides a hook of the reference's pull path (reference_impl/pull_cache.py, pull_transfer.py) or one it
# shares with the pushes (link, remote lookup, timing), and is certified against pull_cache's spec.
_PULL_ORDER = CacheManager.pull_cache_check_order


def _pull_order_without(*steps: str) -> tuple[str, ...]:
    return tuple(s for s in _PULL_ORDER if s not in steps)


# ---- signature
@mutant("declares size before batch_index (a positional call swaps them)",
        ("pull_cache.signature.parameters", "pull_cache.signature.positional"))
class pull_size_before_batch_index(CacheManager):
    def pull_cache(self, cache_key, cache, size=-1, batch_index=0, **kwargs):  # type: ignore[no-untyped-def,override]
        return super().pull_cache(cache_key, cache, batch_index, size, **kwargs)


@mutant("takes batch_index and size as keyword-only parameters",
        ("pull_cache.signature.positional", "pull_cache.signature.parameters"))
class pull_keyword_only(CacheManager):
    def pull_cache(self, cache_key, cache, *, batch_index=0, size=-1, **kwargs):  # type: ignore[no-untyped-def,override]
        return super().pull_cache(cache_key, cache, batch_index, size, **kwargs)


@mutant("reads tensor_num_per_layer from **kwargs under the name tensor_num (the keyword the page names is ignored)",
        ("pull_cache.signature.kwargs",))
class pull_tnpl_keyword_misspelt(CacheManager):
    def pull_cache(self, cache_key, cache, batch_index=0, size=-1, **kwargs):  # type: ignore[no-untyped-def,override]
        kwargs.pop("tensor_num_per_layer", None)
        if "tensor_num" in kwargs:
            kwargs["tensor_num_per_layer"] = kwargs.pop("tensor_num")
        return super().pull_cache(cache_key, cache, batch_index, size, **kwargs)


# the clause's case leaves the key's batch index at 0 too, so only the signature's default shows this defect
@mutant("defaults batch_index to the key's batch index (None in the signature)", ("pull_cache.signature.parameters",))
class pull_batch_index_from_key(CacheManager):
    def pull_cache(self, cache_key, cache, batch_index=None, size=-1, **kwargs):  # type: ignore[no-untyped-def,override]
        if batch_index is None:
            batch_index = getattr(cache_key, "batch_index", 0)
        return super().pull_cache(cache_key, cache, batch_index, size, **kwargs)


@mutant("defaults batch_index to 1 (entries counted from one)",
        ("pull_cache.signature.defaults.batch_index", "pull_cache.signature.parameters"))
class pull_batch_index_default_one(CacheManager):
    def pull_cache(self, cache_key, cache, batch_index=1, size=-1, **kwargs):  # type: ignore[no-untyped-def,override]
        return super().pull_cache(cache_key, cache, batch_index, size, **kwargs)


@mutant("defaults size to 0 (which its own check refuses)",
        ("pull_cache.signature.defaults.size", "pull_cache.signature.parameters"))
class pull_size_default_zero(CacheManager):
    def pull_cache(self, cache_key, cache, batch_index=0, size=0, **kwargs):  # type: ignore[no-untyped-def,override]
        return super().pull_cache(cache_key, cache, batch_index, size, **kwargs)


@mutant("a layer range left out of **kwargs defaults to the first layer (an explicit None still means all)",
        ("pull_cache.signature.defaults.layer_ranges",))
class pull_first_layer_by_default(CacheManager):
    def pull_cache(self, cache_key, cache, batch_index=0, size=-1, **kwargs):  # type: ignore[no-untyped-def,override]
        kwargs.setdefault("src_layer_range", range(0, 1))
        kwargs.setdefault("dst_layer_range", range(0, 1))
        return super().pull_cache(cache_key, cache, batch_index, size, **kwargs)


@mutant("defaults tensor_num_per_layer to 1", ("pull_cache.signature.defaults.tensor_num_per_layer",))
class pull_tnpl_default_one(CacheManager):
    def pull_cache(self, cache_key, cache, batch_index=0, size=-1, **kwargs):  # type: ignore[no-untyped-def,override]
        kwargs.setdefault("tensor_num_per_layer", 1)
        return super().pull_cache(cache_key, cache, batch_index, size, **kwargs)


@mutant("returns the number of bytes pulled instead of None", ("pull_cache.signature.returns_none",))
class pull_returns_bytes(CacheManager):
    def pull_cache(self, cache_key, cache, batch_index=0, size=-1, **kwargs):  # type: ignore[no-untyped-def,override]
        super().pull_cache(cache_key, cache, batch_index, size, **kwargs)
        return self.pulled

    def _pull_copy(self, a, link, pairs):  # type: ignore[no-untyped-def]
        self.pulled = sum(src.size for src, _ in pairs)
        super()._pull_copy(a, link, pairs)


# ---- argument types and domains
@mutant("does not check cache_key's type (a wrong one fails later, with AttributeError)",
        ("pull_cache.param.cache_key.type",))
class pull_key_type_unchecked(CacheManager):
    pull_cache_check_order = _pull_order_without("_check_pull_key_type")


@mutant("does not check cache's type (a wrong one fails later, with AttributeError)", ("pull_cache.param.cache.type",))
class pull_cache_type_unchecked(CacheManager):
    pull_cache_check_order = _pull_order_without("_check_pull_cache_type")


@mutant("accepts a float batch_index (int() of it)", ("pull_cache.param.batch_index.type",))
class pull_float_batch_index(CacheManager):
    def _check_pull_batch_index(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.batch_index, float):
            a.batch_index = int(a.batch_index)
        super()._check_pull_batch_index(a)


@mutant("does not check size's type (so -1.0 passes as -1)", ("pull_cache.param.size.type",))
class pull_size_type_unchecked(CacheManager):
    pull_cache_check_order = _pull_order_without("_check_pull_size_type")


@mutant("takes a list or tuple [start, stop] as a layer range", ("pull_cache.param.layer_range.type",))
class pull_list_as_range(CacheManager):
    def _pull_tensor_indices(self, a):  # type: ignore[no-untyped-def]
        for name in ("src_layer_range", "dst_layer_range"):
            r = getattr(a, name)
            if isinstance(r, list | tuple) and len(r) == 2 and all(isinstance(x, int) for x in r):
                setattr(a, name, range(*r))
        super()._pull_tensor_indices(a)


@mutant("truncates a float tensor_num_per_layer instead of refusing it", ("pull_cache.param.tensor_num_per_layer.type",))
class pull_tnpl_truncated(CacheManager):
    def _check_tnpl_type(self, a):  # type: ignore[no-untyped-def]
        if isinstance(a.tensor_num_per_layer, float):
            a.tensor_num_per_layer = int(a.tensor_num_per_layer)
        super()._check_tnpl_type(a)


@mutant("takes a negative tensor_num_per_layer as its absolute value (pull_cache)",
        ("pull_cache.param.tensor_num_per_layer.domain",))
class pull_abs_tnpl(_shared(abs_tnpl)):  # type: ignore[misc]
    pass


@mutant("with enable_remote_cache_accessible off, checks only the key's type before the native call",
        ("pull_cache.param.types_with_option_off",))
class pull_unchecked_with_option_off(CacheManager):
    def pull_cache(self, cache_key, cache, batch_index=0, size=-1, **kwargs):  # type: ignore[no-untyped-def,override]
        if not self._enable_remote_cache_accessible:
            self.pull_cache_check_order = ("_check_pull_key_type", "_check_pull_cache_key", "_pull_tensor_indices")
        return super().pull_cache(cache_key, cache, batch_index, size, **kwargs)


@mutant("refuses a CacheKey whatever enable_remote_cache_accessible says (by id only)",
        ("pull_cache.param.cache_key.by_request",))
class pull_by_id_only(CacheManager):
    def _check_pull_key_type(self, a):  # type: ignore[no-untyped-def]
        check_isinstance("cache_key", a.cache_key, [CacheKeyByIdAndIndex], allow_none=False)


@mutant("looks cache up by its cache_id alone: another node's Cache names the local cache with the same id",
        ("pull_cache.param.cache.not_local",))
class pull_foreign_cache_by_id(CacheManager):
    def _resolve_local_cache(self, a):  # type: ignore[no-untyped-def]
        entry = self.engine.caches.get(a.local_cache.cache_id) if self.engine.alive else None
        return entry if entry is not None else super()._resolve_local_cache(a)


@mutant("wraps a batch_index beyond the local batch around (modulo the batch size)",
        ("pull_cache.param.batch_index.out_of_batch",))
class pull_wraps_batch_index(CacheManager):
    def _check_pull_batch(self, a, local):  # type: ignore[no-untyped-def]
        a.batch_index %= local.batch_size
        super()._check_pull_batch(a, local)


# ---- layer ranges and tensor_num_per_layer
class _PullStepAccepted(CacheManager):
    """Accepts a layer range of any step on one side (``side``), pulling the layers it lists."""

    side = "src"

    def _pull_tensor_indices(self, a):  # type: ignore[no-untyped-def]
        name = f"{self.side}_layer_range"
        r = getattr(a, name)
        if not (isinstance(r, range) and r.step != 1):
            return super()._pull_tensor_indices(a)
        setattr(a, name, None)
        super()._pull_tensor_indices(a)
        setattr(a, name, r)
        tnpl = a.tensor_num_per_layer
        setattr(a, f"{self.side}_indices", [layer * tnpl + k for layer in r for k in range(tnpl)])


@mutant("accepts a source layer range of any step, pulling the layers it lists (range(0, 2, 2): layer 0)",
        ("pull_cache.restriction.layer_range.step",))
class pull_src_step_accepted(_PullStepAccepted):
    side = "src"


@mutant("accepts a destination layer range of any step, writing the layers it lists",
        ("pull_cache.restriction.layer_range.step.dst",))
class pull_dst_step_accepted(_PullStepAccepted):
    side = "dst"


@mutant("reads a set, empty layer range as all layers (the vendor's reading)",
        ("pull_cache.restriction.layer_range.bounds",))
class pull_empty_range_is_all(CacheManager):
    pull_cache_check_order = _pull_order_without("_check_pull_ranges_not_empty")


@mutant("drops the tensor indices past the local cache's end and pulls the rest",
        ("pull_cache.restriction.layer_range.past_end",))
class pull_dst_range_clipped(CacheManager):
    def _check_pull_indices(self, a, local):  # type: ignore[no-untyped-def]
        if a.dst_indices and a.dst_indices[-1] >= local.num_tensors:
            keep = sum(d < local.num_tensors for d in a.dst_indices)
            a.dst_indices, a.src_indices = a.dst_indices[:keep], a.src_indices[:keep]
        super()._check_pull_indices(a, local)


@mutant("drops the source tensor indices past the remote cache's end and pulls the rest",
        ("pull_cache.remote.src_layer_out_of_range",))
class pull_src_range_clipped(CacheManager):
    def _tensor_index_pairs(self, a, local, remote):  # type: ignore[no-untyped-def]
        if a.src_indices and a.src_indices[-1] >= remote.num_tensors:
            keep = sum(s < remote.num_tensors for s in a.src_indices)
            a.src_indices, a.dst_indices = a.src_indices[:keep], a.dst_indices[:keep]
        return super()._tensor_index_pairs(a, local, remote)


@mutant("reads an unset layer range as the first layer", ("pull_cache.restriction.layer_range.none_means_all",))
class pull_none_is_first_layer(CacheManager):
    def _pull_tensor_indices(self, a):  # type: ignore[no-untyped-def]
        super()._pull_tensor_indices(a)
        first = list(range(a.tensor_num_per_layer))
        a.src_indices = a.src_indices if a.src_layer_range is not None else first
        a.dst_indices = a.dst_indices if a.dst_layer_range is not None else first


@mutant("writes into the source's layers: dst_layer_range is read as src_layer_range",
        ("pull_cache.restriction.ranges.different_layers",))
class pull_src_range_for_dst(CacheManager):
    def _pull_tensor_indices(self, a):  # type: ignore[no-untyped-def]
        super()._pull_tensor_indices(a)
        if a.src_layer_range is not None and a.dst_layer_range is not None:
            a.dst_indices = list(a.src_indices)


@mutant("treats layer ranges as tensor indices", ("pull_cache.restriction.layer_range.indexes_layers",))
class pull_layers_as_tensors(CacheManager):
    def _pull_tensor_indices(self, a):  # type: ignore[no-untyped-def]
        super()._pull_tensor_indices(a)
        if a.src_indices:
            a.src_indices = list(a.src_layer_range)
        if a.dst_indices:
            a.dst_indices = list(a.dst_layer_range)


@mutant("lays a cache's tensors out K of every layer first, then V: layer i is tensors i, i+L, ...",
        ("pull_cache.restriction.layer_range.kv_order",))
class pull_k_then_v(CacheManager):
    def _pull_tensor_indices(self, a):  # type: ignore[no-untyped-def]
        super()._pull_tensor_indices(a)
        layers = a.cache.cache_desc.num_tensors // a.tensor_num_per_layer

        def planar(r):  # type: ignore[no-untyped-def]
            return [layer + k * layers for layer in r for k in range(a.tensor_num_per_layer)]

        if a.src_indices:
            a.src_indices = planar(a.src_layer_range)
        if a.dst_indices:
            a.dst_indices = planar(a.dst_layer_range)


@mutant("bounds tensor_num_per_layer by the tensor count exclusively (off by one: all tensors in one layer refused)",
        ("pull_cache.restriction.tensor_num_per_layer.valid",))
class pull_tnpl_bound_off_by_one(CacheManager):
    def _check_pull_tnpl_upper_bound(self, a):  # type: ignore[no-untyped-def]
        num_tensors = a.local_cache.cache_desc.num_tensors
        raise_if_false(a.tensor_num_per_layer < num_tensors, "[pull_cache] param check failed, "
                       "tensor_num_per_layer ({0}) is invalid, should [1, {1})", a.tensor_num_per_layer, num_tensors)


@mutant("does not bound tensor_num_per_layer by the tensor count when no range is given (the vendor's reading)",
        ("pull_cache.restriction.tensor_num_per_layer.range",))
class pull_tnpl_unbounded(CacheManager):
    pull_cache_check_order = _pull_order_without("_check_pull_tnpl_upper_bound")


@mutant("does not check that tensor_num_per_layer divides the tensor count",
        ("pull_cache.restriction.tensor_num_per_layer.divisor",))
class pull_tnpl_not_divisor(CacheManager):
    def _check_pull_indices(self, a, local):  # type: ignore[no-untyped-def]
        super()._check_pull_indices(replace(a, tensor_num_per_layer=1), local)


@mutant("accepts a CacheKey with enable_remote_cache_accessible on", ("pull_cache.restriction.remote_accessible.key_type",))
class pull_cache_key_with_option_on(CacheManager):
    def _check_pull_key_type(self, a):  # type: ignore[no-untyped-def]
        check_isinstance("cache_key", a.cache_key, [CacheKey, CacheKeyByIdAndIndex], allow_none=False)


# ---- the remote side
@mutant("links on demand: pulls from any cluster on the fabric, linked or not",
        ("pull_cache.remote.not_linked", "pull_cache.remote.unlinked_after_link"))
class pull_links_on_demand(CacheManager):
    def _resolve_link(self, a):  # type: ignore[no-untyped-def]
        fabric = self.engine.fabric
        if a.peer_cluster_id != self.engine.cluster_id and fabric.usable_link(self.engine, a.peer_cluster_id) is None:
            fabric.link(self.engine, a.peer_cluster_id)
        return super()._resolve_link(a)


@mutant("falls back to the remote's first cache when the key's cache id is unknown (pull_cache)",
        ("pull_cache.remote.unknown_cache",))
class pull_unknown_cache_fallback(_shared(unknown_cache_fallback)):  # type: ignore[misc]
    pass


@mutant("wraps a key's batch index beyond the remote batch around (modulo its batch size)",
        ("pull_cache.remote.batch_out_of_range",))
class pull_wraps_remote_batch(CacheManager):
    def _pull_cache_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        a.src_batch %= remote.batch_size
        return super()._pull_cache_slices(a, local, remote)


@mutant("blames the link for a refused pull and fails every later pull over it",
        ("pull_cache.remote.link_after_refusal",))
class pull_poisoned_after_refusal(_Poisoning):
    def pull_cache(self, cache_key, *args, **kwargs):  # type: ignore[no-untyped-def,override]
        try:
            super().pull_cache(cache_key, *args, **kwargs)
        except (TypeError, ValueError, LLMException) as exc:
            link = self.engine.fabric.usable_link(self.engine, getattr(cache_key, "cluster_id", -1))
            if link is not None and not (isinstance(exc, LLMException) and exc.status_code in (
                    LLMStatusCode.LLM_TIMEOUT, LLMStatusCode.LLM_NOT_YET_LINK)):
                self.poison(link)
            raise


# ---- data
@mutant("drops the last tensor of a pull of more than one tensor", ("pull_cache.data.postcondition",))
class pull_drops_last_tensor(CacheManager):
    def _tensor_index_pairs(self, a, local, remote):  # type: ignore[no-untyped-def]
        pairs = super()._tensor_index_pairs(a, local, remote)
        return pairs[:-1] if len(pairs) > 1 else pairs


@mutant("drops the last tensor of a pull of more than one tensor, in a history", ("pull_cache.history.valid_pulls",))
class pull_history_drops_last_tensor(_shared(pull_drops_last_tensor)):  # type: ignore[misc]
    pass


@mutant("always reads remote batch 0, whatever the key's batch index", ("pull_cache.data.remote_batch_slice",))
class pull_remote_batch_zero(CacheManager):
    def _pull_cache_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        a.src_batch = 0
        return super()._pull_cache_slices(a, local, remote)


@mutant("always writes local batch 0, whatever batch_index says", ("pull_cache.data.local_batch_slice",))
class pull_local_batch_zero(CacheManager):
    def _pull_cache_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        a.batch_index = 0
        return super()._pull_cache_slices(a, local, remote)


@mutant("reads size -1 as one entry's element count, not its bytes (the item size forgotten)",
        ("pull_cache.data.size_default",))
class pull_size_in_elements(CacheManager):
    def _pull_cache_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        if a.size == -1:
            a.size = local.stride // a.cache.cache_desc.data_type.itemsize
        return super()._pull_cache_slices(a, local, remote)


@mutant("ignores a positive size: always pulls the whole entry", ("pull_cache.data.size_positive",))
class pull_ignores_size(CacheManager):
    def _pull_cache_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        a.size = -1
        return super()._pull_cache_slices(a, local, remote)


@mutant("moves nothing from a device source into a host destination (pull_cache)", ("pull_cache.data.placements",))
class pull_device_to_host_moves_nothing(CacheManager):
    def _pull_cache_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        pairs = super()._pull_cache_slices(a, local, remote)
        return [] if remote.placement == Placement.DEVICE and local.placement == Placement.HOST else pairs


@mutant("pulls each tensor one byte short for 8-byte element types", ("pull_cache.data.dtypes",))
class pull_short_for_8_byte_types(CacheManager):
    def _pull_cache_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        pairs = super()._pull_cache_slices(a, local, remote)
        if a.cache.cache_desc.data_type not in (DataType.DT_INT64, DataType.DT_UINT64, DataType.DT_DOUBLE):
            return pairs
        return _one_byte_short(pairs)


@mutant("drops every tensor pair naming a tensor at index 8 or above", ("pull_cache.data.any_setup",))
class pull_past_eight_tensors_dropped(CacheManager):
    def _tensor_index_pairs(self, a, local, remote):  # type: ignore[no-untyped-def]
        return [(s, d) for s, d in super()._tensor_index_pairs(a, local, remote) if s < 8 and d < 8]


@mutant("writes into a local cache this node has deallocated", ("pull_cache.safety.deallocated_destination",))
class pull_into_deallocated(CacheManager):
    def _resolve_local_cache(self, a):  # type: ignore[no-untyped-def]
        entry = self.engine.lookup(a.local_cache.cache_id, include_dead=True) if self._owns(a.local_cache) else None
        return entry if entry is not None else super()._resolve_local_cache(a)

    def _pull_transfer(self, a, link, local, remote, pairs):  # type: ignore[no-untyped-def]
        seconds = self._transfer_seconds(a, link, self._pairs_nbytes(pairs))
        if seconds > 0:
            self._await_transfer(a, link, seconds)
        with local.lock:   # the source is checked; the destination is not
            if not self._pull_source_alive(link, remote):
                raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST, "a cache was deallocated")
            self._pull_copy(a, link, pairs)


@mutant("keeps a freed cache in its node's table: a pull from it reads the memory the pool took back (pull_cache)",
        ("pull_cache.safety.deallocated_source",))
class pull_keeps_freed_in_table(_KeepsFreedInTable):
    pass


# ---- timeouts
@mutant("never times out (pull_cache): a slow transfer waits as long as it takes",
        ("pull_cache.timeout.exceeded", "pull_cache.timeout.dropped_link"))
class pull_never_times_out(_shared(never_times_out)):  # type: ignore[misc]
    pass


@mutant("does not see a dropped link: the transfer goes through at the link's speed",
        ("pull_cache.timeout.dropped_link",))
class pull_ignores_dropped_link(CacheManager):
    def _transfer_seconds(self, a, link, nbytes):  # type: ignore[no-untyped-def]
        return link.params.seconds_for(nbytes) + self.engine.faults.send_delay_s


@mutant("reads sync_kv_timeout as seconds where it is milliseconds, then as milliseconds (pull_cache)",
        ("pull_cache.timeout.within_budget",))
class pull_timeout_converted_twice(_shared(timeout_converted_twice)):  # type: ignore[misc]
    pass


@mutant("times a transfer out at 0.7 of llm.SyncKvCacheWaitTime: a delay near the budget raises LLM_TIMEOUT "
        "(pull_cache)", ("pull_cache.timeout.within_budget",), by="histories", reaches=("delay=near",),
        focus=("pull_cache.history.valid_pulls", "pull_cache.timeout.within_budget", "pull_cache.timeout.exceeded"))
class pull_times_out_at_seven_tenths(_shared(times_out_at_seven_tenths)):  # type: ignore[misc]
    pass


@mutant("keeps pulling over a link whose remote node died: reads its memory and returns normally",
        ("pull_cache.timeout.dead_peer",))
class pull_from_dead_peer(CacheManager):
    def _resolve_link(self, a):  # type: ignore[no-untyped-def]
        engine, cluster_id = self.engine, a.peer_cluster_id
        link = engine.fabric.links.get((engine.cluster_id, cluster_id))
        if link is not None and link.client is engine and engine.fabric.nodes.get(cluster_id) is link.server:
            return link   # no liveness check of the server
        return super()._resolve_link(a)


@mutant("leaves a link in its error state after a pull timed out: every later pull over it raises LLM_TIMEOUT at once",
        ("pull_cache.timeout.link_recovers",))
class pull_poisoned_after_timeout(_shared(poisoned_after_timeout)):  # type: ignore[misc]
    pass


@mutant("takes a rank-1 remote source (shape [batch]) to have no element per entry: nothing moves, the call returns "
        "(pull_cache)", ("pull_cache.data.setup_extremes",), reaches=("src_rank=minimum",))
class pull_rank_one_moves_nothing(CacheManager):
    def _span_pairs(self, src, dst, spans):  # type: ignore[no-untyped-def]
        return [] if len(src.shape) == 1 else super()._span_pairs(src, dst, spans)


@mutant("prepares a link for the direction first used over it: after a push over a link, a pull over the same link "
        "raises LLM_FAILED until the clusters are linked again", ("pull_cache.history.valid_pulls",), by="histories",
        focus=("pull_cache.history.valid_pulls", "pull_cache.data.postcondition", "pull_cache.remote.link_after_refusal",
               "pull_cache.timeout.link_recovers"))
class pull_after_push_refused(CacheManager):
    def push_cache(self, dst_cache_key, *args, **kwargs):  # type: ignore[no-untyped-def,override]
        super().push_cache(dst_cache_key, *args, **kwargs)
        link = self.engine.fabric.links.get((self.engine.cluster_id, dst_cache_key.cluster_id))
        self.__dict__.setdefault("written_links", set()).add(id(link))

    def _pull_transfer(self, a, link, local, remote, pairs):  # type: ignore[no-untyped-def]
        if id(link) in self.__dict__.get("written_links", ()):
            raise self._native_error(a, LLMStatusCode.LLM_FAILED, "link prepared for write")
        super()._pull_transfer(a, link, local, remote, pairs)


# ---------------------------------------------------------------- pull_blocks (spec/pull_blocks.yaml)
# Its own hooks (reference_impl/pull_blocks.py: signature, check order, block slices) get their own defects; the
# steps it shares with pull_cache (tensor indices, local checks, link, source, transfer) take pull_cache's
# defects above, each certified against pull_blocks' spec, so its clauses must catch them too.
_PULL_BLOCKS_ORDER = CacheManager.pull_blocks_check_order


# ---- signature
@mutant("declares dst_blocks before src_blocks (a positional call swaps the lists)",
        ("pull_blocks.signature.parameters", "pull_blocks.signature.positional"))
class pull_blocks_lists_swapped(CacheManager):
    def pull_blocks(self, src_cache_key, dst_cache, dst_blocks=(), src_blocks=(),  # type: ignore[no-untyped-def,override]
                    **kwargs):
        return super().pull_blocks(src_cache_key, dst_cache, src_blocks, dst_blocks, **kwargs)


@mutant("reads tensor_num_per_layer from **kwargs under the name tensor_num (pull_blocks)",
        ("pull_blocks.signature.kwargs",))
class pull_blocks_tnpl_keyword_misspelt(CacheManager):
    def pull_blocks(self, src_cache_key, dst_cache, src_blocks=(), dst_blocks=(),  # type: ignore[no-untyped-def,override]
                    **kwargs):
        kwargs.pop("tensor_num_per_layer", None)
        if "tensor_num" in kwargs:
            kwargs["tensor_num_per_layer"] = kwargs.pop("tensor_num")
        return super().pull_blocks(src_cache_key, dst_cache, src_blocks, dst_blocks, **kwargs)


@mutant("a layer range left out of **kwargs defaults to the first layer (pull_blocks)",
        ("pull_blocks.signature.defaults.layer_ranges",))
class pull_blocks_first_layer_by_default(CacheManager):
    def pull_blocks(self, src_cache_key, dst_cache, src_blocks=(), dst_blocks=(),  # type: ignore[no-untyped-def,override]
                    **kwargs):
        kwargs.setdefault("src_layer_range", range(0, 1))
        kwargs.setdefault("dst_layer_range", range(0, 1))
        return super().pull_blocks(src_cache_key, dst_cache, src_blocks, dst_blocks, **kwargs)


@mutant("defaults tensor_num_per_layer to 1 (pull_blocks)", ("pull_blocks.signature.defaults.tensor_num_per_layer",))
class pull_blocks_tnpl_default_one(CacheManager):
    def pull_blocks(self, src_cache_key, dst_cache, src_blocks=(), dst_blocks=(),  # type: ignore[no-untyped-def,override]
                    **kwargs):
        kwargs.setdefault("tensor_num_per_layer", 1)
        return super().pull_blocks(src_cache_key, dst_cache, src_blocks, dst_blocks, **kwargs)


@mutant("defaults src_blocks to None, which its own type check refuses",
        ("pull_blocks.signature.defaults.src_blocks", "pull_blocks.signature.parameters"))
class pull_blocks_src_blocks_default_none(CacheManager):
    def pull_blocks(self, src_cache_key, dst_cache, src_blocks=None, dst_blocks=(),  # type: ignore[no-untyped-def,override]
                    **kwargs):
        return super().pull_blocks(src_cache_key, dst_cache, src_blocks, dst_blocks, **kwargs)


@mutant("returns the number of bytes pulled instead of None (pull_blocks)", ("pull_blocks.signature.returns_none",))
class pull_blocks_returns_bytes(CacheManager):
    def pull_blocks(self, src_cache_key, dst_cache, src_blocks=(), dst_blocks=(),  # type: ignore[no-untyped-def,override]
                    **kwargs):
        super().pull_blocks(src_cache_key, dst_cache, src_blocks, dst_blocks, **kwargs)
        return self.pulled

    def _pull_copy(self, a, link, pairs):  # type: ignore[no-untyped-def]
        self.pulled = sum(src.size for src, _ in pairs)
        super()._pull_copy(a, link, pairs)


# ---- argument types
@mutant("does not check src_cache_key's type (a wrong one fails later, with AttributeError)",
        ("pull_blocks.param.src_cache_key.type",))
class pull_blocks_key_type_unchecked(CacheManager):
    def _check_pull_blocks_types(self, a):  # type: ignore[no-untyped-def]
        super()._check_pull_blocks_types(replace(a, cache_key=CacheKeyByIdAndIndex(0, 1)))


@mutant("does not check dst_cache's type (a wrong one fails later, with AttributeError)",
        ("pull_blocks.param.dst_cache.type",))
class pull_blocks_dst_type_unchecked(CacheManager):
    def _check_pull_blocks_types(self, a):  # type: ignore[no-untyped-def]
        check_isinstance("src_cache_key", a.cache_key, [CacheKey, CacheKeyByIdAndIndex, BlocksCacheKey],
                         allow_none=False)
        check_isinstance("src_blocks", a.src_blocks, [list, tuple], int, allow_none=False)
        check_isinstance("dst_blocks", a.dst_blocks, [list, tuple], int, allow_none=False)


@mutant("coerces each block index with int() instead of refusing a non-int (pull_blocks)",
        ("pull_blocks.param.src_blocks.type", "pull_blocks.param.dst_blocks.type"))
class pull_blocks_coerced_to_int(CacheManager):
    def _check_pull_blocks_types(self, a):  # type: ignore[no-untyped-def]
        for name in ("src_blocks", "dst_blocks"):
            items = getattr(a, name)
            if isinstance(items, (list, tuple)) and all(isinstance(b, (int, float)) for b in items):
                setattr(a, name, [int(b) for b in items])
        super()._check_pull_blocks_types(a)


@mutant("takes a list or tuple [start, stop] as a layer range (pull_blocks)", ("pull_blocks.param.layer_range.type",))
class pull_blocks_list_as_range(_shared(pull_list_as_range)):  # type: ignore[misc]
    pass


@mutant("truncates a float tensor_num_per_layer instead of refusing it (pull_blocks)",
        ("pull_blocks.param.tensor_num_per_layer.type",))
class pull_blocks_tnpl_truncated(_shared(pull_tnpl_truncated)):  # type: ignore[misc]
    pass


@mutant("takes a negative tensor_num_per_layer as its absolute value (pull_blocks)",
        ("pull_blocks.param.tensor_num_per_layer.domain",))
class pull_blocks_abs_tnpl(_shared(abs_tnpl)):  # type: ignore[misc]
    pass


@mutant("with enable_remote_cache_accessible off, checks only the key's type before the native call (pull_blocks)",
        ("pull_blocks.param.types_with_option_off",))
class pull_blocks_unchecked_with_option_off(CacheManager):
    def pull_blocks(self, src_cache_key, dst_cache, src_blocks=(), dst_blocks=(),  # type: ignore[no-untyped-def,override]
                    **kwargs):
        if not self._enable_remote_cache_accessible:
            self.pull_blocks_check_order = ("_check_pull_cache_key", "_pull_tensor_indices")
        return super().pull_blocks(src_cache_key, dst_cache, src_blocks, dst_blocks, **kwargs)


@mutant("takes only a BlocksCacheKey or a CacheKeyByIdAndIndex as src_cache_key (a CacheKey is refused)",
        ("pull_blocks.param.src_cache_key.by_request",))
class pull_blocks_cache_key_refused(CacheManager):
    def _check_pull_blocks_types(self, a):  # type: ignore[no-untyped-def]
        check_isinstance("src_cache_key", a.cache_key, [CacheKeyByIdAndIndex, BlocksCacheKey], allow_none=False)
        super()._check_pull_blocks_types(a)


@mutant("looks dst_cache up by its cache_id alone: another node's Cache names the local cache with the same id",
        ("pull_blocks.param.dst_cache.not_local",))
class pull_blocks_foreign_cache_by_id(_shared(pull_foreign_cache_by_id)):  # type: ignore[misc]
    pass


# ---- a contiguous source (C2B)
@mutant("cuts every listed local block from the start of the remote entry (the block's position in the list ignored)",
        ("pull_blocks.data.from_contiguous.blocks",), breaks="should")
class pull_blocks_entry_start_each(CacheManager):
    def _pull_blocks_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        if a.src_blocks:
            return super()._pull_blocks_slices(a, local, remote)
        # bound here: a zero-argument super() inside the comprehension's inner loop has no class to go by
        slices = super()._pull_blocks_slices
        return [pair for db in a.dst_blocks for pair in slices(replace(a, dst_blocks=[db]), local, remote)]


@mutant("pulls from a contiguous entry into one more local block than listed (the lowest one not listed)",
        ("pull_blocks.data.from_contiguous",))
class pull_blocks_entry_extra_block(CacheManager):
    def _pull_blocks_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        if a.src_blocks:
            return super()._pull_blocks_slices(a, local, remote)
        spare = next((b for b in range(num_blocks(local)) if b not in a.dst_blocks), None)
        extra = [] if spare is None else [spare]
        return super()._pull_blocks_slices(replace(a, dst_blocks=[*a.dst_blocks, *extra]), local, remote)


@mutant("wraps a key's batch index beyond the remote contiguous cache around (modulo its batch size)",
        ("pull_blocks.remote.entry_out_of_range",))
class pull_blocks_wraps_remote_entry(CacheManager):
    def _pull_blocks_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        if not a.src_blocks and not remote.is_blocks:
            a.src_batch %= remote.batch_size
        return super()._pull_blocks_slices(a, local, remote)


# ---- layer ranges and tensor_num_per_layer (the shared tensor-index steps)
@mutant("accepts a source layer range of any step, pulling the layers it lists (pull_blocks)",
        ("pull_blocks.restriction.layer_range.step",))
class pull_blocks_src_step_accepted(_shared(pull_src_step_accepted)):  # type: ignore[misc]
    pass


@mutant("accepts a destination layer range of any step, writing the layers it lists (pull_blocks)",
        ("pull_blocks.restriction.layer_range.step.dst",))
class pull_blocks_dst_step_accepted(_shared(pull_dst_step_accepted)):  # type: ignore[misc]
    pass


@mutant("reads a set, empty layer range as all layers (the vendor's reading; pull_blocks)",
        ("pull_blocks.restriction.layer_range.bounds",))
class pull_blocks_empty_range_is_all(CacheManager):
    pull_blocks_check_order = tuple(s for s in _PULL_BLOCKS_ORDER if s != "_check_pull_ranges_not_empty")


@mutant("drops the tensor indices past the local cache's end and pulls the rest (pull_blocks)",
        ("pull_blocks.restriction.layer_range.past_end",))
class pull_blocks_dst_range_clipped(_shared(pull_dst_range_clipped)):  # type: ignore[misc]
    pass


@mutant("drops the source tensor indices past the remote cache's end and pulls the rest (pull_blocks)",
        ("pull_blocks.remote.src_layer_out_of_range",))
class pull_blocks_src_range_clipped(_shared(pull_src_range_clipped)):  # type: ignore[misc]
    pass


@mutant("reads an unset layer range as the first layer (pull_blocks)",
        ("pull_blocks.restriction.layer_range.none_means_all",))
class pull_blocks_none_is_first_layer(_shared(pull_none_is_first_layer)):  # type: ignore[misc]
    pass


@mutant("writes into the source's layers: dst_layer_range is read as src_layer_range (pull_blocks)",
        ("pull_blocks.restriction.ranges.different_layers",))
class pull_blocks_src_range_for_dst(_shared(pull_src_range_for_dst)):  # type: ignore[misc]
    pass


@mutant("treats layer ranges as tensor indices (pull_blocks)", ("pull_blocks.restriction.layer_range.indexes_layers",))
class pull_blocks_layers_as_tensors(_shared(pull_layers_as_tensors)):  # type: ignore[misc]
    pass


@mutant("lays a cache's tensors out K of every layer first, then V (pull_blocks)",
        ("pull_blocks.restriction.layer_range.kv_order",))
class pull_blocks_k_then_v(_shared(pull_k_then_v)):  # type: ignore[misc]
    pass


@mutant("bounds tensor_num_per_layer by the tensor count exclusively (off by one; pull_blocks)",
        ("pull_blocks.restriction.tensor_num_per_layer.valid",))
class pull_blocks_tnpl_bound_off_by_one(_shared(pull_tnpl_bound_off_by_one)):  # type: ignore[misc]
    pass


@mutant("does not bound tensor_num_per_layer by the tensor count when no range is given (the vendor's reading; "
        "pull_blocks)", ("pull_blocks.restriction.tensor_num_per_layer.range",))
class pull_blocks_tnpl_unbounded(CacheManager):
    pull_blocks_check_order = tuple(s for s in _PULL_BLOCKS_ORDER if s != "_check_pull_tnpl_upper_bound")


@mutant("does not check that tensor_num_per_layer divides the tensor count (pull_blocks)",
        ("pull_blocks.restriction.tensor_num_per_layer.divisor",))
class pull_blocks_tnpl_not_divisor(_shared(pull_tnpl_not_divisor)):  # type: ignore[misc]
    pass


@mutant("refuses a remote host blocks cache pulled into a local device one",
        ("pull_blocks.restriction.host_to_device.blocks_ok",))
class pull_blocks_refuses_host_to_device(CacheManager):
    def _pull_blocks_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        if remote.placement == Placement.HOST and local.placement == Placement.DEVICE:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "host to device is not supported")
        return super()._pull_blocks_slices(a, local, remote)


# ---- the remote side
@mutant("links on demand: pulls from any cluster on the fabric, linked or not (pull_blocks)",
        ("pull_blocks.remote.not_linked", "pull_blocks.remote.unlinked_after_link"))
class pull_blocks_links_on_demand(_shared(pull_links_on_demand)):  # type: ignore[misc]
    pass


@mutant("falls back to the remote node's first blocks cache when no cache has the key's model_id (pull_blocks)",
        ("pull_blocks.remote.unknown_cache",))
class pull_blocks_unknown_model_fallback(_shared(blocks_unknown_model_fallback)):  # type: ignore[misc]
    pass


@mutant("blames the link for a refused pull_blocks and fails every later pull over it",
        ("pull_blocks.remote.link_after_refusal",))
class pull_blocks_poisoned_after_refusal(_Poisoning):
    def pull_blocks(self, src_cache_key, *args, **kwargs):  # type: ignore[no-untyped-def,override]
        try:
            super().pull_blocks(src_cache_key, *args, **kwargs)
        except (TypeError, ValueError, LLMException) as exc:
            link = self.engine.fabric.usable_link(self.engine, getattr(src_cache_key, "cluster_id", -1))
            if link is not None and not (isinstance(exc, LLMException) and exc.status_code in (
                    LLMStatusCode.LLM_TIMEOUT, LLMStatusCode.LLM_NOT_YET_LINK)):
                self.poison(link)
            raise


# ---- data
@mutant("sorts both block lists before pairing them (pull_blocks: block order lost)",
        ("pull_blocks.data.postcondition",))
class pull_blocks_sorted(CacheManager):
    def _pull_blocks_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        moved = replace(a, src_blocks=sorted(a.src_blocks), dst_blocks=sorted(a.dst_blocks))
        return super()._pull_blocks_slices(moved, local, remote)


@mutant("moves nothing from a device source into a host destination (pull_blocks)", ("pull_blocks.data.placements",))
class pull_blocks_device_to_host_moves_nothing(CacheManager):
    def _pull_blocks_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        pairs = super()._pull_blocks_slices(a, local, remote)
        return [] if remote.placement == Placement.DEVICE and local.placement == Placement.HOST else pairs


@mutant("pulls each block one byte short for 8-byte element types", ("pull_blocks.data.dtypes",))
class pull_blocks_short_for_8_byte_types(CacheManager):
    def _pull_blocks_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        pairs = super()._pull_blocks_slices(a, local, remote)
        if a.cache.cache_desc.data_type not in (DataType.DT_INT64, DataType.DT_UINT64, DataType.DT_DOUBLE):
            return pairs
        return _one_byte_short(pairs)


@mutant("drops every pair naming a block at index 8 or above (pull_blocks)", ("pull_blocks.data.any_setup",))
class pull_blocks_past_eight_dropped(CacheManager):
    def _pull_blocks_slices(self, a, local, remote):  # type: ignore[no-untyped-def]
        if not a.src_blocks:
            return super()._pull_blocks_slices(replace(a, dst_blocks=[d for d in a.dst_blocks if d < 8]), local,
                                                remote)
        kept = [(s, d) for s, d in zip(a.src_blocks, a.dst_blocks, strict=True) if s < 8 and d < 8]
        moved = replace(a, src_blocks=[s for s, _ in kept], dst_blocks=[d for _, d in kept])
        return super()._pull_blocks_slices(moved, local, remote) if kept else []


# ---- timeouts
@mutant("never times out (pull_blocks): a slow transfer waits as long as it takes",
        ("pull_blocks.timeout.exceeded", "pull_blocks.timeout.dropped_link"))
class pull_blocks_never_times_out(_shared(never_times_out)):  # type: ignore[misc]
    pass


@mutant("does not see a dropped link: the transfer goes through at the link's speed (pull_blocks)",
        ("pull_blocks.timeout.dropped_link",))
class pull_blocks_ignores_dropped_link(_shared(pull_ignores_dropped_link)):  # type: ignore[misc]
    pass


@mutant("reads sync_kv_timeout as seconds where it is milliseconds, then as milliseconds (pull_blocks)",
        ("pull_blocks.timeout.within_budget",))
class pull_blocks_timeout_converted_twice(_shared(timeout_converted_twice)):  # type: ignore[misc]
    pass


@mutant("times a transfer out at 0.7 of llm.SyncKvCacheWaitTime: a delay near the budget raises LLM_TIMEOUT "
        "(pull_blocks)", ("pull_blocks.timeout.within_budget",), by="histories", reaches=("delay=near",),
        focus=("pull_blocks.history.valid_pulls", "pull_blocks.timeout.within_budget", "pull_blocks.timeout.exceeded"))
class pull_blocks_times_out_at_seven_tenths(_shared(times_out_at_seven_tenths)):  # type: ignore[misc]
    pass


@mutant("keeps pulling over a link whose remote node died: reads its memory and returns normally (pull_blocks)",
        ("pull_blocks.timeout.dead_peer",))
class pull_blocks_from_dead_peer(_shared(pull_from_dead_peer)):  # type: ignore[misc]
    pass


@mutant("leaves a link in its error state after a pull timed out: every later pull over it raises LLM_TIMEOUT at "
        "once (pull_blocks)", ("pull_blocks.timeout.link_recovers",))
class pull_blocks_poisoned_after_timeout(_shared(poisoned_after_timeout)):  # type: ignore[misc]
    pass


@mutant("writes the local blocks cache's tensors as if packed back to back, as an allocation lays them out: into a "
        "blocks cache registered at other addresses (register_blocks_cache) it writes the wrong memory",
        ("pull_blocks.history.valid_pulls",), by="histories",
        focus=("pull_blocks.history.valid_pulls", "pull_blocks.data.postcondition", "pull_blocks.data.any_setup",
               "pull_blocks.data.placements", "pull_blocks.data.dtypes", "pull_blocks.data.from_contiguous",
               "pull_blocks.data.from_contiguous.blocks"))
class pull_blocks_local_tensors_packed(CacheManager):
    def _span_pairs(self, src, dst, spans):  # type: ignore[no-untyped-def]
        return [(src.views[s.src_tensor][s.src_offset:s.src_offset + s.nbytes],
                 _packed_view(self, dst, s.dst_tensor, s.dst_offset, s.nbytes)) for s in spans]


@mutant("takes a rank-1 remote blocks cache (shape [blocks]) to have no element per block: nothing moves, the call "
        "returns (pull_blocks)", ("pull_blocks.data.setup_extremes",), reaches=("src_rank=minimum",))
class pull_blocks_rank_one_moves_nothing(_shared(pull_rank_one_moves_nothing)):  # type: ignore[misc]
    pass


@mutant("writes pulled blocks into a blocks cache this node has freed (pull_blocks)",
        ("pull_blocks.safety.deallocated_destination",))
class pull_blocks_into_deallocated(_shared(pull_into_deallocated)):  # type: ignore[misc]
    pass


@mutant("keeps a freed blocks cache in its node's table: a pull of blocks from it reads the memory the pool took "
        "back (pull_blocks)", ("pull_blocks.safety.deallocated_source",))
class pull_blocks_keeps_freed_in_table(_KeepsFreedInTable):
    pass


# ---------------------------------------------------------------- both kinds of cache on one node (alongside)
@mutant("numbers a node's blocks caches apart from its contiguous caches (a counter of their own from 1) in the one "
        "table both are found in: where a node holds both kinds, a blocks cache takes a contiguous cache's id, and a "
        "push_cache keyed by that id lands in the blocks cache", ("push_cache.history.valid_pushes",),
        by="histories")
class numbers_blocks_apart(CacheManager):
    """Only a node holding both kinds shows it: each kind alone numbers as the reference does (push_cache's clause
    tests make no blocks cache; its histories make them beside its own, generation.histories.alongside)."""

    def _add(self, cache_desc, **entry):  # type: ignore[no-untyped-def]
        added = self.engine.add_cache(placement=cache_desc.placement, num_tensors=cache_desc.num_tensors,
                                      shape=cache_desc.shape, itemsize=cache_desc.data_type.itemsize, **entry)
        if entry.get("is_blocks"):
            engine = self.engine
            with engine.lock:
                number = getattr(engine, "_blocks_next", 1)
                engine._blocks_next = number + 1
                old, added.cache_id = added.cache_id, number
                del engine.caches[old]
                engine.caches[number] = added
                for model, cid in list(engine.blocks_keys.items()):
                    if cid == old:
                        engine.blocks_keys[model] = number
                engine.table_version += 1
        return self._new_cache(cache_desc, added)

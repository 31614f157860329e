"""``CacheManager.push_cache``, written as small overridable steps (see README "Hook points").

Python-layer checks run in the order named by ``PushCacheMixin.push_check_order``: the vendor's argument
checks (facts §1.2 #2..#13, in the vendor's order), then the enable_remote_cache_accessible refusal (#1, which
the vendor runs first), then the documentation's bounds (tensor_num_per_layer <= num_tensors, identical layer
ranges). Then each layer is one "native" transfer: ``_push_layer`` resolves the caches and the link, checks
them (facts §1.3 N1..N11 plus the documentation's restrictions), computes the byte slices, waits out the
simulated transfer time and copies. Checks that depend only on the (local, remote) pair run at the first layer
that meets that pair (``PushPlan``); their outcome cannot change from layer to layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .cache import Cache
from .cache_keys import CacheKeyByIdAndIndex
from .checks import check_int64, check_isinstance, check_layer_range, check_uint32
from .status import LLMException, LLMStatusCode, log, raise_if_false

if TYPE_CHECKING:
    from .engine import CacheEntry, NodeEngine, RemoteTable
    from .fabric import Link

_NUM_TENSORS_PER_LAYER = 2

SlicePairs = list[tuple[np.ndarray, np.ndarray]]


@dataclass(slots=True, eq=False)
class PushPlan:
    """What a push derives once from its (local, remote) pair: the pair-only checks passed, and byte offsets."""

    local: Any
    remote: Any
    src_offset: int
    dst_offset: int
    nbytes: int
    #: with the default ``_src_view``/``_dst_view``: this slot of every local/remote tensor (else None)
    src_slots: list[np.ndarray] | None = None
    dst_slots: list[np.ndarray] | None = None
    #: with the default ``_tensor_pairs`` too: a layer's pairs are a slice of the slot lists
    default_pairs: bool = False


@dataclass(slots=True)
class PushArgs:
    """The arguments of one push_cache call; the default-range step fills in the ranges."""

    dst_cache_key: Any
    src_cache: Any
    src_batch_index: Any
    src_layer_range: Any
    dst_layer_range: Any
    size: Any
    tensor_num_per_layer: Any
    #: set by ``_push_layer`` at the first layer (and again if the local or remote entry changes)
    plan: PushPlan | None = None
    #: seconds of transfer this push has waited so far (``_await_transfer``)
    spent: float = 0.0


#: the vendor's Python-layer argument checks, facts §1.2 #2..#13, in the vendor's order
ARGUMENT_CHECKS: tuple[str, ...] = (
    "_check_dst_cache_key_type",    # 2
    "_check_src_cache_type",        # 3
    "_check_src_batch_index",       # 4
    "_check_src_not_blocks",        # 5
    "_check_tnpl_type",             # 6
    "_check_tnpl_positive",         # 7
    "_check_src_layer_range",       # 8
    "_check_dst_layer_range",       # 9
    "_default_layer_ranges",        # 10
    "_check_range_lengths",         # 11
    "_check_size_type",             # 12
    "_check_size_value",            # 13
)


class PushCacheMixin:
    """push_cache and its steps; mixed into CacheManager, which provides the attributes below."""

    engine: NodeEngine
    _enable_remote_cache_accessible: bool
    _enabled_mem_pool: bool

    #: argument checks first (so a wrong type is a TypeError/ValueError even with the option off, as the
    #: documentation's Returns section says), then #1, then the documentation's bounds
    push_check_order: tuple[str, ...] = ARGUMENT_CHECKS + (
        "_check_push_enabled",          # 1 (the vendor runs it first: VendorCacheManager)
        "_check_tnpl_upper_bound",      # documentation: tensor_num_per_layer in [1, num_tensors]
        "_check_range_values",          # documentation: src_layer_range and dst_layer_range the same value
    )

    #: what llm.SyncKvCacheWaitTime bounds: "push", the whole push ("if the execution time exceeds the value of
    #: sync_kv_timeout, an LLMException is thrown"), or "layer", each layer's transfer (the vendor: the
    #: per-layer BatchTransfer timeout, facts §1.3 N12 and §5)
    sync_timeout_scope: str = "push"

    def push_cache(self, dst_cache_key: CacheKeyByIdAndIndex, src_cache: Cache, src_batch_index: int = 0,
                   src_layer_range: range | None = None, dst_layer_range: range | None = None, size: int = -1,
                   tensor_num_per_layer: int = _NUM_TENSORS_PER_LAYER) -> None:
        """Push batch ``src_batch_index`` of ``src_cache``, layer by layer, into the remote cache of the key."""
        args = PushArgs(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range, size,
                        tensor_num_per_layer)
        for step in self.push_check_order:
            getattr(self, step)(args)
        push_layer = self._push_layer
        for src_layer, dst_layer in self._layer_pairs(args):
            push_layer(args, src_layer, dst_layer)

    # ---- Python-layer checks (facts §1.2) ------------------------------------------------------------
    def _check_push_enabled(self, a: PushArgs) -> None:
        raise_if_false(self._enable_remote_cache_accessible,
                       "push_cache is only supported while enable_remote_cache_accessible is True")

    def _check_dst_cache_key_type(self, a: PushArgs) -> None:
        check_isinstance("dst_cache_key", a.dst_cache_key, [CacheKeyByIdAndIndex], allow_none=False)

    def _check_src_cache_type(self, a: PushArgs) -> None:
        check_isinstance("src_cache", a.src_cache, [Cache], allow_none=False)

    def _check_src_batch_index(self, a: PushArgs) -> None:
        check_uint32("src_batch_index", a.src_batch_index)

    def _check_src_not_blocks(self, a: PushArgs) -> None:
        raise_if_false(not a.src_cache.is_blocks_cache, "param check failed, cache can not be blocks cache.")

    def _check_tnpl_type(self, a: PushArgs) -> None:
        check_uint32("tensor_num_per_layer", a.tensor_num_per_layer)

    def _check_tnpl_positive(self, a: PushArgs) -> None:
        raise_if_false(a.tensor_num_per_layer > 0,
                       "[push_cache] param check failed, tensor_num_per_layer ({0}) is invalid, should [1, {1}]",
                       a.tensor_num_per_layer, a.src_cache.cache_desc.num_tensors)

    def _check_src_layer_range(self, a: PushArgs) -> None:
        check_layer_range("src_layer_range", a.src_layer_range)

    def _check_dst_layer_range(self, a: PushArgs) -> None:
        check_layer_range("dst_layer_range", a.dst_layer_range)

    def _default_layer_ranges(self, a: PushArgs) -> None:
        num_layers = a.src_cache.cache_desc.num_tensors // a.tensor_num_per_layer
        if a.src_layer_range is None:
            a.src_layer_range = range(0, num_layers)
        if a.dst_layer_range is None:
            a.dst_layer_range = range(0, num_layers)

    def _check_range_lengths(self, a: PushArgs) -> None:
        raise_if_false(len(a.src_layer_range) == len(a.dst_layer_range),
                       "src_layer_range size should be equal to size of dst_layer_range size.")

    def _check_size_type(self, a: PushArgs) -> None:
        check_int64("size", a.size)

    def _check_size_value(self, a: PushArgs) -> None:
        raise_if_false(a.size == -1, "[push_cache] param check failed, size ({0}) is invalid, should be = -1.",
                       a.size)

    def _check_tnpl_upper_bound(self, a: PushArgs) -> None:
        num_tensors = a.src_cache.cache_desc.num_tensors
        raise_if_false(a.tensor_num_per_layer <= num_tensors,
                       "[push_cache] param check failed, tensor_num_per_layer ({0}) is invalid, should [1, {1}]",
                       a.tensor_num_per_layer, num_tensors)

    def _check_range_values(self, a: PushArgs) -> None:
        """Documentation: "Currently, src_layer_range and dst_layer_range must have the same value"."""
        raise_if_false(a.src_layer_range == a.dst_layer_range,
                       "[push_cache] param check failed, src_layer_range ({0}) and dst_layer_range ({1}) "
                       "must have the same value.", a.src_layer_range, a.dst_layer_range)

    # ---- per-layer "native" transfer (facts §1.3) -----------------------------------------------------
    def _layer_pairs(self, a: PushArgs) -> Iterable[tuple[int, int]]:
        """(src layer, dst layer) in transfer order: src[i] goes to dst[i]."""
        return zip(a.src_layer_range, a.dst_layer_range, strict=True)

    def _push_layer(self, a: PushArgs, src_layer: int, dst_layer: int) -> None:
        if a.plan is None:
            self._check_native_arguments(a)                   # the binding's conversion of the call's tuple
        local = self._resolve_local_cache(a)                  # N1, N3
        link = self._resolve_link(a)                          # N4-N6
        plan = a.plan
        if plan is None or plan.local is not local:
            self._check_local_remote_accessible(a, local)     # N7
        remote = self._resolve_remote_cache(a, link)          # N8, N8b
        self._check_dst_layer(a, remote, dst_layer)           # N8c
        if plan is None or plan.local is not local or plan.remote is not remote:
            a.plan = self._plan_push(a, local, remote, src_layer)  # N8d, N9, N10, N11, restrictions, strides
        else:
            self._check_src_layer(a, local, src_layer)        # N9 (the others depend on the pair only)
        pairs = self._layer_slices(a, link, local, remote, src_layer, dst_layer)
        self._transfer_layer(a, link, remote, pairs)          # N12

    def _plan_push(self, a: PushArgs, local: CacheEntry, remote: CacheEntry, src_layer: int) -> PushPlan:
        """The per-layer checks from N8d on, at the first layer of a (local, remote) pair, and its offsets."""
        self._check_dst_batch(a, remote)                      # N8d
        self._check_src_layer(a, local, src_layer)            # N9
        self._check_tensor_divisible(a, local)                # N10
        self._check_src_batch(a, local)                       # N11
        self._check_restrictions(a, local, remote)            # documentation restrictions
        self._check_strides(a, local, remote)                 # documentation: no overflow of the dst slice
        plan = PushPlan(local, remote, self._src_offset(a, local), self._dst_offset(a, remote),
                        self._copy_nbytes(a, local, remote))
        cls = type(self)
        if (cls._layer_slices is PushCacheMixin._layer_slices and cls._src_view is PushCacheMixin._src_view
                and cls._dst_view is PushCacheMixin._dst_view):
            plan.src_slots = local.slot_views(plan.src_offset, plan.nbytes)
            plan.dst_slots = remote.slot_views(plan.dst_offset, plan.nbytes)
            plan.default_pairs = cls._tensor_pairs is PushCacheMixin._tensor_pairs
        return plan

    def _check_native_arguments(self, a: PushArgs) -> None:
        """CacheKeyByIdAndIndex takes a negative cache_id (int64), but the native call's field is a uint64: the
        vendor's binding refuses the conversion with a TypeError before any native check (facts §1.2, §9)."""
        cache_id = a.dst_cache_key.cache_id
        if cache_id < 0:
            raise TypeError(f"transfer_cache_v2(): incompatible function arguments: dst cache_id {cache_id} is not "
                            "a uint64")

    def _native_error(self, a: PushArgs, status: LLMStatusCode, detail: str) -> LLMException:
        msg = f"[push_cache] failed, error code is {status}, dst_cache_key = {a.dst_cache_key}. {detail}"
        log.error(msg)
        return LLMException(msg, status_code=status)

    def _resolve_local_cache(self, a: PushArgs) -> CacheEntry:
        engine = self.engine
        if not engine.alive:
            raise self._native_error(a, LLMStatusCode.LLM_FAILED, "local engine is not alive")
        src = a.src_cache
        entry = engine.caches.get(src.cache_id) if src._cache_manager is self else None
        if entry is None:
            raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST,
                                     f"cache id:{src.cache_id} not found")
        return entry

    def _resolve_link(self, a: PushArgs) -> Link:
        link = self.engine.fabric.usable_link(self.engine, a.dst_cache_key.cluster_id)
        if link is None:
            raise self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK,
                                     "current cluster is not linked with remote cluster")
        return link

    def _check_local_remote_accessible(self, a: PushArgs, local: CacheEntry) -> None:
        if not local.remote_accessible:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "local cache is not remote accessible.")

    def _lookup_remote_cache(self, a: PushArgs, server: NodeEngine) -> CacheEntry | None:
        """Live lookup in the remote table; a cache_id <= 0 falls back to the key (req_id 0, model_id 0)."""
        cache_id = a.dst_cache_key.cache_id
        if cache_id > 0:
            return server.lookup(cache_id)
        return server.lookup_by_key(0, 0)

    def _sync_remote_table(self, link: Link) -> RemoteTable:
        """N8's table sync: at the first transfer attempt over the link, before any lookup; again at the next
        attempt while the server had never published a cache (version 0) (facts §1.3 "Link-time check")."""
        table = link.table
        if table is None or table.version == 0:
            link.table = table = link.server.snapshot_table()
        return table

    def _visible_over(self, link: Link, remote: CacheEntry) -> bool:
        """Whether the link's synced remote cache table holds this cache (syncing it if no attempt did yet)."""
        table = link.table
        if table is None:
            table = self._sync_remote_table(link)
        return remote.cache_id in table.entries

    def _find_remote_cache(self, a: PushArgs, link: Link, table: RemoteTable) -> CacheEntry | None:
        """The destination: looked up live, and visible only if the synced table holds it (a cache deallocated
        since is not found; VendorCacheManager reads the synced table alone)."""
        remote = self._lookup_remote_cache(a, link.server)
        if remote is not None and not self._visible_over(link, remote):
            return None
        return remote

    def _resolve_remote_cache(self, a: PushArgs, link: Link) -> CacheEntry:
        table = self._sync_remote_table(link)
        remote = self._find_remote_cache(a, link, table)
        if remote is None:
            raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST,
                                     f"cache_id: {a.dst_cache_key.cache_id} does not exist")
        if not remote.remote_accessible:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "remote cache is not remote accessible.")
        return remote

    def _check_dst_layer(self, a: PushArgs, remote: CacheEntry, dst_layer: int) -> None:
        num_layers = remote.num_tensors // a.tensor_num_per_layer
        if not dst_layer < num_layers:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"layer index[{dst_layer}] is out of range[0, {num_layers}) of remote cache")

    def _check_dst_batch(self, a: PushArgs, remote: CacheEntry) -> None:
        if not a.dst_cache_key.batch_index < remote.batch_size:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"batch index[{a.dst_cache_key.batch_index}] is out of range"
                                     f"[0, {remote.batch_size}) of remote cache")

    def _check_src_layer(self, a: PushArgs, local: CacheEntry, src_layer: int) -> None:
        num_layers = local.num_tensors // a.tensor_num_per_layer
        if not src_layer < num_layers:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"layer index[{src_layer}] is out of range[0, {num_layers})")

    def _check_tensor_divisible(self, a: PushArgs, local: CacheEntry) -> None:
        if local.num_tensors % a.tensor_num_per_layer:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"tensor_num {local.num_tensors} must be a multiple of "
                                     f"tensor_num_per_layer {a.tensor_num_per_layer}")

    def _check_src_batch(self, a: PushArgs, local: CacheEntry) -> None:
        if not a.src_batch_index < local.batch_size:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"batch index[{a.src_batch_index}] is out of range[0, {local.batch_size})")

    def _check_restrictions(self, a: PushArgs, local: CacheEntry, remote: CacheEntry) -> None:
        """The device-pool restriction. "When src_cache is on the host and dst_cache is on the device, only
        scenarios where both caches are contiguous are supported" names no error: a blocks source is refused for
        every placement by #5, and a blocks destination is written like a contiguous one, as the vendor does (no
        native check looks at it: facts §1.3); its batch size is 1 and its block size is the stride."""
        if local.placement != remote.placement and not self._enabled_mem_pool:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     "device<->host push needs llm.MemPoolConfig (device memory pool)")

    def _check_strides(self, a: PushArgs, local: CacheEntry, remote: CacheEntry) -> None:
        if local.stride > remote.stride:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID,
                                     f"local batch size in bytes ({local.stride}) exceeds the remote one "
                                     f"({remote.stride})")

    # ---- slices and bytes -----------------------------------------------------------------------------
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

    def _transfer_seconds(self, a: PushArgs, link: Link, nbytes: int) -> float:
        """Simulated time of one layer: link latency + bytes / bandwidth + injected delay (inf if dropped)."""
        faults = self.engine.faults
        if faults.dropped_peers and link.server.cluster_id in faults.dropped_peers:
            return float("inf")
        return link.params.seconds_for(nbytes) + faults.send_delay_s

    def _transfer_budget_s(self, a: PushArgs, timeout: float) -> float:
        """Seconds this layer's transfer may take: what the push has left of ``timeout`` (llm.SyncKvCacheWaitTime),
        or all of it for each layer when ``sync_timeout_scope`` is "layer"."""
        if self.sync_timeout_scope == "layer":
            return timeout
        return max(0.0, timeout - a.spent)

    def _await_transfer(self, a: PushArgs, link: Link, seconds: float) -> None:
        """Wait ``seconds`` of simulated transfer; past what is left of llm.SyncKvCacheWaitTime, wait that long and
        time out."""
        timeout = self.engine.sync_timeout_s
        budget = self._transfer_budget_s(a, timeout)
        stop = self.engine.stop_event
        if seconds > budget:
            if not stop.wait(budget):
                raise self._native_error(a, LLMStatusCode.LLM_TIMEOUT,
                                         f"transfer did not complete within {timeout * 1000:.0f} ms")
        elif not stop.wait(seconds):
            a.spent += seconds
            if self.engine.fabric.usable_link(self.engine, link.server.cluster_id) is None:
                raise self._native_error(a, LLMStatusCode.LLM_NOT_YET_LINK, "remote cluster went away")
            return
        raise self._native_error(a, LLMStatusCode.LLM_FAILED, "local engine finalized during transfer")

    def _dst_alive(self, remote: CacheEntry) -> bool:
        return remote.alive

    def _copy_layer(self, pairs: SlicePairs) -> None:
        for src, dst in pairs:
            np.copyto(dst, src)

    def _transfer_layer(self, a: PushArgs, link: Link, remote: CacheEntry, pairs: SlicePairs) -> None:
        nbytes = 0
        for src, _ in pairs:
            nbytes += src.size
        seconds = self._transfer_seconds(a, link, nbytes)
        if seconds > 0:
            self._await_transfer(a, link, seconds)
        with remote.lock:
            if not self._dst_alive(remote):
                raise self._native_error(a, LLMStatusCode.LLM_KV_CACHE_NOT_EXIST,
                                         f"cache_id: {a.dst_cache_key.cache_id} was deallocated")
            self._copy_layer(pairs)

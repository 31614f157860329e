"""The making and filling of a testbed's caches: described, allocated or registered inside guard bands, and written.

Every backend call goes through the testbed's recorder, so the reproduction builds the same caches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..inputs.values import Value
from ..judging.oracle import CacheLayout
from ..spec import CacheSpec
from .errors import HarnessError, describe_exception, step
from .recorder import lit

if TYPE_CHECKING:
    from .testbed import CacheInfo, Testbed

SENTINEL = 0xA5
GUARD = 0xCC
GUARD_BYTES = 64


class CacheMaker:
    """The caches of ``bed``.  ``info`` is testbed.py's CacheInfo record, given rather than imported: the testbed
    imports this module, and the kit's imports form no circle."""

    def __init__(self, bed: Testbed, info: type[CacheInfo]) -> None:
        self.bed = bed
        self.info = info

    def layout(self, desc: CacheSpec) -> CacheLayout:
        size = self.bed.types.element_size(desc.data_type)
        if size is None:
            raise HarnessError("CacheDesc", f"the spec's DataType table gives no size for {desc.data_type!r}")
        return CacheLayout(desc.num_tensors, desc.shape, size)

    def desc_value(self, node_name: str, desc: CacheSpec) -> Value:
        """``api.CacheDesc(...)`` for ``desc``, built through the node's api (and the code that builds it)."""
        napi = "api" if node_name == "local" else f"{node_name}.api"
        if node_name != "local":
            self.bed.rec.ns.setdefault(node_name, self.bed.node(node_name))
        extra = {} if desc.batch_dim_index is None else {"batch_dim_index": desc.batch_dim_index}
        code = (f"{napi}.CacheDesc({desc.num_tensors}, {list(desc.shape)!r}, {napi}.DataType.{desc.data_type}, "
                f"{napi}.Placement.{desc.placement}" + "".join(f", {k}={v}" for k, v in extra.items()) + ")")
        try:
            api = self.bed.node(node_name).api
            obj = api.CacheDesc(desc.num_tensors, list(desc.shape), getattr(api.DataType, desc.data_type),
                                getattr(api.Placement, desc.placement), **extra)
        except Exception as exc:
            raise HarnessError("CacheDesc", f"{code}: {describe_exception(exc)}") from exc
        return Value(obj, code)

    def make_cache(self, name: str, node_name: str, desc: CacheSpec, *, guard: bool = False) -> CacheInfo:
        """Allocate a cache on ``node_name``, or register raw memory for it (``register`` in the desc, or
        ``guard`` on a backend that can: then guard bands surround every tensor)."""
        bed = self.bed
        node = Value(bed.node(node_name), node_name)
        layout = self.layout(desc)
        placement = desc.placement
        # a blocks cache is registered where its desc says (register_blocks_cache), never for guard bands alone
        register = bool(desc.register) if desc.blocks else bool(desc.register if desc.register is not None
                                                                 else guard and bed.can_register())
        dvalue = self.desc_value(node_name, desc)
        keys = self.cache_keys(node_name, desc)
        guarded = None
        region = None
        if register:
            if not bed.can_register():
                raise HarnessError("register_cache", "the scenario registers memory, but the backend lacks "
                                                     "raw_memory/register_cache")
            # one region per cache: a guard band before, between and after its tensors (three backend calls,
            # not three per tensor)
            pad, stride = GUARD_BYTES, layout.nbytes + GUARD_BYTES
            total = pad + layout.num_tensors * stride
            mem = step("alloc_memory", self.alloc, name, node_name, placement, total)
            step("write_memory", bed.rec.invoke, None, node, "write_memory", Value(mem, f"{name}_mem"),
                 Value(np.full(total, GUARD, dtype=np.uint8), f"np.full({total}, {GUARD:#04x}, dtype=np.uint8)"))
            addrs = [mem + pad + i * stride for i in range(layout.num_tensors)]
            region = (mem, total)
            method = "register_blocks_cache" if desc.blocks else "register_cache"
            cache = step(f"{method} ({name})", bed.rec.invoke, name, node, f"cache_manager.{method}",
                         dvalue, Value(addrs, f"[{name}_mem + {pad} + i * {stride} for i in range({len(addrs)})]"),
                         remote_accessible=lit(desc.remote_accessible), **keys)
            guarded = addrs
        else:
            method = "allocate_blocks_cache" if desc.blocks else "allocate_cache"
            cache = step(f"{method} ({name})", bed.rec.invoke, name, node, f"cache_manager.{method}", dvalue,
                         **keys)
        made = ("register_blocks" if register and desc.blocks else "register" if register
                else "allocate_blocks" if desc.blocks else "allocate_with_keys" if keys else "allocate")
        info = self.info(name, node_name, cache, layout, desc.data_type, placement, guarded, region, made)
        bed.caches[name] = info
        return info

    def cache_keys(self, node_name: str, desc: CacheSpec) -> dict[str, Value]:
        """A cache spec's ``cache_keys`` as the allocation's ``cache_keys`` argument: one
        ``CacheKey(<the local node's cluster id>, req_id, model_id)`` per entry, bound to batch entries 0, 1, ...;
        a blocks cache's ``model_id`` as its ``blocks_cache_key``: ``BlocksCacheKey(<its node's cluster id>,
        model_id)``, by which a BlocksCacheKey names it."""
        if desc.blocks and desc.model_id is not None:
            return self.blocks_key(node_name, desc.model_id)
        if not desc.cache_keys:
            return {}
        napi = "api" if node_name == "local" else f"{node_name}.api"
        local_id = self.bed.local_id
        code = "[" + ", ".join(f"{napi}.CacheKey({local_id}, {req}, {model})" for req, model in desc.cache_keys) + "]"
        try:
            api = self.bed.node(node_name).api
            return {"cache_keys": Value([api.CacheKey(local_id, req, model) for req, model in desc.cache_keys],
                                        code)}
        except Exception as exc:
            raise HarnessError("CacheKey", f"{code}: {describe_exception(exc)}") from exc

    def blocks_key(self, node_name: str, model_id: int) -> dict[str, Value]:
        napi = "api" if node_name == "local" else f"{node_name}.api"
        cluster = self.bed.cluster_of(node_name)
        code = f"{napi}.BlocksCacheKey({cluster}, {model_id})"
        try:
            return {"blocks_cache_key": Value(self.bed.node(node_name).api.BlocksCacheKey(cluster, model_id), code)}
        except Exception as exc:
            raise HarnessError("BlocksCacheKey", f"{code}: {describe_exception(exc)}") from exc

    def alloc(self, name: str, node_name: str, placement: str, total: int) -> int:
        return int(self.bed.rec.let(f"{name}_mem", f"{node_name}.alloc_memory({placement!r}, {total})").obj)

    def fill(self, info: CacheInfo, data_name: str, data: list[np.ndarray]) -> None:
        node = Value(self.bed.node(info.node_name), info.node_name)
        step(f"write_tensor ({info.name})", self.bed.rec.loop, f"enumerate({data_name})", "i, d", node,
             # a copy: a backend that kept the array it was given must not change our snapshot
             "write_tensor", lambda i: (Value(info.cache, info.name), Value(i, "i"), Value(data[i].copy(), "d")),
             info.num_tensors)
        self.bed.before[info.name] = data

    def fill_random(self, info: CacheInfo) -> list[np.ndarray]:
        rec = self.bed.rec
        rec.let("rng", f"np.random.default_rng({self.bed.seed})")
        data = list(rec.let(f"{info.name}_data", f"rng.integers(0, 256, ({info.num_tensors}, {info.nbytes}), "
                                                  "dtype=np.uint8)").obj)
        self.fill(info, f"{info.name}_data", data)
        return data

    def fill_sentinel(self, info: CacheInfo) -> list[np.ndarray]:
        data = list(self.bed.rec.let(f"{info.name}_data", f"np.full(({info.num_tensors}, {info.nbytes}), "
                                                           f"{SENTINEL:#04x}, dtype=np.uint8)").obj)
        self.fill(info, f"{info.name}_data", data)
        return data

"""The arguments of a testbed's push: the scenario's baseline call with a case's value-language overrides, decoded
against the testbed's nodes and caches."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING

from ..inputs.values import DecodeContext, Deferred, SpecValueError, Value, decode
from ..spec import CacheSpec
from ..spec.value_language import CacheIdRef, ClusterRef, KeyOf, Lit, ValueExpr
from .errors import step

if TYPE_CHECKING:
    from ..judging.judged_push import Push
    from .testbed import Testbed


class CallBuilder:
    """The arguments of a push ``bed`` makes (and the extra caches a value names: a blocks cache per placement),
    against the push's nodes and caches."""

    def __init__(self, bed: Testbed) -> None:
        self.bed = bed
        self.extra: dict[str, Value] = {}

    def context(self, push: Push, tnpl: int) -> DecodeContext:
        bed, src, dst = self.bed, push.src, push.dst
        assert src is not None and dst is not None
        src_id, dst_id = (int(getattr(info.cache, "cache_id", 0)) for info in (src, dst))
        remote_side = bed.run.spec.operation.remote_side
        remote_id = dst_id if remote_side == "dst" else src_id
        return DecodeContext(api=bed.api, num_layers=src.num_tensors // tnpl, num_tensors=src.num_tensors,
                             batch_size=src.batch, local_id=bed.local_id, remote_id=bed.remote_id,
                             unlinked_id=max(bed.local_id, bed.remote_id) + 1, dst_cache_id=dst_id,
                             unknown_cache_id=remote_id + 1000, cache_lookup=partial(self.cache_value, push),
                             dst_name=dst.name, src_cache_id=src_id, src_name=src.name, remote_side=remote_side)

    def cache_value(self, push: Push, name: str, placement: str | None) -> Value:
        bed, src = self.bed, push.src
        if name == "src":
            assert src is not None
            return Value(src.cache, src.name)
        if name in ("dst", "dst_remote_object"):
            assert push.dst is not None
            return Value(push.dst.cache, push.dst.name)
        if name == "blocks":
            mine = src if bed.run.spec.operation.local_side == "src" else push.dst
            assert mine is not None
            where = placement or mine.placement
            key = f"blocks_{where}"
            if key not in self.extra:
                desc = CacheSpec(mine.num_tensors, tuple(mine.shape), mine.data_type, where)
                cache = step("allocate_blocks_cache", bed.rec.invoke, key, Value(push.local, push.local_name),
                             "cache_manager.allocate_blocks_cache", bed.desc_value(push.local_name, desc))
                self.extra[key] = Value(cache, key)
            return self.extra[key]
        raise SpecValueError(f"unknown cache {name!r}")

    def key_entry(self, values: Mapping[str, Value]) -> int | None:
        """The remote cache's batch entry the call's key names: a CacheKeyByIdAndIndex's batch index, or the
        entry a CacheKey (req_id, model_id) was bound to when the scenario made the remote cache (its
        ``cache_keys``, bound to entries 0, 1, ...); None for another key, or one bound to no entry."""
        op = self.bed.run.spec.operation
        key = values[op.key].obj if op.key in values else None
        if not isinstance(key, Deferred):
            return None
        record = self.bed.types.records.get(key.kind or "")  # the key type's fields, in constructor order
        named = dict(zip(record.fields if record is not None else (), key.args, strict=False)) | key.kwargs
        if key.kind == "CacheKeyByIdAndIndex":
            batch = named.get("batch_index", 0)
            return batch if isinstance(batch, int) else None
        if key.kind == "CacheKey":
            remote = self.bed.scenario.src if op.remote_side == "src" else self.bed.scenario.dst
            bound = (named.get("req_id"), named.get("model_id", 0))
            return remote.cache_keys.index(bound) if bound in remote.cache_keys else None
        return None

    def tnpl_for(self, call: Mapping[str, ValueExpr]) -> int:
        """The call's tensor_num_per_layer when it is a positive int literal, else the release's default."""
        default = self.bed.default_tnpl
        t = call.get("tensor_num_per_layer")
        value = t.value if isinstance(t, Lit) else default
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default

    def values(self, push: Push, args: Mapping[str, ValueExpr] | None = None, *,
               only_given: bool = False) -> dict[str, Value]:
        """The baseline call (scenario ``call``) of ``push`` with ``args`` overriding it, resolved.  Baseline
        values are passed only for parameters the release's signature has; ``only_given`` leaves out every
        parameter ``args`` does not name (except the key and the local cache, the spec's ``operation`` names
        them), so the callee's defaults apply."""
        bed, src = self.bed, push.src
        op = bed.run.spec.operation
        assert push.dst is not None and src is not None
        args = dict(args or {})
        base = {} if only_given else dict(bed.scenario.call)
        merged = {**base, **args}
        ctx = self.context(push, self.tnpl_for(merged))
        values: dict[str, Value] = {}
        if op.key in args or op.key in bed.scenario.call:
            values[op.key] = decode({**bed.scenario.call, **args}[op.key], ctx)
        else:
            # the baseline key of a batch transfer: the remote node, the remote side's cache, the call's entry
            assert op.key_entries is not None, f"the baseline call of {op.unit} transfers names its key"
            batch = decode(merged.get(op.key_entries, Lit(0)), ctx)
            values[op.key] = decode(KeyOf("CacheKeyByIdAndIndex", None, (), ClusterRef("remote"),
                                          CacheIdRef(op.remote_side), Lit(batch.obj)), ctx)
        local = src if op.local_side == "src" else push.dst
        values[op.cache] = decode(args[op.cache], ctx) if op.cache in args else Value(local.cache, local.name)
        for name in bed.all_params:
            if name in values:
                continue
            if name in args or (name in base and name in bed.params):
                values[name] = decode(merged[name], ctx)
        # keywords the operation does not declare (signature clauses); a batch entry in the key is not one
        for name, expr in args.items():
            if name not in values and name != op.key_entries:
                values[name] = decode(expr, ctx)
        return values

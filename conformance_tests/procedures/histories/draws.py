"""What a history draws, from the spec's domains: its nodes (cluster ids over their documented domain, roles, a
configuration per node), its caches (layouts drawn like the clause streams', real models' KV caches, memory at
uneven offsets), their contents (random bytes beside every special bit pattern of their DataType) and the ids a
key names.  Each is a hypothesis draw, so a failing history shrinks.  Some are at the domains' edges by
construction, not by luck: a layout of every DataType whose every batch entry holds all of its special patterns
(:func:`tour_desc`), the real models with the most tensors and the largest batch entry (:func:`edge_models`), ids
agreeing with a known one in their low bits at every common field width, and the domain's ends
(:func:`unknown_ids`)."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ...inputs import bitpatterns, strategies
from ...spec import CacheSpec, Spec
from ...spec.model import Bounds, Histories, HistoryStream, ModelLayout
from .bed import contents_code
from .world import CacheState, NodeState

#: the options every history node gets besides its own drawn configuration (the cache manager on, remote access
#: on: two nodes link only when they agree on it, facts §1.3 "Link-time check")
NODE_OPTIONS = {"llm.EnableCacheManager": "1", "llm.EnableRemoteCacheAccessible": "1"}
#: the smallest bit width a narrow integer field is tried at (ids that agree with another in their low bits)
NARROWEST_FIELD_BITS = 8
#: the widths integer fields most often have (tried first, beside any other)
COMMON_FIELD_BITS = (32, 16, 8)
#: a batch entry holds its DataType's special patterns in at most this share of its elements (random bytes beside)
SPECIAL_SHARE = 2


@st.composite
def alias(draw: Any, values: Sequence[int], bounds: Bounds) -> int:
    """A value that agrees with one of ``values`` in its low bits: it ± 2**b for a field width b from 8 bits up
    to the domain's, inside the domain (a backend that keeps an id in a narrower field confuses them)."""
    bits = max(NARROWEST_FIELD_BITS + 1, (bounds.max - bounds.min).bit_length())
    value = draw(st.sampled_from(list(values)), label="like")
    common = [w for w in COMMON_FIELD_BITS if NARROWEST_FIELD_BITS <= w < bits]
    width = draw(st.one_of(st.sampled_from(common), st.integers(NARROWEST_FIELD_BITS, bits - 1)) if common
                 else st.integers(NARROWEST_FIELD_BITS, bits - 1), label="field bits")
    sign = draw(st.sampled_from([1, -1]), label="sign")
    got = value + sign * (1 << width)
    return got if bounds.min <= got <= bounds.max else value - sign * (1 << width)


def in_domain(bounds: Bounds, used: Sequence[int] = ()) -> st.SearchStrategy[int]:
    """Any value of the domain: one aliasing a ``used`` one in a narrower field, its extremes, or any other."""
    edges = sorted({bounds.min, bounds.max, max(bounds.min, min(bounds.max, 0)), max(bounds.min, min(bounds.max, -1))})
    options: list[st.SearchStrategy[int]] = [st.sampled_from(edges), uniform(bounds)]
    if used:
        options.insert(0, alias(list(used), bounds).filter(lambda v: bounds.min <= v <= bounds.max))
    return st.one_of(*options)


@st.composite
def nodes(draw: Any, hist: Histories, roles: Sequence[str], stream: HistoryStream, least: int = 0,
          first_timeouts: Sequence[int | None] = ()) -> list[NodeState]:
    """2 to N nodes (``least`` at least, as far as the domain goes): distinct cluster ids over the whole domain (some
    aliasing others' low bits), a role each, and options of their own: llm.SyncKvCacheWaitTime over its domain
    (half of the nodes within what the stream may wait; the first nodes' ``first_timeouts`` where given, None:
    drawn), pools of
    their own size and page_shift (at least one page in the pool)."""
    count = draw(st.integers(min(hist.nodes.max, max(least, hist.nodes.min)), hist.nodes.max), label="nodes")
    ids: list[int] = []
    for _ in range(count):
        cid = draw(in_domain(hist.cluster_id, ids).filter(lambda c: c not in ids), label="cluster_id")
        ids.append(cid)
    t = hist.sync_kv_timeout_ms
    out = []
    for i, cid in enumerate(ids):
        given = first_timeouts[i] if i < len(first_timeouts) else None
        timeout = given if given is not None else draw(
            st.one_of(st.sampled_from(timeout_ladder(t, stream.wait_ms)), uniform(t)), label="timeout_ms")
        options = {**NODE_OPTIONS, "llm.SyncKvCacheWaitTime": str(timeout)}
        for option in ("llm.MemPoolConfig", "llm.HostMemPoolConfig"):
            size = stream.bytes if stream.bytes is not None and stream.layouts == "models" else draw(
                st.integers(hist.pool_bytes.min, hist.pool_bytes.max), label="pool bytes")
            top = min(hist.pool_page_shift.max, max(hist.pool_page_shift.min, size.bit_length() - 1))
            shift = draw(st.integers(hist.pool_page_shift.min, top), label="page_shift")
            options[option] = json.dumps({"memory_size": size, "page_shift": shift})
        out.append(NodeState(i, f"n{i}", cid, draw(st.sampled_from(list(roles)), label="role"), timeout, options))
    return out


def uniform(bounds: Bounds) -> st.SearchStrategy[int]:
    """A value spread evenly over the domain (hypothesis leans to small integers; a timeout of the domain is
    mostly far above the default), drawn as a seed."""
    return st.integers(0, 2**16).map(lambda s: random.Random(s).randint(bounds.min, bounds.max))


def timeout_ladder(bounds: Bounds, wait_ms: int) -> list[int]:
    """Timeouts a history can put delays on both sides of within what it may wait (``wait_ms``): twice it (a
    delay of all of it stays within), half and a quarter of it (a delay past them costs it), then the domain's
    ends; inside the domain."""
    ladder = [2 * wait_ms, wait_ms // 2, wait_ms // 4, bounds.min, bounds.max] if wait_ms else [bounds.min, bounds.max]
    return list(dict.fromkeys(min(bounds.max, max(bounds.min, v)) for v in ladder))


def fits(model: ModelLayout, itemsize: int, max_bytes: int | None) -> bool:
    return max_bytes is None or model.num_tensors * math.prod(model.shape) * itemsize <= max_bytes


def fresh_desc(draw: Any, spec: Spec, dom: strategies.Domain, stream: HistoryStream,
               max_bytes: int | None) -> tuple[CacheSpec, int]:
    """A new cache's description and its layers' tensor count: a layout drawn like the clause streams' (every
    documented DataType, rank, batch and tensor count), or a real model's KV cache."""
    if stream.layouts == "models":
        hist = spec.generation.histories if spec.generation is not None else None
        models = [m for m in (hist.model_layouts if hist else ()) if m.data_type in dom.itemsize
                  and fits(m, dom.itemsize[m.data_type], max_bytes)]
        return model_desc(draw, draw(st.sampled_from(models), label="model"), dom)
    side, tnpl = draw(strategies.cache_side(dom), label="cache")
    return side.desc(), tnpl


def model_desc(draw: Any, model: ModelLayout, dom: strategies.Domain) -> tuple[CacheSpec, int]:
    """A real model's KV cache in a placement some transfer of the domain has, and its layers' tensor count."""
    placement = draw(st.sampled_from(sorted({p for pair in dom.transfers for p in pair})), label="placement")
    return CacheSpec(model.num_tensors, model.shape, model.data_type, placement), model.tensors_per_layer


def edge_models(hist: Histories, dom: strategies.Domain, max_bytes: int | None) -> list[ModelLayout]:
    """The real models at the edges of the spec's model layouts (of those the backend holds): the most tensors
    and the largest batch entry of one tensor (a backend keeping a tensor index or a copy's byte count in a
    narrow field fails there)."""
    models = [m for m in hist.model_layouts if m.data_type in dom.itemsize
              and fits(m, dom.itemsize[m.data_type], max_bytes)]
    if not models:
        return []
    most = max(models, key=lambda m: m.num_tensors)
    widest = max(models, key=lambda m: math.prod(m.shape[1:]) * dom.itemsize[m.data_type])
    return list(dict.fromkeys([most, widest]))


def special_count(spec: Spec, data_type: str) -> int:
    """How many special patterns a DataType's elements have."""
    size, pattern = _patterns(spec, data_type)
    return len(pattern) // size


def _patterns(spec: Spec, data_type: str) -> tuple[int, bytes]:
    table = spec.types.enums.get("DataType")
    member = table.members.get(data_type) if table is not None else None
    size = member.size if member is not None and member.size else 1
    return size, bitpatterns.pattern_bytes(member.encoding if member else None, size, spec.types.byte_order)


def tour_desc(draw: Any, spec: Spec, dom: strategies.Domain, data_type: str) -> tuple[CacheSpec, int]:
    """A layout of ``data_type`` drawn like the clause streams', its batch entries widened (as far as the domain's
    rank and tensor bytes allow) to hold every special pattern of the type beside as many random elements."""
    side, tnpl = draw(strategies.cache_side(dom, data_type), label="cache")
    batch, inner = side.shape[0], tuple(side.shape[1:])
    want = SPECIAL_SHARE * special_count(spec, data_type)
    if math.prod(inner) < want and dom.rank[1] >= 2:
        lead = inner[:-1]
        inner = (*lead, -(-want // math.prod(lead)))
        room = dom.tensor_bytes[1] // (math.prod(inner) * dom.itemsize[data_type])
        batch = max(dom.batch[0], min(batch, room))
    return side.desc().with_(shape=(batch, *inner)), tnpl


def mirror_desc(draw: Any, src: CacheState, tnpl: int, dom: strategies.Domain, stream: HistoryStream, *,
                same_tensors: bool = False) -> CacheSpec:
    """A destination for ``src``: the same DataType and bytes per batch entry, its own batch count and shape,
    layers of ``tnpl`` tensors (as many as the source's, or more unless ``same_tensors``), a placement the
    transfer table pairs with the source's at must level."""
    info = src.info
    placements = sorted({d for s, d in dom.transfers if s == info.placement}) or [info.placement]
    placement = draw(st.sampled_from(placements), label="dst placement")
    if stream.layouts == "models":
        return CacheSpec(info.num_tensors, tuple(info.shape), info.data_type, placement)
    inner = tuple(info.shape[1:])
    reshaped = strategies.reshape(draw, inner, dom) if inner else inner
    batch = draw(st.integers(*dom.batch), label="dst batch")
    extra = 0 if same_tensors else draw(st.sampled_from([0, 0, 1, 2]), label="extra dst layers")
    return CacheSpec(info.num_tensors + extra * tnpl, (batch, *reshaped), info.data_type, placement)


def registration(draw: Any, hist: Histories, num_tensors: int) -> tuple[list[int], list[int]]:
    """Guard bytes before each tensor and after the last (uneven, so the offsets are unaligned), and the order
    of the tensors in memory (in theirs, reversed, or shuffled), from one drawn seed (a history prints it as one
    number; the script has the offsets)."""
    g = hist.guard_bytes
    how = draw(st.sampled_from(["in order", "reversed", "shuffled"]), label="tensors in memory")
    rng = np.random.default_rng(draw(st.integers(0, 255), label="registration seed"))
    gaps = [int(x) for x in rng.integers(g.min, g.max + 1, num_tensors + 1)]
    order = list(range(num_tensors))
    if how == "reversed":
        order.reverse()
    elif how == "shuffled":
        order = [int(x) for x in rng.permutation(num_tensors)]
    return gaps, order


def content_code(draw: Any, spec: Spec, desc: CacheSpec, nbytes: int, fill: int, *,
                 after: int | None = None) -> tuple[str, int]:
    """The code that builds a cache's contents, and the shift of its special patterns: random bytes, every batch
    entry of every tensor starting with its DataType's special bit patterns (all of them where the entry holds
    twice as many elements, else half of it), from pattern ``shift + tensor + entry`` on.  ``fill``: which
    fill of the history this is (from 1), which the seed and shift depend on: no two fills hold the same bytes,
    even at the simplest draws (a push between equal caches would show nothing); ``after``: the shift of the contents
    rewritten, which the new one differs from (so every batch entry changes)."""
    seed = 256 * fill + draw(st.integers(0, 255), label="data seed")
    size, pattern = _patterns(spec, desc.data_type)
    count = len(pattern) // size
    if after is None:
        shift = (fill + draw(st.integers(0, count - 1), label="patterns from")) % count
    else:
        shift = (after + draw(st.integers(1, count - 1), label="patterns shifted by")) % count
    batch = desc.shape[0] if desc.shape and desc.shape[0] > 0 and nbytes % desc.shape[0] == 0 else 1
    head = min(count, -(-(nbytes // batch // size) // SPECIAL_SHARE))
    return contents_code(seed, pattern, size, shift, head, desc.num_tensors, batch, nbytes), shift


def unknown_ids(bounds: Bounds, like: int, used: Collection[int]) -> list[int]:
    """Ids no cache of a server ever had, over the whole domain: ones agreeing with ``like`` (a cache it has) in
    their low w bits for every common field width w (``like`` ± 2**w, inside the domain), and the domain's ends."""
    out = []
    for width in COMMON_FIELD_BITS:
        out += [v for v in (like + (1 << width), like - (1 << width)) if bounds.min <= v <= bounds.max][:1]
    return [v for v in dict.fromkeys([*out, bounds.min, bounds.max]) if v not in used]

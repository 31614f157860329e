"""push_blocks, pull_cache and pull_blocks across processes against the in-process reference: one sequence of
calls (successes and the documented refusals) run on both, in normal and in vendor mode, must give the same
outcome at every step (exception type, status code) and the same bytes in every live cache after it.

The expected outcome of each step is written beside it too, so a refusal that both sides stopped making (or a
success both stopped making) fails here as well, not only a difference between them."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from nodehost.backend import reference as mp_reference
from nodehost.backend import reference_vendor as mp_vendor
from reference_impl.backend import backend as ref_backend
from reference_impl.backend import vendor_backend as ref_vendor
from tests.helpers.data import fill_random, snapshot
from tests.helpers.nodes import clusters

MODEL = 7
REQ = 5
#: what a step ends with: "ok", an exception class name, or "LLMException:" and its LLMStatusCode name
Outcome = str
#: (label, call, expected outcome[, expected outcome in vendor mode, where it departs])
Step = tuple[Any, ...]


def _env(make: Callable[..., Any]) -> SimpleNamespace:
    """Nodes 1 -> 2, each with a contiguous cache (4 tensors, 3 batches of 32 bytes; node 2's batches 0 and 1 bound
    to CacheKey(2, REQ + 10, MODEL) and CacheKey(2, REQ, MODEL)) and a blocks cache (4 tensors, 5 blocks of 16 bytes) bound to BlocksCacheKey(id, MODEL),
    all filled with random bytes before the link's first transfer."""
    cluster = make()
    a, b = cluster.node(1), cluster.node(2)
    api = a.api
    contiguous = api.CacheDesc(4, [3, 16], api.DataType.DT_FLOAT16, api.Placement.DEVICE)
    blocks = api.CacheDesc(4, [5, 8], api.DataType.DT_FLOAT16, api.Placement.DEVICE)
    ns = SimpleNamespace(api=api, cm=a.cache_manager, remote=b, remote_cm=b.cache_manager, contiguous=contiguous,
                         caches=[])
    for seed, (node, cid) in enumerate(((a, 1), (b, 2))):
        cm = node.cache_manager
        keys = [api.CacheKey(2, REQ + 10, MODEL), api.CacheKey(2, REQ, MODEL)] if cid == 2 else []
        c = cm.allocate_cache(contiguous, keys)
        k = cm.allocate_blocks_cache(blocks, api.BlocksCacheKey(cid, MODEL))
        fill_random(node, c, seed=10 + seed)
        fill_random(node, k, seed=20 + seed)
        ns.caches += [(node, c), (node, k)]
        setattr(ns, f"c{cid}", c)
        setattr(ns, f"k{cid}", k)
    return ns


def _by_id(ns: SimpleNamespace, cache: Any, batch: int = 0, cluster: int = 2) -> Any:
    return ns.api.CacheKeyByIdAndIndex(cluster, cache.cache_id, batch)


def _blocks_key(ns: SimpleNamespace, cluster: int = 2, model: int = MODEL) -> Any:
    return ns.api.BlocksCacheKey(cluster, model)


def _bound_after_the_sync(ns: SimpleNamespace) -> None:
    """A remote cache bound to a CacheKey after the link's table was synced, pulled by that key: a CacheKey names
    its source in the live key table (by id it would not be visible)."""
    late = ns.remote_cm.allocate_cache(ns.contiguous, [ns.api.CacheKey(2, REQ + 20, MODEL)])
    fill_random(ns.remote, late, seed=30)
    ns.caches.append((ns.remote, late))
    ns.cm.pull_blocks(ns.api.CacheKey(2, REQ + 20, MODEL), ns.k1, [], [0])


#: the sequence: successes first (each changes bytes the next ones read), then the refusals, the freed source last
STEPS: list[Step] = [
    ("push_blocks B2B", lambda ns: ns.cm.push_blocks(_blocks_key(ns), ns.k1, [0, 3], [4, 1]), "ok"),
    ("push_blocks one layer", lambda ns: ns.cm.push_blocks(_blocks_key(ns), ns.k1, [2], [2], range(1, 2),
                                                          range(1, 2)), "ok"),
    ("pull_cache by id", lambda ns: ns.cm.pull_cache(_by_id(ns, ns.c2, 1), ns.c1, 2), "ok"),
    ("pull_cache layers differ", lambda ns: ns.cm.pull_cache(_by_id(ns, ns.c2, 0), ns.c1, 0,
                                                             src_layer_range=range(0, 1),
                                                             dst_layer_range=range(1, 2)), "ok"),
    ("pull_cache size", lambda ns: ns.cm.pull_cache(_by_id(ns, ns.c2, 2), ns.c1, 1, 16), "ok"),
    ("pull_blocks B2B", lambda ns: ns.cm.pull_blocks(_blocks_key(ns), ns.k1, [1, 4], [0, 2]), "ok"),
    ("pull_blocks C2B by id", lambda ns: ns.cm.pull_blocks(_by_id(ns, ns.c2, 2), ns.k1, [], [3, 1]), "ok"),
    ("pull_blocks C2B by CacheKey", lambda ns: ns.cm.pull_blocks(ns.api.CacheKey(2, REQ, MODEL), ns.k1, [], [4]),
     "ok"),
    ("pull_blocks by a CacheKey bound after the sync", _bound_after_the_sync, "ok"),
    ("push_blocks None key", lambda ns: ns.cm.push_blocks(None, ns.k1, [0], [0]), "TypeError", "AttributeError"),
    ("push_blocks tnpl over the tensors", lambda ns: ns.cm.push_blocks(_blocks_key(ns), ns.k1, [0], [0],
                                                                      tensor_num_per_layer=8),
     "LLMException:LLM_PARAM_INVALID", "ok"),
    ("push_blocks key type", lambda ns: ns.cm.push_blocks(_by_id(ns, ns.k2), ns.k1, [0], [0]), "TypeError"),
    ("push_blocks contiguous source", lambda ns: ns.cm.push_blocks(_blocks_key(ns), ns.c1, [0], [0]),
     "LLMException:LLM_PARAM_INVALID"),
    ("push_blocks no dst blocks", lambda ns: ns.cm.push_blocks(_blocks_key(ns), ns.k1, [0], []), "LLMException:LLM_PARAM_INVALID"),
    ("push_blocks dst block out of range", lambda ns: ns.cm.push_blocks(_blocks_key(ns), ns.k1, [0], [5]),
     "LLMException:LLM_PARAM_INVALID"),
    ("push_blocks empty src blocks", lambda ns: ns.cm.push_blocks(_blocks_key(ns), ns.k1, [], [0]),
     "LLMException:LLM_PARAM_INVALID"),
    ("push_blocks unequal lists", lambda ns: ns.cm.push_blocks(_blocks_key(ns), ns.k1, [0, 1], [0]),
     "LLMException:LLM_PARAM_INVALID"),
    ("push_blocks src block out of range", lambda ns: ns.cm.push_blocks(_blocks_key(ns), ns.k1, [5], [0]),
     "LLMException:LLM_PARAM_INVALID"),
    ("push_blocks unknown model", lambda ns: ns.cm.push_blocks(_blocks_key(ns, model=99), ns.k1, [0], [0]),
     "LLMException:LLM_KV_CACHE_NOT_EXIST"),
    ("push_blocks not linked", lambda ns: ns.cm.push_blocks(_blocks_key(ns, cluster=9), ns.k1, [0], [0]),
     "LLMException:LLM_NOT_YET_LINK"),
    ("pull_cache CacheKey with the flag on", lambda ns: ns.cm.pull_cache(ns.api.CacheKey(2, REQ, MODEL), ns.c1),
     "TypeError"),
    ("pull_cache into blocks", lambda ns: ns.cm.pull_cache(_by_id(ns, ns.c2), ns.k1), "LLMException:LLM_PARAM_INVALID"),
    ("pull_cache size 0", lambda ns: ns.cm.pull_cache(_by_id(ns, ns.c2), ns.c1, 0, 0), "LLMException:LLM_PARAM_INVALID"),
    ("pull_cache local batch", lambda ns: ns.cm.pull_cache(_by_id(ns, ns.c2), ns.c1, 3), "LLMException:LLM_PARAM_INVALID"),
    ("pull_cache size over stride", lambda ns: ns.cm.pull_cache(_by_id(ns, ns.c2), ns.c1, 0, 33),
     "LLMException:LLM_PARAM_INVALID"),
    ("pull_cache own cluster", lambda ns: ns.cm.pull_cache(_by_id(ns, ns.c1, cluster=1), ns.c1), "LLMException:LLM_PARAM_INVALID"),
    ("pull_cache unknown id", lambda ns: ns.cm.pull_cache(ns.api.CacheKeyByIdAndIndex(2, 999, 0), ns.c1),
     "LLMException:LLM_KV_CACHE_NOT_EXIST"),
    ("pull_cache from blocks", lambda ns: ns.cm.pull_cache(_by_id(ns, ns.k2), ns.c1), "LLMException:LLM_PARAM_INVALID"),
    ("pull_cache remote batch", lambda ns: ns.cm.pull_cache(_by_id(ns, ns.c2, 3), ns.c1), "LLMException:LLM_PARAM_INVALID"),
    ("pull_cache src tensor out of range", lambda ns: ns.cm.pull_cache(_by_id(ns, ns.c2), ns.c1,
                                                                       src_layer_range=range(1, 3),
                                                                       dst_layer_range=range(0, 2)),
     "LLMException:LLM_PARAM_INVALID"),
    ("pull_blocks into contiguous", lambda ns: ns.cm.pull_blocks(_blocks_key(ns), ns.c1, [0], [0]),
     "LLMException:LLM_PARAM_INVALID"),
    ("pull_blocks B2B no src blocks", lambda ns: ns.cm.pull_blocks(_blocks_key(ns), ns.k1, [], [0]),
     "LLMException:LLM_PARAM_INVALID"),
    ("pull_blocks dst block out of range", lambda ns: ns.cm.pull_blocks(_blocks_key(ns), ns.k1, [0], [5]),
     "LLMException:LLM_PARAM_INVALID"),
    ("pull_blocks unequal lists", lambda ns: ns.cm.pull_blocks(_blocks_key(ns), ns.k1, [0, 1], [0]),
     "LLMException:LLM_PARAM_INVALID"),
    ("pull_blocks src block out of range", lambda ns: ns.cm.pull_blocks(_blocks_key(ns), ns.k1, [5], [0]),
     "LLMException:LLM_PARAM_INVALID"),
    ("pull_blocks B2B from contiguous", lambda ns: ns.cm.pull_blocks(_by_id(ns, ns.c2), ns.k1, [0], [0]),
     "LLMException:LLM_PARAM_INVALID"),
    ("pull_blocks C2B too many blocks", lambda ns: ns.cm.pull_blocks(_by_id(ns, ns.c2), ns.k1, [], [0, 1, 2]),
     "LLMException:LLM_PARAM_INVALID"),
    ("pull_blocks unknown CacheKey", lambda ns: ns.cm.pull_blocks(ns.api.CacheKey(2, REQ + 1, MODEL), ns.k1, [],
                                                                 [0]), "LLMException:LLM_KV_CACHE_NOT_EXIST"),
    ("pull_cache from a freed cache", lambda ns: (ns.remote_cm.deallocate_cache(ns.c2), ns.caches.pop(2),
                                                  ns.cm.pull_cache(_by_id(ns, ns.c2), ns.c1)),
     "LLMException:LLM_KV_CACHE_NOT_EXIST"),
]


def _expected(step: Step, vendor: bool) -> Outcome:
    return str(step[3] if vendor and len(step) > 3 else step[2])


def _outcome(step: Callable[[SimpleNamespace], Any], ns: SimpleNamespace) -> Outcome:
    try:
        step(ns)
    except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
        code = getattr(exc, "status_code", None)
        return f"{type(exc).__name__}:{code.name}" if code is not None else type(exc).__name__
    return "ok"


#: the nodes' llm.SyncKvCacheWaitTime in the script
SCRIPT_TIMEOUT_MS = 10_000


def _run(backend: Any) -> tuple[list[tuple[str, Outcome, list[list[bytes]]]], list[list[bytes]]]:
    """(step, outcome, bytes of every live cache) after each step of STEPS on a fresh cluster of ``backend``, and
    the bytes before the first."""
    def everything() -> list[list[bytes]]:
        return [[np.asarray(t).tobytes() for t in snapshot(node, cache)] for node, cache in ns.caches]

    # no step waits on a timeout: a budget far above a transfer's, so that a loaded machine (CI runs this beside
    # the mutants) does not time a valid transfer out in one backend and not the other
    with clusters(backend, timeout_ms=SCRIPT_TIMEOUT_MS) as make:
        ns = _env(make)
        out = [("start", "ok", everything())]
        for label, step, *_ in STEPS:
            outcome = _outcome(step, ns)
            out.append((label, outcome, everything()))
    return out[1:], out[0][2]


def _compare(reference: Any, multiprocess: Any, vendor: bool) -> None:
    (want, start), (got, _) = _run(reference), _run(multiprocess)
    expected = [(step[0], _expected(step, vendor)) for step in STEPS]
    assert [(label, o) for label, o, _ in want] == expected, "the in-process reference left the script"
    for (label, o_ref, b_ref), (_, o_mp, b_mp) in zip(want, got, strict=True):
        assert o_mp == o_ref, f"{label}: the multi-process reference says {o_mp}, the in-process one {o_ref}"
        diff = [(c, t) for c, (x, y) in enumerate(zip(b_ref, b_mp, strict=True))
                for t, (p, q) in enumerate(zip(x, y, strict=True)) if p != q]
        assert not diff, f"{label}: bytes differ in (cache, tensor) {diff}"
    befores = [start] + [b for _, _, b in want[:-1]]
    still = [label for (label, _, after), before, step in zip(want, befores, STEPS, strict=True)
             if step[2] == "ok" and after == before]
    assert not still, f"successes that moved no bytes: {still}"


def test_siblings_across_processes_match_the_in_process_reference() -> None:
    _compare(ref_backend, mp_reference, vendor=False)


def test_siblings_in_vendor_mode_match() -> None:
    _compare(ref_vendor, mp_vendor, vendor=True)


@pytest.mark.parametrize("name", ["push_blocks", "pull_cache", "pull_blocks"])
def test_the_node_host_forwards_the_siblings_with_their_signatures(name: str) -> None:
    import inspect

    from reference_impl.cache_manager import CacheManager

    with clusters(mp_reference) as make:
        cm = make().node(1).cache_manager
        want = [p for p in inspect.signature(getattr(CacheManager, name)).parameters if p != "self"]
        assert list(inspect.signature(getattr(cm, name)).parameters) == want

"""The testbed: one scenario opened on a backend — cluster, nodes, caches, memory and guard bands.

It reaches a backend only through the protocol (:mod:`conformance_tests.backend`) and makes every backend
call through a :class:`~conformance_tests.recorder.Recorder`, so a failing test's reproduction is the log of
what it did.  It keeps a snapshot of every live cache, every guard band and every freed region, so a check
can ask what changed anywhere, on any node.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from .backend import call_each, capability_supported
from .context import RunContext
from .coverage import push_keys
from .deadlines import Hung
from .errors import HarnessError
from .isolation.executor import BackendLost
from .oracle import CacheLayout, diff
from .push_features import features
from .recorder import Recorder, lit
from .spec import CacheSpec, Fault, Scenario
from .spec.value_language import CacheIdRef, ClusterRef, KeyOf, Lit, ValueExpr
from .values import ABSENT, DecodeContext, Deferred, SpecValueError, Value, decode, materialise

SENTINEL = 0xA5
GUARD = 0xCC
GUARD_BYTES = 64
#: how long closing a cluster may take before the test goes on without it
CLOSE_BOUND_S = 10.0


def describe_exception(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    text = str(exc).splitlines()[0] if str(exc) else ""
    if len(text) > 200:
        text = text[:200] + "…"
    extra = f" status_code={status}" if status is not None else ""
    return f"{type(exc).__name__}({text!r}){extra}"


def missing_capabilities(caps: Mapping[str, Any], requires: Sequence[str]) -> list[str]:
    return [r for r in requires if not capability_supported(caps, r)]


T = TypeVar("T")


def _by_node(items: Iterable[T], node_of: Callable[[T], str]) -> dict[str, list[T]]:
    """``items`` grouped by their node, each group in the order given."""
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(node_of(item), []).append(item)
    return groups


@dataclass(frozen=True)
class Span:
    """Memory a check reads: a guard band (``freed`` None) or a tensor's freed memory (the Freed it belongs to)."""

    node_name: str
    addr: int
    nbytes: int
    where: str
    freed: Freed | None


@dataclass
class CacheInfo:
    name: str
    node_name: str
    cache: Any
    layout: CacheLayout
    data_type: str
    placement: str
    guarded: list[int] | None = None  # tensor addresses inside guard bands (registered memory)
    region: tuple[int, int] | None = None  # (address, bytes) of the registered region, guard bands included
    made: str = ""  # how make_cache made it (coverage/setup_inputs.py MADE_WAYS; blocks caches: allocate_blocks)

    @property
    def num_tensors(self) -> int:
        return self.layout.num_tensors

    @property
    def nbytes(self) -> int:
        return self.layout.nbytes

    @property
    def stride(self) -> int:
        return self.layout.stride

    @property
    def batch(self) -> int:
        return self.layout.batch

    @property
    def shape(self) -> list[int]:
        return list(self.layout.shape)


@dataclass
class Call:
    values: dict[str, Value]  # argument name -> decoded value (ABSENT values are left out)
    positional: bool = False

    @property
    def code(self) -> str:
        parts = [v.code if self.positional else f"{k}={v.code}" for k, v in self.values.items() if v.obj is not ABSENT]
        return f"local.cache_manager.push_cache({', '.join(parts)})"

    def build(self) -> tuple[list[Any], dict[str, Any]]:
        items = [(k, materialise(v.obj)) for k, v in self.values.items() if v.obj is not ABSENT]
        if self.positional:
            return [v for _, v in items], {}
        return [], dict(items)

    def raw(self) -> dict[str, Any]:
        """The arguments as plain values for the oracle (the key's batch index as ``dst_batch_index``)."""
        out = {k: v.obj for k, v in self.values.items() if v.obj is not ABSENT}
        key = out.get("dst_cache_key")
        out["dst_batch_index"] = key.args[2] if isinstance(key, Deferred) and len(key.args) >= 3 else 0
        return out


@dataclass
class Outcome:
    exc: BaseException | None
    seconds: float
    phase: str = "call"  # "args": raised while building arguments; "call": raised by push_cache
    hung: bool = False
    result: Any = None
    started: float = 0.0  # time.monotonic() at the start of the call
    detail: str = ""  # what the kit did about a hang (an isolated backend's process is killed)

    def describe(self) -> str:
        if self.hung:
            return f"did not return within {self.seconds:.1f}s (hang)" + (f"; {self.detail}" if self.detail else "")
        if self.exc is None:
            return "returned normally"
        where = " while building the arguments" if self.phase == "args" else ""
        return f"raised {describe_exception(self.exc)}{where}"


@dataclass
class Freed:
    """Memory of a deallocated cache that the test still watches (registered memory only)."""

    info: CacheInfo
    addrs: list[int]
    before: list[np.ndarray] = field(default_factory=list)


def layout_key(*infos: CacheInfo | None) -> str:
    """A push's layout as the run's distinct-layouts count keys it: its caches' descriptions and memory."""
    return "->".join(f"{i.num_tensors}x{i.shape}:{i.data_type}:{i.placement}:{'reg' if i.guarded else 'alloc'}"
                     for i in infos if i is not None)


class Testbed:
    """One scenario opened on the run's backend.  ``minimal`` opens only the cluster; ``guard`` (default) puts the
    destination in registered memory with guard bands when the backend can (capabilities raw_memory and
    register_cache)."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, run: RunContext, scenario: Scenario, *, seed: int = 0, guard: bool = True,
                 minimal: bool = False, title: str = "") -> None:
        self.run = run
        self.backend = run.backend
        self.scenario = scenario
        self.caps = run.caps
        self.types = run.spec.types
        self.params = run.params
        # every parameter any release's signature names, in the spec's order (the call is written in it)
        self.all_params = run.spec.all_parameters()
        self.default_tnpl = run.default_tnpl
        self.seed = seed
        self.want_guard = guard
        self.minimal = minimal
        self.label = title  # for people only (the smoke check names itself)
        self.rec = Recorder()
        self.cluster: Any = None
        self.local: Any = None
        self.remote: Any = None
        self.api: Any = None
        self.caches: dict[str, CacheInfo] = {}
        self.before: dict[str, list[np.ndarray]] = {}
        self.freed: list[Freed] = []
        self.src: CacheInfo | None = None
        self.dst: CacheInfo | None = None
        self.local_id = scenario.local.cluster_id
        self.remote_id = scenario.remote.cluster_id
        self._extra: dict[str, Value] = {}
        self._closed = False
        self.dead: set[str] = set()  # nodes killed by an injected fault: their memory can no longer be observed
        #: while set, the caches whose bytes and guard bands a judgement reads (freed memory waits too): a long run
        #: of pushes into one destination, whose every other byte is checked once the run ends
        self.focus: frozenset[str] | None = None
        run.last_testbed = self

    # ------------------------------------------------------------------------------------------ set-up

    def _step(self, step: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HarnessError:
            raise
        except Exception as exc:
            raise HarnessError(step, describe_exception(exc)) from exc

    def open(self) -> Testbed:
        scen = self.scenario
        specs = [scen.local.protocol(), scen.remote.protocol()]
        backend = self.rec.bind("backend", self.backend)
        self.cluster = self._step("open_cluster", self.rec.invoke, "cluster", backend, "open_cluster", lit(specs))
        cluster = Value(self.cluster, "cluster")
        self.local = self._step("cluster.node", self.rec.invoke, "local", cluster, "node", lit(self.local_id))
        self.remote = self._step("cluster.node", self.rec.invoke, "remote", cluster, "node", lit(self.remote_id))
        self.api = self.rec.let("api", "local.api").obj
        if self.minimal:
            return self
        self.src = self.make_cache("src", "local", scen.src)
        self.dst = self.make_cache("dst", "remote", scen.dst, guard=self.want_guard)
        self.fill_random(self.src)
        self.fill_sentinel(self.dst)
        if scen.link:
            self.link()
        return self

    def node(self, node_name: str) -> Any:
        return self.local if node_name == "local" else self.remote

    def can_register(self) -> bool:
        return bool(self.caps.get("raw_memory")) and bool(self.caps.get("register_cache"))

    def layout(self, desc: CacheSpec) -> CacheLayout:
        size = self.types.element_size(desc.data_type)
        if size is None:
            raise HarnessError("CacheDesc", f"the spec's DataType table gives no size for {desc.data_type!r}")
        return CacheLayout(desc.num_tensors, desc.shape, size)

    def desc_value(self, node_name: str, desc: CacheSpec) -> Value:
        """``api.CacheDesc(...)`` for ``desc``, built through the node's api (and the code that builds it)."""
        napi = "api" if node_name == "local" else f"{node_name}.api"
        if node_name != "local":
            self.rec.ns.setdefault(node_name, self.node(node_name))
        extra = {} if desc.batch_dim_index is None else {"batch_dim_index": desc.batch_dim_index}
        code = (f"{napi}.CacheDesc({desc.num_tensors}, {list(desc.shape)!r}, {napi}.DataType.{desc.data_type}, "
                f"{napi}.Placement.{desc.placement}" + "".join(f", {k}={v}" for k, v in extra.items()) + ")")
        try:
            api = self.node(node_name).api
            obj = api.CacheDesc(desc.num_tensors, list(desc.shape), getattr(api.DataType, desc.data_type),
                                getattr(api.Placement, desc.placement), **extra)
        except Exception as exc:
            raise HarnessError("CacheDesc", f"{code}: {describe_exception(exc)}") from exc
        return Value(obj, code)

    def make_cache(self, name: str, node_name: str, desc: CacheSpec, *, guard: bool = False) -> CacheInfo:
        """Allocate a cache on ``node_name``, or register raw memory for it (``register`` in the desc, or
        ``guard`` on a backend that can: then guard bands surround every tensor)."""
        node = Value(self.node(node_name), node_name)
        layout = self.layout(desc)
        placement = desc.placement
        register = not desc.blocks and bool(desc.register if desc.register is not None
                                            else guard and self.can_register())
        dvalue = self.desc_value(node_name, desc)
        keys = self._cache_keys(node_name, desc)
        guarded = None
        region = None
        if register:
            if not self.can_register():
                raise HarnessError("register_cache", "the scenario registers memory, but the backend lacks "
                                                     "raw_memory/register_cache")
            # one region per cache: a guard band before, between and after its tensors (three backend calls,
            # not three per tensor)
            pad, step = GUARD_BYTES, layout.nbytes + GUARD_BYTES
            total = pad + layout.num_tensors * step
            mem = self._step("alloc_memory", self._alloc, name, node_name, placement, total)
            self._step("write_memory", self.rec.invoke, None, node, "write_memory", Value(mem, f"{name}_mem"),
                       Value(np.full(total, GUARD, dtype=np.uint8), f"np.full({total}, {GUARD:#04x}, dtype=np.uint8)"))
            addrs = [mem + pad + i * step for i in range(layout.num_tensors)]
            region = (mem, total)
            cache = self._step(f"register_cache ({name})", self.rec.invoke, name, node, "cache_manager.register_cache",
                               dvalue, Value(addrs, f"[{name}_mem + {pad} + i * {step} for i in range({len(addrs)})]"),
                               remote_accessible=lit(desc.remote_accessible), **keys)
            guarded = addrs
        else:
            method = "allocate_blocks_cache" if desc.blocks else "allocate_cache"
            cache = self._step(f"{method} ({name})", self.rec.invoke, name, node, f"cache_manager.{method}", dvalue,
                               **keys)
        made = "register" if register else "allocate_blocks" if desc.blocks else "allocate_with_keys" if keys else "allocate"
        info = CacheInfo(name, node_name, cache, layout, desc.data_type, placement, guarded, region, made)
        self.caches[name] = info
        return info

    def _cache_keys(self, node_name: str, desc: CacheSpec) -> dict[str, Value]:
        """A cache spec's ``cache_keys`` as the allocation's ``cache_keys`` argument: one
        ``CacheKey(<the local node's cluster id>, req_id, model_id)`` per entry, bound to batch entries 0, 1, ..."""
        if not desc.cache_keys:
            return {}
        napi = "api" if node_name == "local" else f"{node_name}.api"
        code = "[" + ", ".join(f"{napi}.CacheKey({self.local_id}, {req}, {model})" for req, model in desc.cache_keys) + "]"
        try:
            api = self.node(node_name).api
            return {"cache_keys": Value([api.CacheKey(self.local_id, req, model) for req, model in desc.cache_keys],
                                        code)}
        except Exception as exc:
            raise HarnessError("CacheKey", f"{code}: {describe_exception(exc)}") from exc

    def _alloc(self, name: str, node_name: str, placement: str, total: int) -> int:
        return int(self.rec.let(f"{name}_mem", f"{node_name}.alloc_memory({placement!r}, {total})").obj)

    def _fill(self, info: CacheInfo, data_name: str, data: list[np.ndarray]) -> None:
        node = Value(self.node(info.node_name), info.node_name)
        self._step(f"write_tensor ({info.name})", self.rec.loop, f"enumerate({data_name})", "i, d", node,
                   # a copy: a backend that kept the array it was given must not change our snapshot
                   "write_tensor", lambda i: (Value(info.cache, info.name), Value(i, "i"), Value(data[i].copy(), "d")),
                   info.num_tensors)
        self.before[info.name] = data

    def fill_random(self, info: CacheInfo) -> list[np.ndarray]:
        self.rec.let("rng", f"np.random.default_rng({self.seed})")
        data = list(self.rec.let(f"{info.name}_data", f"rng.integers(0, 256, ({info.num_tensors}, {info.nbytes}), "
                                                       "dtype=np.uint8)").obj)
        self._fill(info, f"{info.name}_data", data)
        return data

    def fill_sentinel(self, info: CacheInfo) -> list[np.ndarray]:
        data = list(self.rec.let(f"{info.name}_data", f"np.full(({info.num_tensors}, {info.nbytes}), {SENTINEL:#04x}, "
                                                       "dtype=np.uint8)").obj)
        self._fill(info, f"{info.name}_data", data)
        return data

    def link(self) -> None:
        self._step("cluster.link", self.rec.invoke, None, Value(self.cluster, "cluster"), "link",
                   lit(self.local_id), lit(self.remote_id))

    def unlink(self) -> None:
        self._step("cluster.unlink", self.rec.invoke, None, Value(self.cluster, "cluster"), "unlink",
                   lit(self.local_id), lit(self.remote_id))

    def inject(self, fault: Fault) -> None:
        """Inject ``fault`` on its node (a peer named by role is given as its cluster id)."""
        self._step(f"{fault.node}.inject", self.rec.invoke, None, Value(self.node(fault.node), fault.node), "inject",
                   lit(fault.protocol({"local": self.local_id, "remote": self.remote_id})))
        if fault.kind == "kill_node":
            self.dead.add(fault.node)

    def deallocate(self, name: str) -> None:
        """Free cache ``name``; with raw memory its old region stays watched (nothing may write there)."""
        info = self.caches.pop(name)
        self.before.pop(name, None)
        addrs = list(info.guarded or [])
        if not addrs and self.caps.get("raw_memory"):
            addrs = [int(a) for a in getattr(info.cache, "tensor_addrs", []) or []]
        self._step(f"deallocate_cache ({name})", self.rec.invoke, None, Value(self.node(info.node_name), info.node_name),
                   "cache_manager.deallocate_cache", Value(info.cache, name))
        self.freed.append(Freed(info, addrs))

    def watch_freed(self) -> None:
        """Snapshot the freed regions now (a cache allocated since may have reused them)."""
        spans = [(f, a) for f in self.freed for a in f.addrs]
        for f in self.freed:
            f.before = []
        for node_name, group in _by_node(spans, lambda fa: fa[0].info.node_name).items():
            for (f, _), got in zip(group, self.read_many(node_name, [(a, f.info.nbytes) for f, a in group]),
                                   strict=True):
                f.before.append(got)

    def close(self) -> None:
        if self._closed or self.cluster is None:
            return
        self._closed = True
        try:
            with self.run.deadlines.bounded(CLOSE_BOUND_S):  # looking the method up is a wait on the backend too
                close = self.cluster.close
            self.run.deadlines.call(close, bound=CLOSE_BOUND_S)
        except Exception:  # noqa: BLE001 - closing must not mask the test outcome (a hang included)
            pass

    def __enter__(self) -> Testbed:
        try:
            return self.open()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------ arguments

    def context(self, tnpl: int) -> DecodeContext:
        assert self.src is not None and self.dst is not None
        dst_id = int(getattr(self.dst.cache, "cache_id", 0))
        return DecodeContext(api=self.api, num_layers=self.src.num_tensors // tnpl, num_tensors=self.src.num_tensors,
                             batch_size=self.src.batch, local_id=self.local_id, remote_id=self.remote_id,
                             unlinked_id=max(self.local_id, self.remote_id) + 1, dst_cache_id=dst_id,
                             unknown_cache_id=dst_id + 1000, cache_lookup=self._cache_value, dst_name=self.dst.name)

    def _cache_value(self, name: str, placement: str | None) -> Value:
        if name == "src":
            assert self.src is not None
            return Value(self.src.cache, "src")
        if name == "dst_remote_object":
            assert self.dst is not None
            return Value(self.dst.cache, self.dst.name)
        if name == "blocks":
            assert self.src is not None
            where = placement or self.src.placement
            key = f"blocks_{where}"
            if key not in self._extra:
                desc = CacheSpec(self.src.num_tensors, tuple(self.src.shape), self.src.data_type, where)
                cache = self._step("allocate_blocks_cache", self.rec.invoke, key, Value(self.local, "local"),
                                   "cache_manager.allocate_blocks_cache", self.desc_value("local", desc))
                self._extra[key] = Value(cache, key)
            return self._extra[key]
        raise SpecValueError(f"unknown cache {name!r}")

    def tnpl_for(self, call: Mapping[str, ValueExpr]) -> int:
        """The call's tensor_num_per_layer when it is a positive int literal, else the release's default."""
        t = call.get("tensor_num_per_layer")
        value = t.value if isinstance(t, Lit) else self.default_tnpl
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else self.default_tnpl

    def call(self, args: Mapping[str, ValueExpr] | None = None, *, positional: bool = False,
             only_given: bool = False) -> Call:
        """The baseline call (scenario ``call``) with ``args`` overriding it, resolved.  Baseline values are
        passed only for parameters the release's signature has; ``only_given`` leaves out every parameter ``args``
        does not name (except dst_cache_key and src_cache), so the callee's defaults apply."""
        assert self.dst is not None and self.src is not None
        args = dict(args or {})
        base = {} if only_given else dict(self.scenario.call)
        merged = {**base, **args}
        ctx = self.context(self.tnpl_for(merged))
        values: dict[str, Value] = {}
        if "dst_cache_key" in args:
            values["dst_cache_key"] = decode(args["dst_cache_key"], ctx)
        else:
            # the baseline key: the remote node, the destination cache, the call's dst_batch_index
            batch = decode(merged.get("dst_batch_index", Lit(0)), ctx)
            values["dst_cache_key"] = decode(KeyOf("CacheKeyByIdAndIndex", None, (), ClusterRef("remote"),
                                                   CacheIdRef("dst"), Lit(batch.obj)), ctx)
        values["src_cache"] = decode(args["src_cache"], ctx) if "src_cache" in args else Value(self.src.cache, "src")
        for name in self.all_params:
            if name in values:
                continue
            if name in args or (name in base and name in self.params):
                values[name] = decode(merged[name], ctx)
        for name, expr in args.items():  # keywords push_cache does not declare (signature clauses)
            if name not in values and name != "dst_batch_index":
                values[name] = decode(expr, ctx)
        return Call(values, positional=positional)

    # ------------------------------------------------------------------------------------------ the call

    def push(self, call: Call, *, bound: float | None = 30.0) -> Outcome:
        """Run push_cache once (logged as the call under test); with ``bound`` a hang becomes an Outcome."""
        self.rec.lines += ["try:", f"    result = {call.code}", "except Exception as exc:  # noqa: BLE001",
                           "    outcome = exc", "else:", "    outcome = None"]
        counters = self.run.counters
        counters.push_calls += 1
        counters.layouts.add(layout_key(self.src, self.dst))
        counters.coverage |= push_keys(self.run.spec, self.run.signature, call, self.src, self.dst)
        start = time.monotonic()
        try:
            posargs, kwargs = call.build()
        except Exception as exc:  # noqa: BLE001 - building a key may raise; that is part of the outcome
            return Outcome(exc, time.monotonic() - start, phase="args", started=start)
        outcome = self._call_push(posargs, kwargs, bound, start)
        self._record(call, outcome)
        return outcome

    def _call_push(self, posargs: list[Any], kwargs: dict[str, Any], bound: float | None, start: float) -> Outcome:
        fn = self.local.cache_manager.push_cache
        try:
            if bound is None:
                result = fn(*posargs, **kwargs)
            else:
                result = self.run.deadlines.call(fn, *posargs, bound=bound, **kwargs)
        except Hung:
            return Outcome(None, time.monotonic() - start, hung=True, started=start)
        except BackendLost as exc:
            if exc.hung:
                return Outcome(None, time.monotonic() - start, hung=True, started=start, detail=str(exc))
            raise  # the backend's process died: an error row, not a verdict on push_cache
        except HarnessError:
            raise  # e.g. an answer that is not data: an error row, never an outcome to judge
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            return Outcome(exc, time.monotonic() - start, started=start)
        return Outcome(None, time.monotonic() - start, result=result, started=start)

    def _record(self, call: Call, outcome: Outcome) -> None:
        """The push's features, for the likely-cause analysis (the judge says which class they count in)."""
        push = features(call.raw(), self.src, self.dst, self.default_tnpl)
        push["returned"] = outcome.exc is None and not outcome.hung
        self.run.counters.last_push = push

    # ------------------------------------------------------------------------------------------ observations

    def read(self, info: CacheInfo) -> list[np.ndarray]:
        return self.read_caches([info])[info.name]

    def read_caches(self, infos: Sequence[CacheInfo]) -> dict[str, list[np.ndarray]]:
        """Every tensor of every cache in ``infos``, by name: one request per node where the node batches them
        (a judgement reads every live cache after every push, and a round trip to another process costs more
        than the bytes)."""
        out: dict[str, list[np.ndarray]] = {}
        for node_name, group in _by_node(infos, lambda i: i.node_name).items():
            try:
                got = call_each(self.node(node_name), "read_tensor",
                                [(info.cache, t) for info in group for t in range(info.num_tensors)])
            except Exception as exc:
                names = ", ".join(info.name for info in group)
                raise HarnessError(f"read_tensor ({names})", describe_exception(exc)) from exc
            at = 0
            for info in group:
                out[info.name] = [np.asarray(t, dtype=np.uint8).ravel() for t in got[at:at + info.num_tensors]]
                at += info.num_tensors
        return out

    def read_dst(self) -> list[np.ndarray]:
        assert self.dst is not None
        return self.read(self.dst)

    def read_src(self) -> list[np.ndarray]:
        assert self.src is not None
        return self.read(self.src)

    @property
    def src_data(self) -> list[np.ndarray]:
        return self.before.get("src", [])

    @property
    def dst_before(self) -> list[np.ndarray]:
        return self.before.get("dst", [])

    def guard_violations(self) -> list[str]:
        """Guard bands (around every tensor of every registered cache, live or freed) that changed."""
        return self._check_spans(self._guard_spans())

    def freed_violations(self) -> list[str]:
        """Freed memory (watched since it was freed) that changed."""
        return self._check_spans(self._freed_spans())

    def memory_violations(self) -> list[str]:
        """Guard bands and freed memory that changed, read together (one request per node)."""
        return self._check_spans(self._guard_spans() + self._freed_spans())

    def _guard_spans(self) -> list[Span]:
        spans: list[Span] = []
        infos = list(self.caches.values()) + [f.info for f in self.freed]
        for info in infos:
            if info.node_name in self.dead or (self.focus is not None and info.name not in self.focus):
                continue
            if info.region is None or not info.guarded:
                continue
            base, total = info.region
            guarded = info.guarded
            # every byte of the region outside the tensors is a guard byte: before the lowest tensor, between two
            # tensors in address order (the gaps may differ, the order need not be the tensors'), after the highest;
            # the bands alone are read, not the tensors between them
            order = sorted(range(len(guarded)), key=lambda t: guarded[t])
            starts = [guarded[t] - base for t in order]
            bands = [(f"before {info.name} tensor {order[0]}", 0, starts[0])]
            bands += [(f"between {info.name} tensors {order[i - 1]} and {order[i]}", starts[i - 1] + info.nbytes,
                       starts[i]) for i in range(1, len(starts))]
            bands.append((f"after {info.name} tensor {order[-1]}", starts[-1] + info.nbytes, total))
            spans += [Span(info.node_name, base + lo, hi - lo, where, None) for where, lo, hi in bands if hi > lo]
        return spans

    def _freed_spans(self) -> list[Span]:
        if self.focus is not None:
            return []
        return [Span(f.info.node_name, a, f.info.nbytes, f"freed memory of {f.info.name}", f)
                for f in self.freed if f.before and f.info.node_name not in self.dead for a in f.addrs]

    def _check_spans(self, spans: Sequence[Span]) -> list[str]:
        """Read every span (one request per node) and compare it: a guard band with the guard byte, freed memory
        with what it held when it was freed."""
        out: list[str] = []
        freed_now: dict[int, list[np.ndarray]] = {}
        for node_name, group in _by_node(spans, lambda sp: sp.node_name).items():
            for sp, got in zip(group, self.read_many(node_name, [(sp.addr, sp.nbytes) for sp in group]),
                               strict=True):
                if sp.freed is None:
                    bad = np.flatnonzero(got != GUARD)
                    if bad.size:
                        out.append(f"guard bytes {sp.where} changed: {bad.size} of {sp.nbytes} bytes, first at "
                                   f"guard offset {int(bad[0])} ({GUARD:#04x} -> {int(got[bad[0]]):#04x})")
                else:
                    freed_now.setdefault(id(sp.freed), []).append(got)
        for f in self.freed:
            if id(f) in freed_now:
                out += diff(f.before, freed_now[id(f)], f"freed memory of {f.info.name}")
        return out

    def read_many(self, node_name: str, spans: Sequence[tuple[int, int]]) -> list[np.ndarray]:
        """``read_memory`` of every (address, bytes) span, in one request where the node batches them."""
        if not spans:
            return []
        try:
            got = call_each(self.node(node_name), "read_memory", [(a, n) for a, n in spans])
            return [np.asarray(g, dtype=np.uint8).ravel() for g in got]
        except Exception as exc:
            raise HarnessError(f"{node_name}.read_memory", describe_exception(exc)) from exc

    def repro(self, header: str = "") -> str:
        return self.rec.render(self.run.target, header)



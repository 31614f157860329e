"""The testbed: one scenario opened on a backend — cluster, nodes, caches, memory and guard bands.

It reaches a backend only through the protocol (:mod:`conformance_tests.backend`) and makes every backend
call through a :class:`~conformance_tests.testbed.recorder.Recorder`, so a failing test's reproduction is the log of
what it did.  It keeps a snapshot of every live cache, every guard band and every freed region, so a check
can ask what changed anywhere, on any node.  What it does is split by concern: caches are made and filled by
:mod:`~conformance_tests.testbed.cache_making`, a push's arguments built by :mod:`~conformance_tests.testbed.call_building`, the
push made by :mod:`~conformance_tests.testbed.pushing`, guard bands and freed memory checked by
:mod:`~conformance_tests.testbed.memory_watch`; this module holds the records they share and the testbed's life.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backend import call_each, capability_supported
from ..inputs.values import ABSENT, Deferred, Value, materialise
from ..judging.differences import Difference
from ..judging.judged_push import Push
from ..judging.oracle import KEY_ENTRY, CacheLayout
from ..running.context import RunContext
from ..spec import CacheSpec, Fault, Scenario
from ..spec.value_language import ValueExpr
from .cache_making import GUARD, GUARD_BYTES, SENTINEL, CacheMaker
from .call_building import CallBuilder
from .errors import HarnessError, describe_exception, step
from .memory_watch import MemoryWatch, by_node
from .pushing import Pusher
from .recorder import Recorder, lit

#: how long closing a cluster may take before the test goes on without it
CLOSE_BOUND_S = 10.0

__all__ = ["GUARD", "GUARD_BYTES", "SENTINEL", "CacheInfo", "Call", "Freed", "Outcome", "Span", "Testbed",
           "describe_exception", "missing_capabilities"]


def missing_capabilities(caps: Mapping[str, Any], requires: Sequence[str]) -> list[str]:
    return [r for r in requires if not capability_supported(caps, r)]


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
    api: str  # the CacheManager method called (the spec's api)
    positional: bool = False
    key: str = "dst_cache_key"  # the parameter holding the remote cache's key (the spec's operation.key)
    key_entries: str | None = "dst_batch_index"  # the entries name the key's batch index stands for (operation)
    key_entry: int | None = None  # the remote cache's entry the key names, where the call builder resolved it
    by_keyword: frozenset[str] = frozenset()  # passed by keyword even in a positional call (taken by **kwargs)

    def _by_position(self, name: str) -> bool:
        return self.positional and name not in self.by_keyword

    @property
    def code(self) -> str:
        given = [(k, v) for k, v in self.values.items() if v.obj is not ABSENT]
        parts = ([v.code for k, v in given if self._by_position(k)]
                 + [f"{k}={v.code}" for k, v in given if not self._by_position(k)])
        return f"local.cache_manager.{self.api}({', '.join(parts)})"

    def build(self) -> tuple[list[Any], dict[str, Any]]:
        items = [(k, materialise(v.obj)) for k, v in self.values.items() if v.obj is not ABSENT]
        return ([v for k, v in items if self._by_position(k)],
                {k: v for k, v in items if not self._by_position(k)})

    def raw(self) -> dict[str, Any]:
        """The arguments as plain values for the oracle: the key's entry under ``key_entries`` (a batch
        transfer's remote entry) and under ``KEY_ENTRY`` (a pull of blocks from a contiguous cache's entry)."""
        out = {k: v.obj for k, v in self.values.items() if v.obj is not ABSENT}
        entry = self.key_entry
        key = out.get(self.key)
        if entry is None and isinstance(key, Deferred) and key.kind in (None, "CacheKeyByIdAndIndex"):
            entry = key.args[2] if len(key.args) >= 3 else key.kwargs.get("batch_index", 0)
        if entry is not None:
            out[KEY_ENTRY] = entry
        if self.key_entries is not None:
            out[self.key_entries] = entry if entry is not None else 0
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
        self._closed = False
        self.dead: set[str] = set()  # nodes killed by an injected fault: their memory can no longer be observed
        #: while set, the caches whose bytes and guard bands a judgement reads (freed memory waits too): a long run
        #: of pushes into one destination, whose every other byte is checked once the run ends
        self.focus: frozenset[str] | None = None
        # the testbed's concerns, each in its module (the records they build are this module's)
        self.making = CacheMaker(self, CacheInfo)
        self.calls = CallBuilder(self)
        self.pusher = Pusher(self, Outcome)
        self.memory = MemoryWatch(self, Span)
        run.last_testbed = self

    # ------------------------------------------------------------------------------------------ set-up

    def _step(self, name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return step(name, fn, *args, **kwargs)

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
        op = self.run.spec.operation  # a push reads a local cache into a remote one, a pull the other way
        self.src = self.make_cache("src", op.src_node, scen.src)
        self.dst = self.make_cache("dst", op.dst_node, scen.dst, guard=self.want_guard)
        self.fill_random(self.src)
        self.fill_sentinel(self.dst)
        if scen.link:
            self.link()
        return self

    def node(self, node_name: str) -> Any:
        return self.local if node_name == "local" else self.remote

    def aimed(self, local_name: str, remote_name: str, src: CacheInfo | None, dst: CacheInfo | None,
              call: Call | None = None) -> Push:
        """The push node ``local_name`` makes from ``src`` into ``dst`` on node ``remote_name``."""
        return Push(local_name, remote_name, self.node(local_name), self.node(remote_name), src, dst,
                    self.run.spec.api, call)

    def baseline(self) -> Push:
        """The push the testbed was set up for: from ``src`` on the local node into ``dst`` on the remote."""
        return self.aimed("local", "remote", self.src, self.dst)

    def renew_dst(self, name: str) -> CacheInfo:
        """A new destination ``name`` on the destination's node, sentinel-filled: the baseline push's from now
        on."""
        self.dst = self.make_cache(name, self.run.spec.operation.dst_node, self.scenario.dst, guard=self.want_guard)
        self.fill_sentinel(self.dst)
        return self.dst

    def can_register(self) -> bool:
        return bool(self.caps.get("raw_memory")) and bool(self.caps.get("register_cache"))

    # the making and filling of caches (cache_making.CacheMaker), as the procedures and the history bed call it

    def layout(self, desc: CacheSpec) -> CacheLayout:
        return self.making.layout(desc)

    def desc_value(self, node_name: str, desc: CacheSpec) -> Value:
        return self.making.desc_value(node_name, desc)

    def make_cache(self, name: str, node_name: str, desc: CacheSpec, *, guard: bool = False) -> CacheInfo:
        return self.making.make_cache(name, node_name, desc, guard=guard)

    def fill_random(self, info: CacheInfo) -> list[np.ndarray]:
        return self.making.fill_random(info)

    def fill_sentinel(self, info: CacheInfo) -> list[np.ndarray]:
        return self.making.fill_sentinel(info)

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

    def cluster_of(self, node_name: str) -> int:
        """The cluster id of the node the script calls ``node_name``."""
        return int(self.local_id if node_name == "local" else self.remote_id)

    def deallocate(self, name: str) -> None:
        """Free cache ``name`` (a blocks cache by deallocate_blocks_cache, which deallocate_cache refuses); with
        raw memory its old region stays watched (nothing may write there)."""
        info = self.caches.pop(name)
        self.before.pop(name, None)
        addrs = list(info.guarded or [])
        if not addrs and self.caps.get("raw_memory"):
            addrs = [int(a) for a in getattr(info.cache, "tensor_addrs", []) or []]
        method = "deallocate_blocks_cache" if info.made == "allocate_blocks" else "deallocate_cache"
        self._step(f"{method} ({name})", self.rec.invoke, None, Value(self.node(info.node_name), info.node_name),
                   f"cache_manager.{method}", Value(info.cache, name))
        self.freed.append(Freed(info, addrs))

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

    # ------------------------------------------------------------------------------------------ the call

    def call(self, args: Mapping[str, ValueExpr] | None = None, *, positional: bool = False,
             only_given: bool = False) -> Push:
        """The baseline push, ``args`` overriding its call (:meth:`CallBuilder.values`), positional or by keyword."""
        push, op = self.baseline(), self.run.spec.operation
        values = self.calls.values(push, args, only_given=only_given)
        return push.with_call(Call(values, push.operation, positional=positional, key=op.key,
                                   key_entries=op.key_entries, key_entry=self.calls.key_entry(values),
                                   by_keyword=frozenset(self.run.signature.through_kwargs)))

    def push(self, push: Push, *, bound: float | None = 30.0) -> Outcome:
        """Make ``push`` (its arguments built); with ``bound`` a hang becomes an Outcome."""
        return self.pusher.push(push, bound=bound)

    # ------------------------------------------------------------------------------------------ observations

    def read(self, info: CacheInfo) -> list[np.ndarray]:
        return self.read_caches([info])[info.name]

    def read_caches(self, infos: Sequence[CacheInfo]) -> dict[str, list[np.ndarray]]:
        """Every tensor of every cache in ``infos``, by name: one request per node where the node batches them
        (a judgement reads every live cache after every push, and a round trip to another process costs more
        than the bytes)."""
        out: dict[str, list[np.ndarray]] = {}
        for node_name, group in by_node(infos, lambda i: i.node_name).items():
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

    # guard bands and freed memory (memory_watch.MemoryWatch), as the judges and the history bed call them

    def read_many(self, node_name: str, spans: Sequence[tuple[int, int]]) -> list[np.ndarray]:
        return self.memory.read_many(node_name, spans)

    def watch_freed(self) -> None:
        self.memory.watch_freed()

    def guard_violations(self) -> list[Difference]:
        return self.memory.guard_violations()

    def freed_violations(self) -> list[Difference]:
        return self.memory.freed_violations()

    def memory_violations(self) -> list[Difference]:
        return self.memory.memory_violations()

    def repro(self, header: str = "") -> str:
        return self.rec.render(self.run.target, header)

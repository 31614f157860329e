"""Scenario building, calls, the expected-bytes model and assertion helpers.

The harness reaches a backend only through the protocol in :mod:`conformance_tests.backend`: clusters from
``backend.open_cluster``, every argument built through ``node.api``, memory seen through ``write_tensor`` /
``read_tensor`` (and ``alloc_memory`` / ``read_memory`` for guard bytes).  Every step it performs is also
recorded as Python source, so a failing call comes with a copy-paste reproduction.
"""

from __future__ import annotations

import builtins
import copy
import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np

from .backend import capability_supported
from .values import ABSENT, DecodeContext, Deferred, SpecValueError, Value, decode, materialise

#: bytes per element (native GetSizeByDataType); the spec's ``types`` table wins when it has a size
ITEMSIZE = {
    "DT_FLOAT": 4, "DT_FLOAT16": 2, "DT_BF16": 2, "DT_INT8": 1, "DT_UINT8": 1, "DT_BOOL": 1,
    "DT_INT16": 2, "DT_UINT16": 2, "DT_INT32": 4, "DT_UINT32": 4, "DT_INT64": 8, "DT_UINT64": 8,
    "DT_DOUBLE": 8, "DT_STRING": 16,
}
#: parameters of push_cache in declaration order (the call is shown in this order)
PARAMS = (
    "dst_cache_key", "src_cache", "src_batch_index", "src_layer_range", "dst_layer_range", "size",
    "tensor_num_per_layer",
)
SENTINEL = 0xA5
GUARD = 0xCC
GUARD_BYTES = 64
DEFAULT_TNPL = 2


class HarnessError(Exception):
    """The scenario could not be built (the backend failed before the call under test)."""


# --------------------------------------------------------------------------------------------- scenarios


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any] | None) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for key, value in (override or {}).items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def scenario_for(spec: Any, clause: Any = None, case: Any = None) -> dict[str, Any]:
    """The baseline scenario merged with the clause's and the case's overrides."""
    scen = deep_merge(spec.scenario, getattr(clause, "scenario", None) or {})
    return deep_merge(scen, getattr(case, "scenario", None) or {})


def itemsize(data_type: str, types: Mapping[str, Any] | None = None) -> int:
    entry = ((types or {}).get("DataType") or {}).get(data_type) or {}
    for key in ("size", "itemsize", "bytes", "element_size"):
        if isinstance(entry.get(key), int):
            return int(entry[key])
    if data_type not in ITEMSIZE:
        raise HarnessError(f"unknown data type {data_type!r}")
    return ITEMSIZE[data_type]


def node_spec(desc: Mapping[str, Any]) -> dict[str, Any]:
    """A protocol node spec; an option set to None in a scenario override is left out."""
    options = {str(k): _opt(v) for k, v in (desc.get("options") or {}).items() if v is not None}
    return {"cluster_id": int(desc["cluster_id"]), "role": str(desc.get("role", "PROMPT")), "options": options}


def _opt(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (dict, list)):
        import json

        return json.dumps(v)
    return str(v)


def scenario_needs(scenario: Mapping[str, Any]) -> list[str]:
    """Capabilities a scenario needs from the backend (placements of its caches)."""
    need = []
    for name in ("src", "dst"):
        placement = (scenario.get(name) or {}).get("placement")
        if placement:
            need.append(f"placements.{placement}")
    return need


def missing_capabilities(caps: Mapping[str, Any], requires: Sequence[str]) -> list[str]:
    return [r for r in requires if not capability_supported(caps, r)]


# --------------------------------------------------------------------------------------------- world


@dataclass
class CacheInfo:
    name: str
    cache: Any
    num_tensors: int
    shape: list[int]
    data_type: str
    placement: str
    nbytes: int
    stride: int
    batch: int
    guarded: list[int] | None = None  # tensor addresses (inside guard bands), raw-memory destinations


@dataclass
class Call:
    values: dict[str, Value]  # argument name -> decoded value (ABSENT values are left out)
    positional: bool = False

    @property
    def code(self) -> str:
        parts = [
            v.code if self.positional else f"{k}={v.code}" for k, v in self.values.items() if v.obj is not ABSENT
        ]
        return f"local.cache_manager.push_cache({', '.join(parts)})"

    def build(self) -> tuple[list[Any], dict[str, Any]]:
        items = [(k, materialise(v.obj)) for k, v in self.values.items() if v.obj is not ABSENT]
        if self.positional:
            return [v for _, v in items], {}
        return [], dict(items)

    def raw(self, name: str, default: Any = None) -> Any:
        v = self.values.get(name)
        return default if v is None or v.obj is ABSENT else v.obj


@dataclass
class Outcome:
    exc: BaseException | None
    seconds: float
    phase: str = "call"  # "args": raised while building arguments; "call": raised by push_cache
    hung: bool = False
    result: Any = None  # what push_cache returned

    def describe(self) -> str:
        if self.hung:
            return f"did not return within {self.seconds:.1f}s (hang)"
        if self.exc is None:
            return "returned normally"
        where = " while building the arguments" if self.phase == "args" else ""
        return f"raised {describe_exception(self.exc)}{where}"


def describe_exception(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    text = str(exc).splitlines()[0] if str(exc) else ""
    if len(text) > 200:
        text = text[:200] + "…"
    extra = f" status_code={status}" if status is not None else ""
    return f"{type(exc).__name__}({text!r}){extra}"


class World:
    """One scenario opened on a backend: two linked nodes, a source and a destination cache.

    ``minimal=True`` opens only the cluster (for clauses about the data types); ``guard=True`` registers the
    destination in raw memory with guard bytes around every tensor (capability ``raw_memory``).
    """

    def __init__(
        self,
        backend: Any,
        scenario: Mapping[str, Any],
        *,
        backend_spec: str = "reference",
        caps: Mapping[str, Any] | None = None,
        types: Mapping[str, Any] | None = None,
        params: Sequence[str] | None = None,
        seed: int = 0,
        guard: bool = False,
        minimal: bool = False,
        title: str = "",
    ) -> None:
        self.backend = backend
        self.scenario = dict(scenario)
        self.backend_spec = backend_spec
        self.caps = dict(caps if caps is not None else backend.capabilities())
        self.types = types or {}
        self.params = tuple(params) if params is not None else PARAMS
        self.seed = seed
        self.want_guard = guard
        self.minimal = minimal
        self.title = title
        self.code: list[str] = []
        self.cluster: Any = None
        self.local: Any = None
        self.remote: Any = None
        self.api: Any = None
        self.src: CacheInfo | None = None
        self.dst: CacheInfo | None = None
        self.src_data: list[np.ndarray] = []
        self.dst_before: list[np.ndarray] = []
        self.local_id = int(self.scenario["local"]["cluster_id"])
        self.remote_id = int(self.scenario["remote"]["cluster_id"])
        self._extra: dict[str, Value] = {}
        self._closed = False
        self.expectation: tuple[Call, Mapping[str, Any], str] | None = None  # the last check, for the repro
        from . import session

        session.RECORDER.world = self

    # -- setup ------------------------------------------------------------------------------------------

    def open(self) -> World:
        scen = self.scenario
        specs = [node_spec(scen["local"]), node_spec(scen["remote"])]
        for extra in scen.get("nodes") or []:
            specs.append(node_spec(extra))
        self.code.append(f"cluster = backend.open_cluster({specs!r})")
        self.code.append("try:")
        try:
            self.cluster = self.backend.open_cluster(specs)
        except Exception as exc:
            raise HarnessError(f"open_cluster failed: {describe_exception(exc)}") from exc
        self._step(f"local, remote = cluster.node({self.local_id}), cluster.node({self.remote_id})")
        self._step("api = local.api")
        try:
            self.local = self.cluster.node(self.local_id)
            self.remote = self.cluster.node(self.remote_id)
            self.api = self.local.api
        except Exception as exc:
            raise HarnessError(f"cluster.node failed: {describe_exception(exc)}") from exc
        if self.minimal:
            return self
        self.src = self.make_cache("src", self.local, "local", scen["src"])
        self.dst = self.make_cache("dst", self.remote, "remote", scen["dst"], guard=self.want_guard)
        self._fill()
        if scen.get("link", True):
            self.link()
        return self

    def link(self) -> None:
        self._step(f"cluster.link({self.local_id}, {self.remote_id})")
        try:
            self.cluster.link(self.local_id, self.remote_id)
        except Exception as exc:
            raise HarnessError(f"cluster.link failed: {describe_exception(exc)}") from exc

    def unlink(self) -> None:
        self._step(f"cluster.unlink({self.local_id}, {self.remote_id})")
        try:
            self.cluster.unlink(self.local_id, self.remote_id)
        except Exception as exc:
            raise HarnessError(f"cluster.unlink failed: {describe_exception(exc)}") from exc

    def inject(self, node_name: str, fault: Mapping[str, Any]) -> None:
        node = self.local if node_name == "local" else self.remote
        self._step(f"{node_name}.inject({dict(fault)!r})")
        try:
            node.inject(dict(fault))
        except Exception as exc:
            raise HarnessError(f"{node_name}.inject({dict(fault)!r}) failed: {describe_exception(exc)}") from exc

    def step(self, line: str) -> None:
        """Record an action the test performs itself (for the reproduction)."""
        self._step(line)

    def _step(self, line: str) -> None:
        self.code.append("    " + line)

    def desc_code(self, node_name: str, desc: Mapping[str, Any]) -> str:
        napi = "api" if node_name == "local" else f"{node_name}.api"
        extra = f", batch_dim_index={int(desc['batch_dim_index'])}" if "batch_dim_index" in desc else ""
        return (
            f"{napi}.CacheDesc({int(desc['num_tensors'])}, {[int(d) for d in desc['shape']]!r}, "
            f"{napi}.DataType.{desc['data_type']}, {napi}.Placement.{desc['placement']}{extra})"
        )

    def cache_desc(self, node: Any, desc: Mapping[str, Any]) -> Any:
        api = node.api
        try:
            extra = {"batch_dim_index": int(desc["batch_dim_index"])} if "batch_dim_index" in desc else {}
            return api.CacheDesc(
                int(desc["num_tensors"]),
                [int(d) for d in desc["shape"]],
                getattr(api.DataType, str(desc["data_type"])),
                getattr(api.Placement, str(desc["placement"])),
                **extra,
            )
        except Exception as exc:
            raise HarnessError(f"CacheDesc({dict(desc)!r}) failed: {describe_exception(exc)}") from exc

    def make_cache(
        self, name: str, node: Any, node_name: str, desc: Mapping[str, Any], *, guard: bool = False
    ) -> CacheInfo:
        """Allocate (or, with ``register: true`` or ``guard``, register raw memory for) a cache on ``node``."""
        num_tensors = int(desc["num_tensors"])
        shape = [int(d) for d in desc["shape"]]
        data_type, placement = str(desc["data_type"]), str(desc["placement"])
        nbytes = math.prod(shape) * itemsize(data_type, self.types)
        batch = shape[0] if shape else 1
        stride = nbytes // batch if batch else 0
        desc_code = self.desc_code(node_name, desc)
        cache_desc = self.cache_desc(node, desc)
        register = bool(desc.get("register")) or (guard and self.can_guard())
        guarded = None
        if register:
            if not self.can_guard():
                raise HarnessError("scenario registers raw memory, but the backend lacks raw_memory/register_cache")
            pad = GUARD_BYTES if guard else 0
            remote_accessible = desc.get("remote_accessible", True)
            addrs = []
            try:
                for _ in range(num_tensors):
                    base = node.alloc_memory(placement, nbytes + 2 * pad)
                    if pad:
                        node.write_memory(base, np.full(nbytes + 2 * pad, GUARD, dtype=np.uint8))
                    addrs.append(base + pad)
            except Exception as exc:
                raise HarnessError(f"alloc_memory/write_memory failed: {describe_exception(exc)}") from exc
            self._step(
                f"{name}_mem = [{node_name}.alloc_memory({placement!r}, {nbytes + 2 * pad}) for _ in range({num_tensors})]"
            )
            if pad:
                self._step(
                    f"for m in {name}_mem: {node_name}.write_memory(m, np.full({nbytes + 2 * pad}, {GUARD:#04x}, dtype=np.uint8))"
                )
            self._step(
                f"{name} = {node_name}.cache_manager.register_cache({desc_code}, [m + {pad} for m in {name}_mem], "
                f"remote_accessible={remote_accessible!r})"
            )
            try:
                cache = node.cache_manager.register_cache(cache_desc, addrs, remote_accessible=remote_accessible)
            except Exception as exc:
                raise HarnessError(f"register_cache ({name}: {desc_code}) failed: {describe_exception(exc)}") from exc
            guarded = addrs if pad else None
        else:
            self._step(f"{name} = {node_name}.cache_manager.allocate_cache({desc_code})")
            try:
                cache = node.cache_manager.allocate_cache(cache_desc)
            except Exception as exc:
                raise HarnessError(f"allocate_cache ({name}: {desc_code}) failed: {describe_exception(exc)}") from exc
        return CacheInfo(name, cache, num_tensors, shape, data_type, placement, nbytes, stride, batch, guarded)

    def can_guard(self) -> bool:
        return bool(self.caps.get("raw_memory")) and bool(self.caps.get("register_cache"))

    def fill(self, info: CacheInfo, node: Any, node_name: str, data: Sequence[np.ndarray]) -> None:
        self._step(f"for i, d in enumerate({info.name}_data): {node_name}.write_tensor({info.name}, i, d)")
        try:
            for i, d in enumerate(data):
                node.write_tensor(info.cache, i, d.copy())
        except Exception as exc:
            raise HarnessError(f"write_tensor ({info.name}) failed: {describe_exception(exc)}") from exc

    def sentinel(self, info: CacheInfo, node: Any, node_name: str) -> list[np.ndarray]:
        data = [np.full(info.nbytes, SENTINEL, dtype=np.uint8) for _ in range(info.num_tensors)]
        self._step(f"{info.name}_data = [np.full({info.nbytes}, {SENTINEL:#04x}, dtype=np.uint8)] * {info.num_tensors}")
        self.fill(info, node, node_name, data)
        return data

    def _fill(self) -> None:
        assert self.src is not None and self.dst is not None
        rng = np.random.default_rng(self.seed)
        self.src_data = [rng.integers(0, 256, self.src.nbytes, dtype=np.uint8) for _ in range(self.src.num_tensors)]
        self._step(f"rng = np.random.default_rng({self.seed})")
        self._step(
            f"src_data = [rng.integers(0, 256, {self.src.nbytes}, dtype=np.uint8) for _ in range({self.src.num_tensors})]"
        )
        self.fill(self.src, self.local, "local", self.src_data)
        self.dst_before = self.sentinel(self.dst, self.remote, "remote")

    def close(self) -> None:
        if self._closed or self.cluster is None:
            return
        self._closed = True
        t = threading.Thread(target=_quiet_close, args=(self.cluster,), daemon=True)
        t.start()
        t.join(10.0)

    def __enter__(self) -> World:
        try:
            return self.open()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- arguments --------------------------------------------------------------------------------------

    def tnpl_for(self, call: Mapping[str, Any]) -> int:
        t = call.get("tensor_num_per_layer", DEFAULT_TNPL)
        return t if isinstance(t, int) and not isinstance(t, bool) and t > 0 else DEFAULT_TNPL

    def context(self, tnpl: int) -> DecodeContext:
        assert self.src is not None and self.dst is not None
        ids = {self.local_id, self.remote_id}
        unlinked = int((self.scenario.get("unlinked") or {}).get("cluster_id", max(ids) + 1))
        dst_id = int(getattr(self.dst.cache, "cache_id", 0))
        return DecodeContext(
            api=self.api,
            num_layers=self.src.num_tensors // tnpl,
            num_tensors=self.src.num_tensors,
            batch_size=self.src.batch,
            local_id=self.local_id,
            remote_id=self.remote_id,
            unlinked_id=unlinked,
            dst_cache_id=dst_id,
            unknown_cache_id=dst_id + 1000,
            cache_lookup=self._cache_value,
            dst_name=self.dst.name,
        )

    def _cache_value(self, name: str, spec: Mapping[str, Any]) -> Value:
        if name == "src":
            assert self.src is not None
            return Value(self.src.cache, "src")
        if name == "dst_remote_object":
            assert self.dst is not None
            return Value(self.dst.cache, self.dst.name)
        if name == "blocks":
            assert self.src is not None
            placement = str(spec.get("placement") or self.src.placement)
            key = f"blocks_{placement}"
            if key not in self._extra:
                desc = {"num_tensors": self.src.num_tensors, "shape": self.src.shape,
                        "data_type": self.src.data_type, "placement": placement}
                self._step(f"{key} = local.cache_manager.allocate_blocks_cache({self.desc_code('local', desc)})")
                try:
                    cache = self.local.cache_manager.allocate_blocks_cache(self.cache_desc(self.local, desc))
                except Exception as exc:
                    raise HarnessError(f"allocate_blocks_cache failed: {describe_exception(exc)}") from exc
                self._extra[key] = Value(cache, key)
            return self._extra[key]
        raise SpecValueError(f"unknown cache {name!r}")

    def call(
        self, args: Mapping[str, Any] | None = None, *, positional: bool = False, only_given: bool = False
    ) -> Call:
        """The baseline call (scenario ``call``) with ``args`` overriding it, decoded.

        Baseline values are passed only for parameters the release's signature has; ``only_given`` leaves
        every parameter out that ``args`` does not name (except dst_cache_key and src_cache), so the callee's
        defaults apply.
        """
        assert self.dst is not None and self.src is not None
        args = dict(args or {})
        base = {} if only_given else dict(self.scenario.get("call") or {})
        merged = {**base, **args}
        ctx = self.context(self.tnpl_for(merged))
        values: dict[str, Value] = {}
        if "dst_cache_key" in args:
            values["dst_cache_key"] = decode(args["dst_cache_key"], ctx)
        else:
            batch = decode(merged.get("dst_batch_index", 0), ctx)
            values["dst_cache_key"] = decode(
                {"key": "CacheKeyByIdAndIndex", "cluster": "remote", "cache": "dst", "batch": batch.obj}, ctx
            )
        values["src_cache"] = decode(args["src_cache"], ctx) if "src_cache" in args else Value(self.src.cache, "src")
        for name in PARAMS[2:]:
            if name in args or (name in base and name in self.params):
                values[name] = decode(merged[name], ctx)
        for name, raw in args.items():  # keywords push_cache does not declare (signature clauses)
            if name not in values and name != "dst_batch_index":
                values[name] = decode(raw, ctx)
        return Call(values, positional=positional)

    def key(self, *, cache_id: Any = None, batch: int = 0, cluster: Any = None) -> Value:
        """A CacheKeyByIdAndIndex value (default: the destination cache on the remote)."""
        ctx = self.context(DEFAULT_TNPL)
        spec = {"key": "CacheKeyByIdAndIndex", "cluster": cluster or "remote", "batch": batch}
        if cache_id is not None:
            spec["cache"] = cache_id
        return decode(spec, ctx)

    # -- the call under test --------------------------------------------------------------------------

    def push(self, call: Call, *, bound: float | None = 30.0) -> Outcome:
        """Run push_cache; with ``bound`` the call runs in a thread and a hang becomes an Outcome."""
        self._step(call.code)
        start = time.monotonic()
        try:
            posargs, kwargs = call.build()
        except Exception as exc:  # noqa: BLE001 - building a key may raise; that is part of the outcome
            return Outcome(exc, time.monotonic() - start, phase="args")
        fn = self.local.cache_manager.push_cache
        if bound is None:
            try:
                result = fn(*posargs, **kwargs)
            except Exception as exc:  # noqa: BLE001
                return Outcome(exc, time.monotonic() - start)
            return Outcome(None, time.monotonic() - start, result=result)
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["result"] = fn(*posargs, **kwargs)
                box["exc"] = None
            except BaseException as exc:  # noqa: BLE001
                box["exc"] = exc

        t = threading.Thread(target=run, daemon=True, name="push_cache-under-test")
        t.start()
        t.join(bound)
        elapsed = time.monotonic() - start
        if t.is_alive():
            return Outcome(None, elapsed, hung=True)
        return Outcome(box.get("exc"), elapsed, result=box.get("result"))

    # -- observations ---------------------------------------------------------------------------------

    def read(self, info: CacheInfo, node: Any) -> list[np.ndarray]:
        try:
            return [np.asarray(node.read_tensor(info.cache, i), dtype=np.uint8).ravel() for i in range(info.num_tensors)]
        except Exception as exc:
            raise HarnessError(f"read_tensor ({info.name}) failed: {describe_exception(exc)}") from exc

    def read_dst(self) -> list[np.ndarray]:
        assert self.dst is not None
        return self.read(self.dst, self.remote)

    def read_src(self) -> list[np.ndarray]:
        assert self.src is not None
        return self.read(self.src, self.local)

    def guard_violations(self, info: CacheInfo | None = None) -> list[str]:
        """Guard bands around raw-memory destination tensors that changed."""
        info = info or self.dst
        assert info is not None
        out = []
        for i, addr in enumerate(info.guarded or []):
            for label, where in (("before", addr - GUARD_BYTES), ("after", addr + info.nbytes)):
                got = np.asarray(self.remote.read_memory(where, GUARD_BYTES), dtype=np.uint8).ravel()
                bad = np.flatnonzero(got != GUARD)
                if bad.size:
                    out.append(
                        f"guard bytes {label} {info.name} tensor {i} changed: {bad.size} of {GUARD_BYTES} bytes, "
                        f"first at guard offset {int(bad[0])} ({GUARD:#04x} -> {int(got[bad[0]]):#04x})"
                    )
        return out

    # -- reproduction ---------------------------------------------------------------------------------

    def repro(self, header: str = "") -> str:
        module, _, attr = self.backend_spec.partition(":")
        body = self.code or ["cluster = None", "try:"]
        lines = [
            f'"""{header or "push_cache reproduction"}"""',
            "import importlib",
            "",
            "import numpy as np",
            "",
            f"backend = getattr(importlib.import_module({module!r}), {attr or 'backend'!r})",
            "if isinstance(backend, type):",
            "    backend = backend()",
            *body,
        ]
        if not any(line.startswith("    ") for line in body):
            lines.append("    pass")
        if self.expectation is not None:
            lines = self._with_verdict(lines)
        lines += ["finally:", "    cluster.close()"]
        return "\n".join(lines) + "\n"

    def _with_verdict(self, lines: list[str]) -> list[str]:
        """Wrap the checked call in try/except and append the clause's check, so the snippet fails by itself."""
        call, expect, clause_id = self.expectation  # type: ignore[misc]
        push = f"    {call.code}"
        if push not in lines:
            return lines
        at = len(lines) - 1 - lines[::-1].index(push)
        wrapped = ["    try:", f"        result = {call.code}", "    except Exception as exc:  # noqa: BLE001",
                   "        outcome = exc", "    else:", "        outcome = None"]
        return lines[:at] + wrapped + self._verdict_lines(call, expect, clause_id) + lines[at + 1:]

    def _verdict_lines(self, call: Call, expect: Mapping[str, Any], clause_id: str) -> list[str]:
        if "raises" in expect:
            names = [n for n in expect["raises"]]
            classes = ", ".join("api.LLMException" if n == "LLMException" else n for n in names) + ","
            out = [f"    assert isinstance(outcome, ({classes})), "
                   f"f\"{clause_id}: expected {' or '.join(names)}, got {{outcome!r}}\""]
            if expect.get("status"):
                status = expect["status"]
                out.append(f"    assert outcome.status_code == api.LLMStatusCode.{status}, "
                           f"f\"{clause_id}: expected {status}, got {{outcome.status_code}}\"")
            return out
        if expect.get("outcome") != "success":
            return ["    print('outcome:', repr(outcome))  # a may-clause envelope: see the report for what is allowed"]
        out = [f"    assert outcome is None, f\"{clause_id}: expected success, got {{outcome!r}}\""]
        if self.src is None or self.dst is None or not self.src_data:
            return out
        plan = plan_transfer(call, self.src)
        if plan is None:
            return out
        pairs = [(s * plan.tnpl + j, d * plan.tnpl + j) for s, d in zip(plan.src_layers, plan.dst_layers, strict=False)
                 for j in range(plan.tnpl)]
        so, do, n = plan.src_batch * self.src.stride, plan.dst_batch * self.dst.stride, self.src.stride
        out += [
            "    expected = [d.copy() for d in dst_data]",
            f"    for s, d in {pairs!r}:  # (source tensor, destination tensor) the spec's data rule moves",
            f"        expected[d][{do}:{do + n}] = src_data[s][{so}:{so + n}]",
            "    for t, want in enumerate(expected):",
            "        got = np.asarray(remote.read_tensor(dst, t))",
            "        bad = np.flatnonzero(got != want)",
            f"        assert bad.size == 0, f\"{clause_id}: dst tensor {{t}}: {{bad.size}} bytes differ, "
            "first at offset {bad[0]}\"",
            "    for t, want in enumerate(src_data):",
            f"        assert (np.asarray(local.read_tensor(src, t)) == want).all(), f\"{clause_id}: src tensor {{t}} changed\"",
        ]
        return out


def _quiet_close(cluster: Any) -> None:
    try:
        cluster.close()
    except Exception:  # noqa: BLE001 - closing must not mask the test outcome
        pass


# --------------------------------------------------------------------------------------------- model


@dataclass
class Transfer:
    """What a successful push moves, in the spec's terms (computed from the call, not from the backend)."""

    src_layers: list[int]
    dst_layers: list[int]
    tnpl: int
    src_batch: int
    dst_batch: int
    notes: list[str] = field(default_factory=list)


def plan_transfer(call: Call, src: CacheInfo) -> Transfer | None:
    """The layers and batch slices a push with these arguments targets, or None when not computable."""
    tnpl = call.raw("tensor_num_per_layer", DEFAULT_TNPL)
    src_batch = call.raw("src_batch_index", 0)
    key = call.values.get("dst_cache_key")
    dst_batch: Any = 0
    if key is not None and isinstance(key.obj, Deferred) and len(key.obj.args) >= 3:
        dst_batch = key.obj.args[2]
    for v in (tnpl, src_batch, dst_batch):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            return None
    if tnpl == 0:
        return None
    default = range(0, src.num_tensors // tnpl)
    ranges = []
    for name in ("src_layer_range", "dst_layer_range"):
        r = call.raw(name, None)
        if r is None:
            r = default
        if not isinstance(r, range):
            return None
        ranges.append(list(r))
    return Transfer(ranges[0], ranges[1], tnpl, src_batch, dst_batch)


def expected_destination(
    src_data: Sequence[np.ndarray],
    dst_before: Sequence[np.ndarray],
    plan: Transfer,
    *,
    src_stride: int,
    dst_stride: int,
) -> list[np.ndarray]:
    """The destination after the push, from the spec's data rule.

    For each (src_layer, dst_layer) pair and each j < tnpl, ``src_stride`` bytes of source tensor
    ``src_layer*tnpl + j`` starting at ``src_batch*src_stride`` land in destination tensor
    ``dst_layer*tnpl + j`` at ``dst_batch*dst_stride``.  Everything else keeps its previous bytes.
    Pairs that fall outside either cache are left out (an invalid call moves nothing there).
    """
    out = [d.copy() for d in dst_before]
    for s_layer, d_layer in zip(plan.src_layers, plan.dst_layers, strict=False):
        for j in range(plan.tnpl):
            s, d = s_layer * plan.tnpl + j, d_layer * plan.tnpl + j
            if not (0 <= s < len(src_data) and 0 <= d < len(out)) or src_stride > dst_stride:
                continue  # outside either cache, or a source entry that does not fit the destination entry
            s0, d0 = plan.src_batch * src_stride, plan.dst_batch * dst_stride
            if s0 + src_stride > src_data[s].size or d0 + dst_stride > out[d].size:
                continue
            out[d][d0 : d0 + src_stride] = src_data[s][s0 : s0 + src_stride]
    return out


def targeted_mask(plan: Transfer, src: CacheInfo, dst: CacheInfo) -> list[np.ndarray]:
    """Per destination tensor, True where the push (by the data rule) writes."""
    ones = [np.ones(src.nbytes, dtype=np.uint8) for _ in range(src.num_tensors)]
    zeros = [np.zeros(dst.nbytes, dtype=np.uint8) for _ in range(dst.num_tensors)]
    moved = expected_destination(ones, zeros, plan, src_stride=src.stride, dst_stride=dst.stride)
    return [m.astype(bool) for m in moved]


# --------------------------------------------------------------------------------------------- assertions


def _hex(a: np.ndarray, start: int, n: int = 16) -> str:
    return a[start : start + n].tobytes().hex(" ")


def diff_tensors(expected: Sequence[np.ndarray], got: Sequence[np.ndarray], what: str) -> list[str]:
    """Human-readable differences (tensor index, first differing offset, expected vs got, count)."""
    out = []
    if len(expected) != len(got):
        out.append(f"{what}: expected {len(expected)} tensors, read {len(got)}")
    for i, (e, g) in enumerate(zip(expected, got, strict=False)):
        if e.size != g.size:
            out.append(f"{what} tensor {i}: expected {e.size} bytes, read_tensor returned {g.size}")
            continue
        bad = np.flatnonzero(e != g)
        if bad.size:
            first = int(bad[0])
            out.append(
                f"{what} tensor {i}: {bad.size} of {e.size} bytes differ, first at offset {first}: "
                f"expected {_hex(e, first)} got {_hex(g, first)}"
            )
    return out


def envelope_violations(
    before: Sequence[np.ndarray], full: Sequence[np.ndarray], got: Sequence[np.ndarray], what: str
) -> list[str]:
    """Bytes that are neither their previous value nor what the complete push would write (corruption)."""
    out = []
    for i, (b, f, g) in enumerate(zip(before, full, got, strict=False)):
        if g.size != b.size:
            out.append(f"{what} tensor {i}: read_tensor returned {g.size} bytes, expected {b.size}")
            continue
        bad = np.flatnonzero((g != b) & (g != f))
        if bad.size:
            first = int(bad[0])
            out.append(
                f"{what} tensor {i}: {bad.size} bytes corrupted (neither previous nor pushed value), first at "
                f"offset {first}: previous {_hex(b, first)} / pushed {_hex(f, first)} got {_hex(g, first)}"
            )
    return out


def exception_class(name: str, api: Any) -> Any:
    cls = getattr(api, name, None)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        if name == "LLMException" and (issubclass(TypeError, cls) or issubclass(ValueError, cls)):
            # otherwise "raises LLMException" would accept a TypeError or ValueError
            raise HarnessError(f"node.api.LLMException is {cls.__name__}, a base class of TypeError/ValueError; "
                               "the adapter must expose the backend's own LLMException class")
        return cls
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        return cls
    raise SpecValueError(f"unknown exception class {name!r}")


def status_matches(exc: BaseException, name: str, api: Any) -> tuple[bool, str]:
    want = getattr(api.LLMStatusCode, name, None)
    got = getattr(exc, "status_code", None)
    if want is None:
        return False, f"node.api.LLMStatusCode has no member {name}"
    return (got == want), f"status_code {got} (expected {name} = {int(want) if isinstance(want, int) else want})"


def describe_expect(expect: Mapping[str, Any]) -> str:
    if "raises" in expect:
        kinds = " or ".join(expect["raises"])
        return f"{kinds} with status {expect['status']}" if expect.get("status") else kinds
    if expect.get("outcome") == "any_of":
        return "one of: " + "; ".join(describe_expect(a) for a in expect.get("allowed", []))
    data = f" ({expect['data']})" if expect.get("data") else ""
    return f"success{data}"


class Check:
    """Checks one call's outcome against a spec expectation; failures name the clause and the call."""

    def __init__(self, world: World, call: Call, clause_id: str, case_name: str = "") -> None:
        self.world, self.call, self.clause_id, self.case_name = world, call, clause_id, case_name

    def _context(self) -> str:
        case = f" [case {self.case_name}]" if self.case_name else ""
        return f"clause {self.clause_id}{case}\n  call: {self.call.code}"

    def fail(self, what: str, details: Sequence[str] = ()) -> NoReturn:
        __tracebackhide__ = True
        lines = [f"{self._context()}\n  {what}"] + [f"    {d}" for d in details[:12]]
        if len(details) > 12:
            lines.append(f"    … {len(details) - 12} more")
        raise AssertionError("\n".join(lines))

    # single expectation forms; return an error text (None when satisfied) so any_of can combine them
    def _raises_error(self, outcome: Outcome, expect: Mapping[str, Any]) -> str | None:
        api = self.world.api
        want = " or ".join(expect["raises"])
        if outcome.hung:
            return f"expected {want}, but push_cache {outcome.describe()}"
        if outcome.exc is None:
            return f"expected {want}, but push_cache returned normally"
        classes = tuple(exception_class(n, api) for n in expect["raises"])
        if not isinstance(outcome.exc, classes):
            return f"expected {want}, but push_cache {outcome.describe()}"
        if expect.get("status"):
            ok, text = status_matches(outcome.exc, expect["status"], api)
            if not ok:
                return f"expected LLMException with {expect['status']}, but got {text}: {describe_exception(outcome.exc)}"
        return None

    def data_errors(self) -> list[str]:
        w = self.world
        assert w.src is not None and w.dst is not None
        plan = plan_transfer(self.call, w.src)
        errors = []
        got_dst = w.read_dst()
        if plan is None:
            errors += diff_tensors(w.dst_before, got_dst, "dst (no transfer computable, expected untouched)")
        else:
            want = expected_destination(w.src_data, w.dst_before, plan, src_stride=w.src.stride, dst_stride=w.dst.stride)
            errors += diff_tensors(want, got_dst, "dst")
        errors += diff_tensors(w.src_data, w.read_src(), "src (must be unchanged)")
        errors += w.guard_violations()
        return errors

    def aspect_errors(self, aspect: str) -> list[str]:
        """One aspect of the data postcondition: "targeted" (the pushed slices hold the source bytes),
        "untouched" (no other destination byte changed), "source" (the source is unchanged), "guards"."""
        w = self.world
        assert w.src is not None and w.dst is not None
        if aspect == "source":
            return diff_tensors(w.src_data, w.read_src(), "src (must be unchanged)")
        if aspect == "guards":
            return w.guard_violations()
        plan = plan_transfer(self.call, w.src)
        if plan is None:
            return ["the call's arguments do not describe a transfer"]
        want = expected_destination(w.src_data, w.dst_before, plan, src_stride=w.src.stride, dst_stride=w.dst.stride)
        mask = targeted_mask(plan, w.src, w.dst)
        got = w.read_dst()
        keep = [m if aspect == "targeted" else ~m for m in mask]
        label = "dst targeted slice" if aspect == "targeted" else "dst outside the targeted slices"
        return diff_tensors([np.where(k, e, 0) for k, e in zip(keep, want, strict=False)],
                            [np.where(k, g, 0) if g.size == k.size else g for k, g in zip(keep, got, strict=False)],
                            label)

    def envelope_errors(self) -> list[str]:
        """Destination bytes outside {previous, pushed}, a changed source, or changed guard bytes."""
        w = self.world
        assert w.src is not None and w.dst is not None
        plan = plan_transfer(self.call, w.src)
        full = (
            expected_destination(w.src_data, w.dst_before, plan, src_stride=w.src.stride, dst_stride=w.dst.stride)
            if plan is not None
            else w.dst_before
        )
        errors = envelope_violations(w.dst_before, full, w.read_dst(), "dst")
        errors += diff_tensors(w.src_data, w.read_src(), "src (must be unchanged)")
        errors += w.guard_violations()
        return errors

    def expect(self, outcome: Outcome, expect: Mapping[str, Any], *, data: bool = True) -> None:
        """Assert ``outcome`` satisfies ``expect`` (raises / success + data / any_of envelope)."""
        __tracebackhide__ = True
        self.world.expectation = (self.call, expect, self.clause_id)
        if outcome.hung:
            self.fail(f"push_cache {outcome.describe()}; expected {describe_expect(expect)}")
        if outcome.phase == "args":
            self.fail(f"building the call's arguments through node.api {outcome.describe()}; the call under test "
                      "never ran, so the clause cannot be judged", _traceback_hint(outcome))
        if "raises" in expect:
            err = self._raises_error(outcome, expect)
            if err:
                self.fail(err, _traceback_hint(outcome))
            return
        if expect.get("outcome") == "any_of":
            reasons = []
            for alt in expect.get("allowed", []):
                r = self._alt_error(outcome, alt)
                if r is None:
                    break
                reasons.append(r)
            else:
                self.fail(f"outcome not in the allowed envelope: push_cache {outcome.describe()}", reasons)
            errors = self.envelope_errors()
            if errors:
                self.fail(f"push_cache {outcome.describe()}, but memory outside the envelope changed", errors)
            return
        # success
        if outcome.exc is not None:
            self.fail(f"expected success, but push_cache {outcome.describe()}", _traceback_hint(outcome))
        if data:
            errors = self.data_errors()
            if errors:
                self.fail(f"push_cache returned normally but the data postcondition ({expect.get('data') or 'push'}) fails", errors)

    def _alt_error(self, outcome: Outcome, alt: Mapping[str, Any]) -> str | None:
        if "raises" in alt:
            return self._raises_error(outcome, alt)
        if alt.get("outcome") == "any_of":
            errs = [self._alt_error(outcome, a) for a in alt.get("allowed", [])]
            return None if any(e is None for e in errs) else "; ".join(e for e in errs if e)
        if outcome.exc is not None:
            return f"not success: {outcome.describe()}"
        errors = self.data_errors()
        return None if not errors else "success, but data: " + "; ".join(errors[:3])


def _traceback_hint(outcome: Outcome) -> list[str]:
    exc = outcome.exc
    if exc is None:
        return []
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    return [f"at {f.filename}:{f.lineno} in {f.name}" for f in frames]

"""Procedures: how a clause's tests run, one registered function per name of the schema's ``procedure`` enum.

A procedure yields the test items of a clause (its cases, the members of a table, example streams) and runs
one item.  Nothing here looks at a clause's title, its ID or a case's name: what to do comes from the
clause's ``procedure``, ``generate``, ``requires``, ``scenario`` and ``expect`` fields.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from . import outcomes, session, strategies, violations
from .outcomes import Expectation, Observation, Raises
from .recorder import lit
from .spec import signature_parameters
from .testbed import (
    CacheInfo,
    Call,
    HarnessError,
    Outcome,
    Testbed,
    deep_merge,
    describe_exception,
    missing_capabilities,
    scenario_for,
    scenario_needs,
)
from .values import Value

#: scheduling slack on top of sync_kv_timeout per layer before a timeout counts as late
TIMEOUT_SLACK_S = 2.0
#: the examples per stream the spec's counts are written for (the certify profile); other profiles scale them
BASE_EXAMPLES = 40


@dataclass(frozen=True)
class Item:
    """One test of a clause: ``key`` names it in the test ID and seeds its example stream."""

    key: str
    data: Any = None
    examples: int = 0  # examples of its stream (0: not a stream); its time bound grows with them


@dataclass(frozen=True)
class Procedure:
    items: Callable[[Any], list[Item]]
    run: Callable[[Any, Item], None]


PROCEDURES: dict[str, Procedure] = {}


def procedure(name: str, items: Callable[[Any], list[Item]]) -> Callable[[Callable[[Any, Item], None]], Any]:
    def deco(fn: Callable[[Any, Item], None]) -> Callable[[Any, Item], None]:
        PROCEDURES[name] = Procedure(items, fn)
        return fn
    return deco


def items_for(clause: Any) -> list[Item]:
    """Every test item of ``clause``: its procedure's, plus its generated invalid inputs."""
    proc = PROCEDURES[clause.procedure.get("name", "call")]
    return proc.items(clause) + (invalid_items(clause) if clause.generate else [])


def run_item(clause: Any, item: Item) -> None:
    __tracebackhide__ = True
    if isinstance(item.data, InvalidStream):
        run_invalid(clause, item)
        return
    PROCEDURES[clause.procedure.get("name", "call")].run(clause, item)


# ------------------------------------------------------------------------------------------------ shared steps


def require(requires: Sequence[str]) -> None:
    """Skip with "not supported: <capability>" when the backend does not declare what a test needs."""
    missing = missing_capabilities(session.current().caps, requires)
    if missing:
        pytest.skip("not supported: " + ", ".join(missing))


def per_call_bound(extra: float = 0.0) -> float:
    """How long one push may take before it counts as a hang (below the per-test timeout)."""
    timeout = session.current().options.get("timeout") or 0
    bound = 30.0 + extra
    if timeout:
        bound = min(bound, max(1.0, float(timeout) * 0.8))
    return bound


def sync_timeout_s(scenario: Mapping[str, Any]) -> float:
    raw = ((scenario.get("local") or {}).get("options") or {}).get("llm.SyncKvCacheWaitTime")
    try:
        return int(raw) / 1000.0 if raw is not None else 1.0
    except (TypeError, ValueError):
        return 1.0


@contextlib.contextmanager
def opened(scenario: Mapping[str, Any], clause_id: str, **kw: Any) -> Iterator[Testbed]:
    """A testbed for ``scenario``; a failure while building it is a setup error, not a verdict."""
    ctx = session.current()
    tb = Testbed(ctx.backend, scenario, backend_spec=ctx.backend_spec, caps=ctx.caps, types=ctx.spec.types,
                 params=ctx.params, default_tnpl=_default_tnpl(), all_params=_all_params(), **kw)
    try:
        tb.open()
        yield tb
    finally:
        tb.close()


def _default_tnpl() -> int:
    for entry in session.current().signature.get("parameters", []):
        if entry.get("name") == "tensor_num_per_layer" and isinstance(entry.get("default"), int):
            return int(entry["default"])
    return 2  # releases without the parameter: one layer is two tensors (facts §8)


def fail(clause_id: str, label: str, call: Any, what: str, details: Sequence[str] = ()) -> None:
    __tracebackhide__ = True
    lines = [f"clause {clause_id} [{label}]\n  call: {call.code if call is not None else '-'}\n  {what}"]
    lines += [f"    {d}" for d in details[:12]]
    if len(details) > 12:
        lines.append(f"    … {len(details) - 12} more")
    raise AssertionError("\n".join(lines))


def judge(tb: Testbed, call: Any, outcome: Outcome, expectation: Expectation, clause_id: str, label: str,
          *, settle_until: float = 0.0) -> None:
    """Check ``outcome`` and every side effect against ``expectation``; ``settle_until`` (monotonic time) is when
    injected delays have fully passed, so a late write is seen."""
    __tracebackhide__ = True
    obs = Observation(tb, call, outcome)
    tb.rec.verdict = expectation.repro_lines(clause_id, obs)
    if outcome.phase == "args":
        raise HarnessError("building the call's arguments through node.api", outcome.describe())
    if outcome.hung:
        fail(clause_id, label, call, f"push_cache {outcome.describe()}; expected {expectation.describe()}")
    wait = settle_until - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    problem = expectation.outcome_problem(obs)
    if problem:
        fail(clause_id, label, call, problem, _traceback_hint(outcome))
    problems = expectation.effect_problems(obs)
    if problems:
        fail(clause_id, label, call, f"push_cache {outcome.describe()} as allowed ({expectation.describe()}), but "
             "memory changed where it must not", problems)


def _traceback_hint(outcome: Outcome) -> list[str]:
    import traceback

    if outcome.exc is None:
        return []
    return [f"at {f.filename}:{f.lineno} in {f.name}" for f in traceback.extract_tb(outcome.exc.__traceback__)[-3:]]


def _faults(tb: Testbed, scenario: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = scenario.get("fault")
    out = []
    for f in raw if isinstance(raw, list) else [raw] if raw else []:
        node = f.get("node", "local")
        fault = {k: v for k, v in dict(f).items() if k != "node"}
        if isinstance(fault.get("peer"), str):
            fault["peer"] = {"local": tb.local_id, "remote": tb.remote_id}[fault["peer"]]
        tb.inject(node, fault)
        out.append(fault)
    return out


# ------------------------------------------------------------------------------------------------ steps

STEPS: dict[str, Callable[[Testbed], None]] = {}


def step(name: str) -> Callable[[Callable[[Testbed], None]], Callable[[Testbed], None]]:
    def deco(fn: Callable[[Testbed], None]) -> Callable[[Testbed], None]:
        STEPS[name] = fn
        return fn
    return deco


@step("push")
def _step_push(tb: Testbed) -> None:
    call = tb.call({})
    outcome = tb.push(call, bound=per_call_bound())
    if outcome.exc is not None or outcome.hung:
        raise HarnessError("the first (valid) push", f"{outcome.describe()}: {call.code}")
    tb.before["dst"] = tb.read_dst()  # what the first push wrote is the new "before"


@step("unlink")
def _step_unlink(tb: Testbed) -> None:
    tb.unlink()


@step("deallocate_dst")
def _step_deallocate(tb: Testbed) -> None:
    tb.deallocate("dst")


@step("allocate_dst")
def _step_allocate_dst(tb: Testbed) -> None:
    info = tb.make_cache("late", "remote", tb.scenario["dst"], guard=tb.want_guard)
    tb.fill_sentinel(info)
    tb.dst = info


@step("allocate_bystander")
def _step_bystander(tb: Testbed) -> None:
    tb.fill_sentinel(tb.make_cache("bystander", "remote", tb.scenario["dst"]))


# ------------------------------------------------------------------------------------------------ call


def _case_items(clause: Any) -> list[Item]:
    return [Item(case.name, case) for case in clause.cases]


@procedure("call", _case_items)
def run_call(clause: Any, item: Item) -> None:
    """Build the scenario, run the case's steps, inject its faults, make the call and judge it."""
    __tracebackhide__ = True
    case = item.data
    ctx = session.current()
    scenario = scenario_for(ctx.spec, clause, case)
    require(list(clause.requires) + scenario_needs(scenario))
    absent = [n for n in case.args if n in _all_params() and n not in ctx.params]
    if absent:
        pytest.skip(f"not in release {ctx.release}: push_cache has no parameter {', '.join(absent)}")
    expectation = outcomes.parse(clause.expect_for(case))
    style = clause.procedure.get("style", "keywords")
    with opened(scenario, clause.id) as tb:
        for name in case.steps or clause.procedure.get("steps", ()):
            STEPS[name](tb)
        tb.watch_freed()
        faults = _faults(tb, scenario)
        delay = sum(float(f.get("seconds", 0.0)) for f in faults)
        budget = sync_timeout_s(scenario)
        call = tb.call(case.args, positional=style == "positional", only_given=style == "only_given")
        outcome = tb.push(call, bound=per_call_bound(extra=4 * (delay + budget) if faults else 0.0))
        if faults and outcome.exc is not None and isinstance(expectation, Raises):
            _raised_in_time(tb, call, outcome, budget, clause.id, case.name)
        judge(tb, call, outcome, expectation, clause.id, case.name, settle_until=outcome.started + delay + 0.05)


def _all_params() -> tuple[str, ...]:
    """Every parameter name of every release's signature, in the spec's order (the newest signature first)."""
    entries = session.current().spec.signature
    names: dict[str, None] = {}
    for entry in reversed(entries):
        names.update(dict.fromkeys(signature_parameters(entry)[0]))
    for entry in entries:  # releases taking some of them as **kwargs
        names.update(dict.fromkeys(signature_parameters(entry)[1]))
    return tuple(names)


def _raised_in_time(tb: Testbed, call: Any, outcome: Outcome, budget: float, clause_id: str, label: str) -> None:
    """A timeout comes when sync_kv_timeout expires: at most one timeout per layer, plus scheduling slack."""
    __tracebackhide__ = True
    obs = Observation(tb, call, outcome)
    layers = max(1, len(obs.transfer.src_layers)) if obs.transfer is not None else 1
    limit = layers * budget + TIMEOUT_SLACK_S
    if outcome.seconds > limit:
        fail(clause_id, label, call, f"push_cache raised only after {outcome.seconds:.2f}s; with sync_kv_timeout "
             f"{budget * 1000:.0f} ms and {layers} layer(s) it should raise within {limit:.1f}s")


# ------------------------------------------------------------------------------------------------ constructors


@procedure("construct", _case_items)
def run_construct(clause: Any, item: Item) -> None:
    """node.api.<type>(**case args): the constructor refuses what the expectation says, or keeps the fields."""
    __tracebackhide__ = True
    case = item.data
    type_name = str(clause.procedure["type"])
    expect = outcomes.parse(clause.expect_for(case))
    with opened(scenario_for(session.current().spec, clause), clause.id, minimal=True) as tb:
        api = tb.api
        args = {k: _construct_arg(api, k, v) for k, v in case.args.items()}
        code = f"api.{type_name}({', '.join(f'{k}={v.code}' for k, v in args.items())})"
        cls = getattr(api, type_name, None)
        if cls is None:
            fail(clause.id, case.name, None, f"node.api has no {type_name}")
        try:
            obj, exc = tb.rec.invoke("obj", Value(api, "api"), type_name, **args), None
        except Exception as e:  # noqa: BLE001
            obj, exc = None, e
        if isinstance(expect, Raises):
            if exc is None or not isinstance(exc, tuple(outcomes.exception_class(n, api) for n in expect.kinds)):
                got = f"returned {obj!r}" if exc is None else f"raised {describe_exception(exc)}"
                fail(clause.id, case.name, None, f"{code}: expected {expect.describe()}, but the constructor {got}")
            return
        if exc is not None:
            fail(clause.id, case.name, None, f"{code}: expected the constructor to succeed, but it raised "
                                             f"{describe_exception(exc)}")
        _check_fields(clause, case, type_name, obj, args, api)


def _construct_arg(api: Any, name: str, value: Any) -> Value:
    for table in ("DataType", "Placement"):
        enum = getattr(api, table, None)
        if isinstance(value, str) and enum is not None and hasattr(enum, value) and _field_type(name) == table:
            return Value(getattr(enum, value), f"api.{table}.{value}")
    return lit(value)


def _field_type(name: str) -> str | None:
    for table in session.current().spec.types.values():
        fields = table.get("fields") if isinstance(table, Mapping) else None
        if isinstance(fields, Mapping) and isinstance(fields.get(name), Mapping):
            return str(fields[name].get("type"))
    return None


def _check_fields(clause: Any, case: Any, type_name: str, obj: Any, args: Mapping[str, Value], api: Any) -> None:
    """Every field the spec's types table lists keeps its argument, or its documented default."""
    __tracebackhide__ = True
    fields = (session.current().spec.types.get(type_name) or {}).get("fields") or {}
    want = {k: v.obj for k, v in args.items()}
    for name, info in fields.items():
        if name not in want and isinstance(info, Mapping) and "default" in info and info.get("attribute", True):
            default = info["default"]
            enum = getattr(api, str(info.get("type")), None)
            want[name] = getattr(enum, default) if isinstance(default, str) and enum is not None else default
    problems = []
    for name, value in want.items():
        if not (fields.get(name) or {}).get("attribute", True):
            continue
        if not hasattr(obj, name):
            problems.append(f"{type_name} has no attribute {name}")
            continue
        got = getattr(obj, name)
        try:
            same = list(got) == list(value) if isinstance(value, (list, tuple)) else got == value
        except TypeError:
            same = False
        if not same:
            problems.append(f"{type_name}.{name} is {got!r}, expected {value!r}")
    if problems:
        fail(clause.id, case.name, None, "fields differ from the constructor arguments", problems)


# ------------------------------------------------------------------------------------------------ data model


def _table(name: str) -> dict[str, Any]:
    raw = session.current().spec.types.get(name) or {}
    return {k: v for k, v in (raw.get("members") or {}).items() if isinstance(v, Mapping)}


@procedure("enum_values", lambda clause: [Item(m, (clause.procedure["table"], m, info["value"]))
                                           for m, info in _table(clause.procedure["table"]).items()]
           or [Item("no_table", (clause.procedure["table"], None, None))])
def run_enum_value(clause: Any, item: Item) -> None:
    table, member, value = item.data
    assert member is not None, f"clause {clause.id}: the spec's types table {table} has no members"
    with opened(session.current().spec.scenario, clause.id, minimal=True) as tb:
        enum = getattr(tb.api, table, None)
        assert enum is not None, f"clause {clause.id}: node.api has no {table}"
        got = getattr(enum, member, None)
        assert got is not None, f"clause {clause.id}: node.api.{table} has no member {member} (spec value {value})"
        raw = getattr(got, "value", got)
        assert raw == value, f"clause {clause.id}: node.api.{table}.{member} = {raw!r}, the spec says {value}"


def _size_items(clause: Any) -> list[Item]:
    vendor = clause.procedure.get("sizes") == "vendor"
    return [Item(name, (name, info["size"])) for name, info in _table("DataType").items()
            if isinstance(info.get("size"), int) and (info.get("size_source") == "vendor") == vendor]


@procedure("element_size", _size_items)
def run_element_size(clause: Any, item: Item) -> None:
    data_type, size = item.data
    ctx = session.current()
    shape = [2, 3]
    placements = ctx.caps.get("placements") or ["DEVICE"]
    desc = {"num_tensors": 1, "shape": shape, "data_type": data_type,
            "placement": "DEVICE" if "DEVICE" in placements else placements[0]}
    with opened(scenario_for(ctx.spec, clause), clause.id, minimal=True) as tb:
        if not hasattr(tb.api.DataType, data_type):
            pytest.skip(f"not supported: node.api.DataType has no {data_type}")
        got = np.asarray(tb.local.read_tensor(tb.make_cache("c", "local", desc).cache, 0)).size
        want = math.prod(shape) * size
        assert got == want, (f"clause {clause.id}: a {data_type} tensor of shape {shape} holds {got} bytes, "
                             f"expected {want} ({math.prod(shape)} elements x {size} bytes)")


def _single(clause: Any) -> list[Item]:
    return [Item("check")]


@procedure("exception_base", _single)
def run_exception_base(clause: Any, item: Item) -> None:
    base = (session.current().spec.types.get("LLMException") or {}).get("base", "RuntimeError")
    with opened(scenario_for(session.current().spec, clause), clause.id, minimal=True) as tb:
        exc = getattr(tb.api, "LLMException", None)
        assert isinstance(exc, type), f"clause {clause.id}: node.api.LLMException is {exc!r}, not a class"
        assert any(b.__name__ == base for b in exc.__mro__), (
            f"clause {clause.id}: LLMException bases are {[b.__name__ for b in exc.__mro__[1:]]}, expected a {base} "
            "subclass")


@procedure("cache_fields", _single)
def run_cache_fields(clause: Any, item: Item) -> None:
    """An allocated Cache exposes the fields of the spec's Cache table with the values the allocation implies."""
    with opened(scenario_for(session.current().spec, clause), clause.id, guard=False) as tb:
        src, cache = tb.src, tb.src.cache  # type: ignore[union-attr]
        problems = []
        if not isinstance(getattr(cache, "cache_id", None), int):
            problems.append(f"cache_id is {getattr(cache, 'cache_id', None)!r}, not an int")
        if getattr(getattr(cache, "cache_desc", None), "num_tensors", None) != src.num_tensors:  # type: ignore[union-attr]
            problems.append(f"cache_desc.num_tensors is not {src.num_tensors}")  # type: ignore[union-attr]
        addrs = getattr(cache, "tensor_addrs", None)
        if not isinstance(addrs, (list, tuple)) or len(addrs) != src.num_tensors:  # type: ignore[union-attr]
            problems.append(f"tensor_addrs is {addrs!r}, expected {src.num_tensors} addresses")  # type: ignore[union-attr]
        if getattr(cache, "is_blocks_cache", None) is not False:
            problems.append(f"is_blocks_cache is {getattr(cache, 'is_blocks_cache', None)!r}, expected False")
        if problems:
            fail(clause.id, "allocate_cache", None, "the allocated Cache does not expose the documented fields",
                 problems)


@procedure("inspect_signature", _single)
def run_signature(clause: Any, item: Item) -> None:
    from .signatures import signature_problems

    ctx = session.current()
    entry = ctx.spec.signature_for(ctx.release)
    with opened(scenario_for(ctx.spec, clause), clause.id, minimal=True) as tb:
        try:
            sig = inspect.signature(tb.local.cache_manager.push_cache)
        except (TypeError, ValueError) as exc:
            # e.g. a native binding: the behavioural clauses (positional, defaults, no_var_kwargs) still judge it
            pytest.skip(f"not supported: push_cache has no introspectable signature ({exc})")
        problems = signature_problems(sig, entry,
                                      kwargs_may_be_named=bool(clause.procedure.get("kwargs_may_be_named")))
        assert not problems, (f"clause {clause.id} (release {ctx.release})\n  inspect.signature(push_cache) = {sig}\n  "
                              + "\n  ".join(problems))


@procedure("product", _single)
def run_product(clause: Any, item: Item) -> None:
    """The backend's declared product (``capabilities["product"]``) against the spec's ``types.products`` lists: the
    clause judges it when the product is in one of the lists its procedure names (``products``: an entry of a list,
    or a key of a mapping), or, with ``unlisted``, in none of them (no product declared, an emulator); then a
    baseline push is judged by the clause's expect. Another clause judges the other products."""
    ctx = session.current()
    product = ctx.caps.get("product")
    name = str(product).lower() if product is not None else None
    table = ctx.spec.types.get("products") or {}
    member = [k for k, v in table.items() if isinstance(v, (list, Mapping))
              and name in {str(p).lower() for p in v}]
    wanted = clause.procedure.get("products") or []
    if not (set(member) & set(wanted) or (not member and clause.procedure.get("unlisted", False))):
        where = f"listed under types.products {', '.join(member)}" if member else "in no types.products list"
        pytest.skip(f"not supported: the declared product {product!r} ({where}) is judged by another clause")
    with opened(scenario_for(ctx.spec, clause), clause.id) as tb:
        call = tb.call({})
        outcome = tb.push(call, bound=per_call_bound())
        judge(tb, call, outcome, outcomes.parse(clause.expect), clause.id, f"product {product or 'undeclared'}")


# ------------------------------------------------------------------------------------------------ concurrency


@procedure("concurrent", _single)
def run_concurrent(clause: Any, item: Item) -> None:
    """Several threads push the same source into distinct destination caches at once."""
    ctx = session.current()
    require(list(clause.requires))
    n = int(clause.procedure.get("threads", 4))
    scenario = deep_merge(scenario_for(ctx.spec, clause), {"link": False})
    expectation = outcomes.parse(clause.expect)
    with opened(scenario, clause.id) as tb:
        assert tb.dst is not None and tb.src is not None
        dsts: list[CacheInfo] = [tb.dst]
        for i in range(1, n):
            info = tb.make_cache(f"dst{i}", "remote", scenario["dst"], guard=True)
            tb.fill_sentinel(info)
            dsts.append(info)
        tb.link()
        calls: list[Call] = []
        for info in dsts:
            tb.dst = info
            calls.append(tb.call({"src_batch_index": len(calls) % tb.src.batch}))
        results: list[Any] = [None] * n
        barrier = threading.Barrier(n)

        def run(i: int) -> None:
            args, kwargs = calls[i].build()
            barrier.wait(timeout=10)
            try:
                tb.local.cache_manager.push_cache(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                results[i] = exc

        tb.rec.comment(f"{n} threads at once: " + " | ".join(c.code for c in calls))
        workers = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
        for t in workers:
            t.start()
        for t in workers:
            t.join(per_call_bound())
        hung = [i for i, t in enumerate(workers) if t.is_alive()]
        assert not hung, f"clause {clause.id}: concurrent pushes {hung} did not return (hang)"
        session.COUNTERS.push_calls += n
        for i, info in enumerate(dsts):
            tb.dst = info
            others = tuple(d.name for d in dsts if d is not info)
            obs = Observation(tb, calls[i], Outcome(results[i], 0.0))
            problem = expectation.outcome_problem(obs)
            if problem:
                fail(clause.id, f"thread {i}", calls[i], problem)
            problems = [p for p in expectation.effect_problems(obs)
                        if not any(p.startswith(f"{o} ") for o in others)]  # the other threads' destinations
            if problems:
                fail(clause.id, f"thread {i}", calls[i], f"destination {info.name} is wrong after concurrent pushes",
                     problems)


# ------------------------------------------------------------------------------------------------ example streams


def stream_seed(clause_id: str, key: str) -> int:
    """A stream's seed: from the clause ID and the stream key only (not from titles or test names)."""
    return zlib.crc32(f"{clause_id}|{key}".encode())


def examples(kind: str) -> int:
    """Examples per stream of ``kind``: the spec's count, scaled by the hypothesis profile (certify: as written)."""
    counts = session.current().spec.generation.get("examples") or {}
    n = int(counts.get(kind, BASE_EXAMPLES))
    return max(1, n * _profile().max_examples // BASE_EXAMPLES)


def _profile() -> settings:
    current = settings.default
    assert current is not None  # hypothesis always has a loaded profile
    return current


#: seconds each example of a stream adds to its test's time bound (a hung push is caught sooner, per call)
SECONDS_PER_EXAMPLE = 5


def run_stream(clause_id: str, key: str, count: int, strategy: st.SearchStrategy[Any],
               body: Callable[[Any], None]) -> None:
    """Run ``body`` over ``count`` examples of a hypothesis stream of its own (its seed fixed under the
    derandomized profile)."""
    __tracebackhide__ = True

    @settings(max_examples=count)
    @given(strategy)
    def stream(example: Any) -> None:
        body(example)

    if _profile().derandomize:
        stream = seed(stream_seed(clause_id, key))(stream)
    stream()


def _transfer_items(clause: Any) -> list[Item]:
    each = clause.procedure.get("each")
    ctx = session.current()
    if each == "data_type":
        dom = strategies.domain(ctx.spec, clause.level, ctx.caps, ctx.params)
        return [Item(dt, ("data_type", dt), examples("random_layouts_each")) for dt in dom.data_types]
    if each == "transfer":
        pairs = (ctx.spec.types.get("transfers") or {}).get("pairs") or []
        mine = [p for p in pairs if strategies.LEVEL_RANK.get(p.get("level", "must"), 0)
                <= strategies.LEVEL_RANK[clause.level]]
        return [Item(f"{p['src']}_to_{p['dst']}", ("transfer", (p["src"], p["dst"])), examples("random_layouts_each"))
                for p in mine]
    return [Item("layouts", None, examples("random_layouts"))]


@procedure("random_layouts", _transfer_items)
def run_random_layouts(clause: Any, item: Item) -> None:
    """Random valid layouts drawn from the spec's domains; each pushed once and judged by the clause's expect."""
    __tracebackhide__ = True
    ctx = session.current()
    require(list(clause.requires))
    expectation = outcomes.parse(clause.expect)
    dom = strategies.domain(ctx.spec, clause.level, ctx.caps, ctx.params)
    kw: dict[str, Any] = {}
    if item.data is not None:
        what, value = item.data
        if what == "transfer":
            require([f"placements.{value[0]}", f"placements.{value[1]}"])
        kw[what] = value
    if "guards" in outcomes.needs(expectation):
        kw["dst_register"] = True  # guard bands surround registered memory only
    def body(layout: strategies.Layout) -> None:
        push_layout(clause, layout, expectation, str(layout))

    run_stream(clause.id, item.key, item.examples, strategies.layouts(dom, **kw), body)


def push_layout(clause: Any, layout: strategies.Layout, expectation: Expectation, label: str) -> None:
    __tracebackhide__ = True
    ctx = session.current()
    scenario = deep_merge(ctx.spec.scenario, layout.scenario_override())
    with opened(scenario, clause.id, guard=False, seed=layout.seed) as tb:
        call = tb.call(layout.args(ctx.params))
        outcome = tb.push(call, bound=per_call_bound())
        judge(tb, call, outcome, expectation, clause.id, label)


# ------------------------------------------------------------------------------------------------ invalid inputs


@dataclass(frozen=True)
class InvalidStream:
    rule: str
    side: str
    pairs: bool


def invalid_items(clause: Any) -> list[Item]:
    gen = clause.generate or {}
    out = []
    for rule in gen["rules"]:
        for side in violations.applicable_sides(rule, gen.get("sides")):
            suffix = "" if side == "-" else f"-{side}"
            out.append(Item(f"invalid-{rule}{suffix}", InvalidStream(rule, side, False), examples("invalid_inputs")))
        if gen.get("pairs"):
            out.append(Item(f"invalid-{rule}-paired", InvalidStream(rule, "both", True), examples("invalid_pairs")))
    return out


def _partners(clause: Any, rule: str) -> list[tuple[Any, str]]:
    """Rules of other parameters, from every must clause of the release that generates invalid inputs and that
    the vendor does not depart from (a partner with a recorded deviation would pin its departure on this
    clause: the vendor's silent no-op for a too large tensor_num_per_layer also skips every later check)."""
    group = violations.RULES[rule].group
    out = []
    for other in session.current().selected.clauses:
        if other.level != "must" or not other.generate or other.id == clause.id or other.deviation:
            continue
        out += [(other, r) for r in other.generate["rules"] if violations.RULES[r].group != group]
    return out


def run_invalid(clause: Any, item: Item) -> None:
    """Valid layouts broken by one rule of the clause (on the side named), or by that rule and a rule of another
    parameter; the call must raise as the clause says (either clause, for a pair) and write nothing it may not."""
    __tracebackhide__ = True
    ctx = session.current()
    stream: InvalidStream = item.data
    require(list(clause.requires))
    dom = strategies.domain(ctx.spec, "must", ctx.caps, ctx.params)
    base = outcomes.parse(clause.expect)
    partners = _partners(clause, stream.rule) if stream.pairs else []
    if stream.pairs and not partners:
        pytest.skip(f"not supported: no other parameter's rule to pair {stream.rule} with in this release")
    need = max([violations.RULES[stream.rule].min_tensors] + [violations.RULES[r].min_tensors for _, r in partners])

    @st.composite
    def broken(draw: Any) -> tuple[strategies.Layout, Expectation]:
        lay = draw(strategies.layouts(dom, same_tensors=True, min_tensors=need))
        rules = [(stream.rule, stream.side, base)]
        if partners:
            other, rule = draw(st.sampled_from(partners), label="paired rule")
            rules.append((rule, "both", outcomes.parse(other.expect)))
        expectation: Expectation = base
        for rule, side, exp in sorted(rules, key=lambda r: violations.RULES[r[0]].order):
            lay = violations.RULES[rule].apply(draw, lay, side)
            if exp is not base:
                expectation = outcomes.union(expectation, exp)
        return lay, expectation

    def body(example: tuple[strategies.Layout, Expectation]) -> None:
        layout, expectation = example
        push_layout(clause, layout, expectation, str(layout))

    run_stream(clause.id, item.key, item.examples, broken(), body)

"""Running one (clause, case) pair: build the scenario, make the call, check the spec's expectation."""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from . import session
from .harness import (
    PARAMS,
    Check,
    HarnessError,
    World,
    describe_exception,
    diff_tensors,
    exception_class,
    missing_capabilities,
    scenario_for,
    scenario_needs,
)
from .spec import Case

BASELINE_CASE = Case("baseline", {}, {}, None, None)
_WRITES_NOTHING = re.compile(r"writes nothing|nothing is written|never written|writes no byte", re.I)
_DELAY = re.compile(r"delay\s+([0-9]*\.?[0-9]+)\s*s\b")
DEFAULT_DELAY_S = 0.6


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
def opened(scenario: Mapping[str, Any], clause_id: str, **kw: Any) -> Iterator[World]:
    """A World for ``scenario``; a failure while building it fails the test with a clear line."""
    ctx = session.current()
    world = World(
        ctx.backend,
        scenario,
        backend_spec=ctx.backend_spec,
        caps=ctx.caps,
        types=ctx.spec.types,
        params=ctx.params,
        **kw,
    )
    try:
        try:
            world.open()
        except HarnessError as exc:
            pytest.fail(f"clause {clause_id}: building the scenario failed (before the call under test): {exc}",
                        pytrace=False)
        yield world
    finally:
        world.close()


def faults_for(clause: Any, case: Any, scenario: Mapping[str, Any], ids: Mapping[str, int]) -> list[tuple[str, dict[str, Any]]]:
    """The faults to inject before the call: ``scenario.fault`` (one mapping or a list), else derived from the
    clause's ``faults.*`` requirements (delay seconds from the case's note)."""
    spec_faults = scenario.get("fault")
    out: list[tuple[str, dict[str, Any]]] = []
    if spec_faults:
        for f in spec_faults if isinstance(spec_faults, list) else [spec_faults]:
            node = f.get("node", f.get("on", "local"))
            fault = {k: v for k, v in dict(f).items() if k not in ("node", "on")}
            if isinstance(fault.get("peer"), str):
                fault["peer"] = ids.get(fault["peer"], fault["peer"])
            out.append((str(node), fault))
        return out
    for req in clause.requires:
        head, _, kind = req.partition(".")
        if head != "faults":
            continue
        if kind == "delay":
            m = _DELAY.search(case.note or "")
            out.append(("local", {"kind": "delay", "seconds": float(m.group(1)) if m else DEFAULT_DELAY_S}))
        elif kind == "drop_link":
            out.append(("local", {"kind": "drop_link", "peer": ids["remote"]}))
        elif kind == "kill_node":
            out.append(("remote", {"kind": "kill_node"}))
    return out


def run_case(
    clause: Any,
    case: Any,
    *,
    positional: bool = False,
    only_given: bool = False,
    guard: bool = False,
) -> None:
    """The generic test body for one spec case."""
    __tracebackhide__ = True
    ctx = session.current()
    scenario = scenario_for(ctx.spec, clause, case)
    require(list(clause.requires) + scenario_needs(scenario))
    absent = [n for n in case.args if n in PARAMS and n not in ctx.params]
    if absent:
        pytest.skip(f"not in release {ctx.release}: push_cache has no parameter {', '.join(absent)}")
    expect = clause.expect_for(case)
    if scenario.get("construct"):
        run_construct(clause, case, scenario, expect)
        return
    with opened(scenario, clause.id, guard=guard, title=f"{clause.id} [{case.name}]") as world:
        faults = faults_for(clause, case, scenario, {"local": world.local_id, "remote": world.remote_id})
        for node_name, fault in faults:
            world.inject(node_name, fault)
        delay = sum(f.get("seconds", 0.0) for _, f in faults)
        bound = per_call_bound(extra=4 * (delay + sync_timeout_s(scenario)) if faults else 0.0)
        call = world.call(case.args, positional=positional, only_given=only_given)
        outcome = world.push(call, bound=bound)
        check = Check(world, call, clause.id, case.name)
        check_outcome(check, outcome, clause, expect)
        if clause.family in ("timeout", "config") and "raises" in expect and outcome.exc is not None:
            _check_raised_in_time(check, outcome, scenario, call, world)


#: scheduling slack allowed on top of sync_kv_timeout per layer before a timeout counts as late
TIMEOUT_SLACK_S = 2.0


def _check_raised_in_time(check: Check, outcome: Any, scenario: Mapping[str, Any], call: Any, world: World) -> None:
    """A timeout must come about when the timeout expires: at most one sync_kv_timeout per layer, plus slack."""
    __tracebackhide__ = True
    from .harness import plan_transfer

    plan = plan_transfer(call, world.src) if world.src is not None else None
    layers = max(1, len(plan.src_layers)) if plan is not None else 1
    limit = layers * sync_timeout_s(scenario) + TIMEOUT_SLACK_S
    if outcome.seconds > limit:
        check.fail(f"push_cache raised only after {outcome.seconds:.2f}s; with sync_kv_timeout "
                   f"{sync_timeout_s(scenario) * 1000:.0f} ms and {layers} layer(s) it should raise within "
                   f"{limit:.1f}s")


def check_outcome(check: Check, outcome: Any, clause: Any, expect: Mapping[str, Any]) -> None:
    __tracebackhide__ = True
    data = expect.get("data")
    if data == "returns_none":
        check.expect(outcome, {"outcome": "success", "data": "exact"})
        if outcome.result is not None:
            check.fail(f"push_cache returned {outcome.result!r}; the documentation says it returns nothing (None)")
        return
    if data == "exception_interface":
        check.expect(outcome, {"raises": ["LLMException"]})
        api = check.world.api
        status = getattr(outcome.exc, "status_code", None)
        members = list(api.LLMStatusCode)
        if status is None or status not in members or status == api.LLMStatusCode.LLM_SUCCESS:
            check.fail(
                f"LLMException.status_code is {status!r}: not a member of node.api.LLMStatusCode other than LLM_SUCCESS",
                [describe_exception(outcome.exc)] if outcome.exc else [],
            )
        return
    check.expect(outcome, expect)
    if "raises" in expect:
        if clause.family == "data":
            # a failing layer leaves the layers before it pushed (no rollback): exactly the valid pairs landed
            errors = check.data_errors()
            if errors:
                check.fail("push_cache raised as expected, but the layers before the failure are not pushed "
                           "(or other bytes changed)", errors)
        elif clause.family == "safety" or _WRITES_NOTHING.search(clause.title or ""):
            errors = unchanged_errors(check.world)
            if errors:
                check.fail("push_cache raised as expected, but it wrote into the destination", errors)


def unchanged_errors(world: World) -> list[str]:
    errors = diff_tensors(world.dst_before, world.read_dst(), "dst (must be unchanged)")
    errors += diff_tensors(world.src_data, world.read_src(), "src (must be unchanged)")
    return errors + world.guard_violations()


# ---------------------------------------------------------------------------------------- constructors


@dataclass
class CodeCall:
    code: str


def _construct_arg(api: Any, name: str, value: Any) -> tuple[Any, str]:
    if name == "data_type" and isinstance(value, str) and hasattr(api.DataType, value):
        return getattr(api.DataType, value), f"api.DataType.{value}"
    if name == "placement" and isinstance(value, str) and hasattr(api.Placement, value):
        return getattr(api.Placement, value), f"api.Placement.{value}"
    return value, repr(value)


def run_construct(clause: Any, case: Any, scenario: Mapping[str, Any], expect: Mapping[str, Any]) -> None:
    """A constructor clause (scenario.construct): build node.api.<Type>(**args) and check the outcome."""
    __tracebackhide__ = True
    type_name = str(scenario["construct"])
    with opened(scenario, clause.id, minimal=True) as world:
        api = world.api
        cls = getattr(api, type_name, None)
        args = {k: _construct_arg(api, k, v) for k, v in case.args.items()}
        code = f"api.{type_name}({', '.join(f'{k}={c}' for k, (_, c) in args.items())})"
        world.step(f"obj = {code}")
        check = Check(world, CodeCall(code), clause.id, case.name)  # type: ignore[arg-type]
        if cls is None:
            check.fail(f"node.api has no {type_name}")
        try:
            obj, exc = cls(**{k: v for k, (v, _) in args.items()}), None
        except Exception as e:  # noqa: BLE001
            obj, exc = None, e
        if "raises" in expect:
            want = " or ".join(expect["raises"])
            if exc is None:
                check.fail(f"expected {want}, but the constructor returned {obj!r}")
            classes = tuple(exception_class(n, api) for n in expect["raises"])
            if not isinstance(exc, classes):
                check.fail(f"expected {want}, but the constructor raised {describe_exception(exc)}")
            return
        if exc is not None:
            check.fail(f"expected the constructor to succeed, but it raised {describe_exception(exc)}")
        check_fields(check, type_name, obj, args, api)


def check_fields(check: Check, type_name: str, obj: Any, args: Mapping[str, tuple[Any, str]], api: Any) -> None:
    __tracebackhide__ = True
    want = {k: v for k, (v, _) in args.items()}
    if type_name == "CacheKeyByIdAndIndex":
        want.setdefault("batch_index", 0)
    if type_name == "CacheDesc":
        want.setdefault("placement", api.Placement.DEVICE)
    problems = []
    for name, value in want.items():
        if not hasattr(obj, name):
            problems.append(f"{type_name} has no attribute {name}")
            continue
        got = getattr(obj, name)
        if isinstance(value, (list, tuple)):
            try:
                same = list(got) == list(value)
            except TypeError:
                same = False
        else:
            same = got == value
        if not same:
            problems.append(f"{type_name}.{name} is {got!r}, expected {value!r}")
    if problems:
        check.fail("fields differ from the constructor arguments", problems)


# ---------------------------------------------------------------------------------------- properties


def placements_supported(wanted: Sequence[str] = ("HOST", "DEVICE")) -> tuple[str, ...]:
    declared = session.current().caps.get("placements") or []
    return tuple(p for p in wanted if p in declared) or ("DEVICE",)


def tnpl_range_supported() -> tuple[int, int]:
    """tensor_num_per_layer values to draw: 1-4, or only the fixed 2 of releases without the parameter."""
    return (1, 4) if "tensor_num_per_layer" in session.current().params else (2, 2)


def run_layout(clause: Any, layout: Any, aspects: Sequence[str], *, guard: bool = False) -> None:
    """Push one random layout and check the named aspects of the data postcondition."""
    __tracebackhide__ = True
    from .harness import deep_merge

    ctx = session.current()
    require(list(clause.requires))
    scenario = deep_merge(ctx.spec.scenario, layout.scenario_override())
    with opened(scenario, clause.id, guard=guard, seed=layout.seed, title=f"{clause.id} {layout}") as world:
        call = world.call({k: v for k, v in layout.args().items() if k not in PARAMS or k in ctx.params})
        outcome = world.push(call, bound=per_call_bound())
        check = Check(world, call, clause.id, "random layout")
        check.expect(outcome, {"outcome": "success"}, data=False)
        errors: list[str] = []
        for aspect in aspects:
            errors += check.aspect_errors(aspect)
        if errors:
            check.fail(f"push_cache returned normally but the data postcondition fails ({', '.join(aspects)})",
                       errors)


# ---------------------------------------------------------------------------------------- signatures

_EMPTY = inspect.Parameter.empty


def signature_problems(sig: inspect.Signature, entry: dict) -> list[str]:
    """Differences between a live signature and a spec signature entry (self excluded)."""
    problems = []
    params = [p for p in sig.parameters.values() if p.name != "self"]
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY, p.KEYWORD_ONLY)]
    want = [p for p in entry.get("parameters", []) if p.get("kind") != "var_keyword"]
    got_names = [p.name for p in named]
    want_names = [p["name"] for p in want]
    if got_names != want_names:
        problems.append(f"parameters are {got_names}, the spec says {want_names}")
    live = {p.name: p for p in named}
    for p in want:
        q = live.get(p["name"])
        if q is None:
            continue
        if q.kind is not q.POSITIONAL_OR_KEYWORD:
            problems.append(f"{p['name']} is {q.kind.description}, the spec says positional or keyword")
        if p.get("required"):
            if q.default is not _EMPTY:
                problems.append(f"{p['name']} has default {q.default!r}, the spec says it is required")
        elif "default" in p:
            if q.default is _EMPTY:
                problems.append(f"{p['name']} has no default, the spec says {p['default']!r}")
            elif q.default != p["default"] or type(q.default) is not type(p["default"]):
                problems.append(f"{p['name']} defaults to {q.default!r}, the spec says {p['default']!r}")
    has_var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    var_kwargs = entry.get("var_kwargs")
    wants_var_kw = bool(var_kwargs) or any(p.get("kind") == "var_keyword" for p in entry.get("parameters", []))
    if has_var_kw != wants_var_kw:
        problems.append(f"**kwargs is {'present' if has_var_kw else 'absent'}, the spec says "
                        f"{'present' if wants_var_kw else 'absent'}")
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        problems.append("push_cache takes *args; the spec has none")
    return problems

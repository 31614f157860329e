"""Family `types`: the data model push_cache is called with (enums, element sizes, keys, descs, exceptions)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance_tests import session
from conformance_tests.cases import CodeCall, opened, run_case
from conformance_tests.generate import by_data, case_params, clause_params, clauses, inherited_cases
from conformance_tests.harness import Check, describe_exception, scenario_for


@pytest.mark.parametrize(("clause", "case"), case_params("types"))
def test_case(clause, case):
    run_case(clause, case)


def _enum_type(clause) -> str | None:
    """push_cache.types.data_type.values -> DataType (a `types` table of the spec)."""
    part = clause.id.split(".")[2]
    tables = session.current().spec.types
    squeezed = part.replace("_", "").lower()
    for name in tables:
        if name.lower() in (squeezed, "llm" + squeezed):
            return name
    return None


def _enum_params() -> list:
    out = []
    types = session.current().spec.types
    for clause in clauses("types", by_data("enum_values")):
        table = _enum_type(clause)
        raw = (types.get(table) or {}) if table else {}
        members = {k: v for k, v in (raw.get("members") or raw).items() if isinstance(v, dict) and "value" in v}
        for member, info in members.items():
            value = info.get("value") if isinstance(info, dict) else info
            out.append(pytest.param(clause, table, member, value, id=f"{clause.id}-{member}",
                                    marks=pytest.mark.clause(clause.id)))
        if not members:  # still name the clause, so it fails instead of silently vanishing
            out.append(pytest.param(clause, table, None, None, id=f"{clause.id}-no_table",
                                    marks=pytest.mark.clause(clause.id)))
    return out


@pytest.fixture(scope="module")
def api():
    ctx = session.current()
    with opened(ctx.spec.scenario, "push_cache.types", minimal=True) as world:
        yield world.api


@pytest.mark.parametrize(("clause", "table", "member", "value"), _enum_params())
def test_enum_value(api, clause, table, member, value):
    assert table is not None and member is not None, f"clause {clause.id}: no enum table in the spec's types"
    enum = getattr(api, table, None)
    assert enum is not None, f"clause {clause.id}: node.api has no {table}"
    got = getattr(enum, member, None)
    assert got is not None, f"clause {clause.id}: node.api.{table} has no member {member} (spec value {value})"
    raw = getattr(got, "value", got)
    assert raw == value, f"clause {clause.id}: node.api.{table}.{member} = {raw!r}, the spec says {value}"


def _size_params() -> list:
    out = []
    members = (session.current().spec.types.get("DataType") or {}).get("members") or {}
    for clause in clauses("types", by_data("element_size")):
        for name, info in members.items():
            # DT_STRING's 16 bytes are the vendor's override: checked by the should clause that names it
            if (name == "DT_STRING") != clause.id.endswith(".string_size"):
                continue
            if isinstance(info, dict) and isinstance(info.get("size"), int):
                out.append(pytest.param(clause, name, info["size"], id=f"{clause.id}-{name}",
                                        marks=pytest.mark.clause(clause.id)))
    return out


@pytest.mark.parametrize(("clause", "data_type", "size"), _size_params())
def test_element_size(clause, data_type, size):
    ctx = session.current()
    shape = [2, 3]
    desc = {"num_tensors": 1, "shape": shape, "data_type": data_type, "placement": "DEVICE"}
    if "DEVICE" not in (ctx.caps.get("placements") or ["DEVICE"]):
        desc["placement"] = ctx.caps["placements"][0]
    with opened(scenario_for(ctx.spec, clause), clause.id, minimal=True) as world:
        if not hasattr(world.api.DataType, data_type):
            pytest.skip(f"not supported: node.api.DataType has no {data_type}")
        try:
            info = world.make_cache("c", world.local, "local", desc)
            got = np.asarray(world.local.read_tensor(info.cache, 0)).size
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"clause {clause.id}: allocating a {data_type} cache of shape {shape} failed: "
                        f"{describe_exception(exc)}", pytrace=False)
        want = math.prod(shape) * size
        assert got == want, (f"clause {clause.id}: a {data_type} tensor of shape {shape} holds {got} bytes, "
                             f"expected {want} ({math.prod(shape)} elements x {size} bytes)")


@pytest.mark.parametrize("clause", clause_params("types", by_data("exception_base")))
def test_exception_base(clause):
    ctx = session.current()
    with opened(scenario_for(ctx.spec, clause), clause.id, minimal=True) as world:
        exc = getattr(world.api, "LLMException", None)
        assert isinstance(exc, type), f"clause {clause.id}: node.api.LLMException is {exc!r}, not a class"
        assert issubclass(exc, RuntimeError), (
            f"clause {clause.id}: LLMException bases are {[b.__name__ for b in exc.__mro__[1:]]}, "
            "expected a RuntimeError subclass")


@pytest.mark.parametrize(
    "clause", clause_params("types", lambda c: c.expect.get("data") == "fields" and not inherited_cases(c)
                            and not c.scenario.get("construct"))
)
def test_cache_fields(clause):
    ctx = session.current()
    with opened(scenario_for(ctx.spec, clause), clause.id) as world:
        src = world.src
        world.step("print(src.cache_id, src.cache_desc, src.tensor_addrs, src.is_blocks_cache)")
        check = Check(world, CodeCall("local.cache_manager.allocate_cache(...)"), clause.id)  # type: ignore[arg-type]
        problems = []
        cache = src.cache
        if not isinstance(getattr(cache, "cache_id", None), int):
            problems.append(f"cache_id is {getattr(cache, 'cache_id', None)!r}, not an int")
        desc = getattr(cache, "cache_desc", None)
        if getattr(desc, "num_tensors", None) != src.num_tensors:
            problems.append(f"cache_desc.num_tensors is {getattr(desc, 'num_tensors', None)!r}, "
                            f"expected {src.num_tensors}")
        addrs = getattr(cache, "tensor_addrs", None)
        if not isinstance(addrs, (list, tuple)) or len(addrs) != src.num_tensors:
            problems.append(f"tensor_addrs is {addrs!r}, expected {src.num_tensors} addresses")
        if getattr(cache, "is_blocks_cache", None) is not False:
            problems.append(f"is_blocks_cache is {getattr(cache, 'is_blocks_cache', None)!r}, expected False")
        if problems:
            check.fail("the allocated Cache does not expose the documented fields", problems)

"""Procedures that check the API's surface against the spec's data model: enum members and values, element
sizes, the exception's base, an allocated Cache's fields, push_cache's signature, the declared product."""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping

import numpy as np
import pytest

from ..judging.judge import fail, judge
from ..judging.signatures import signature_problems
from ..running.context import RunContext
from ..spec import CacheSpec, Clause
from ..spec.model import Member
from .common import opened, per_call_bound
from .registry import Item, procedure, single


def _members(run: RunContext, table: str) -> Mapping[str, Member]:
    found = run.spec.types.enums.get(table)
    return found.members if found is not None else {}


def _member_items(run: RunContext, clause: Clause) -> list[Item]:
    table = str(clause.procedure.table)
    return ([Item(m, (table, m, info.value)) for m, info in _members(run, table).items()]
            or [Item("no_table", (table, None, None))])


@procedure("enum_values", _member_items)
def run_enum_value(run: RunContext, clause: Clause, item: Item) -> None:
    """node.api.<table>.<member> exists and has the spec's value."""
    table, member, value = item.data
    assert member is not None, f"clause {clause.id}: the spec's types table {table} has no members"
    with opened(run, run.spec.scenario, minimal=True) as tb:
        enum = getattr(tb.api, table, None)
        assert enum is not None, f"clause {clause.id}: node.api has no {table}"
        got = getattr(enum, member, None)
        assert got is not None, f"clause {clause.id}: node.api.{table} has no member {member} (spec value {value})"
        raw = getattr(got, "value", got)
        assert raw == value, f"clause {clause.id}: node.api.{table}.{member} = {raw!r}, the spec says {value}"


def _size_items(run: RunContext, clause: Clause) -> list[Item]:
    vendor = clause.procedure.sizes == "vendor"
    return [Item(name, (name, info.size)) for name, info in _members(run, "DataType").items()
            if isinstance(info.size, int) and (info.size_source == "vendor") == vendor]


#: the shape of the tensor whose byte count is checked (two dimensions, neither of them 1)
SIZE_SHAPE = (2, 3)


@procedure("element_size", _size_items)
def run_element_size(run: RunContext, clause: Clause, item: Item) -> None:
    """A tensor of a DataType holds prod(shape) elements of its element size."""
    data_type, size = item.data
    placements = run.caps.get("placements") or ["DEVICE"]
    desc = CacheSpec(1, SIZE_SHAPE, data_type, "DEVICE" if "DEVICE" in placements else placements[0])
    with opened(run, clause.scenario, minimal=True) as tb:
        if not hasattr(tb.api.DataType, data_type):
            pytest.skip(f"not supported: node.api.DataType has no {data_type}")
        got = np.asarray(tb.local.read_tensor(tb.make_cache("c", "local", desc).cache, 0)).size
        want = math.prod(SIZE_SHAPE) * size
        assert got == want, (f"clause {clause.id}: a {data_type} tensor of shape {list(SIZE_SHAPE)} holds {got} bytes, "
                             f"expected {want} ({math.prod(SIZE_SHAPE)} elements x {size} bytes)")


@procedure("exception_base", single)
def run_exception_base(run: RunContext, clause: Clause, item: Item) -> None:
    """node.api.LLMException derives from the base class the spec's types table names."""
    record = run.spec.types.records.get("LLMException")
    base = record.base if record is not None and record.base else "RuntimeError"
    with opened(run, clause.scenario, minimal=True) as tb:
        exc = getattr(tb.api, "LLMException", None)
        assert isinstance(exc, type), f"clause {clause.id}: node.api.LLMException is {exc!r}, not a class"
        assert any(b.__name__ == base for b in exc.__mro__), (
            f"clause {clause.id}: LLMException bases are {[b.__name__ for b in exc.__mro__[1:]]}, expected a {base} "
            "subclass")


@procedure("cache_fields", single)
def run_cache_fields(run: RunContext, clause: Clause, item: Item) -> None:
    """An allocated Cache exposes the fields of the spec's Cache table with the values the allocation implies."""
    with opened(run, clause.scenario, guard=False) as tb:
        src = tb.src
        assert src is not None
        cache = src.cache
        problems = []
        if not isinstance(getattr(cache, "cache_id", None), int):
            problems.append(f"cache_id is {getattr(cache, 'cache_id', None)!r}, not an int")
        if getattr(getattr(cache, "cache_desc", None), "num_tensors", None) != src.num_tensors:
            problems.append(f"cache_desc.num_tensors is not {src.num_tensors}")
        addrs = getattr(cache, "tensor_addrs", None)
        if not isinstance(addrs, (list, tuple)) or len(addrs) != src.num_tensors:
            problems.append(f"tensor_addrs is {addrs!r}, expected {src.num_tensors} addresses")
        if getattr(cache, "is_blocks_cache", None) is not False:
            problems.append(f"is_blocks_cache is {getattr(cache, 'is_blocks_cache', None)!r}, expected False")
        if problems:
            fail(clause.id, "allocate_cache", None, "the allocated Cache does not expose the documented fields",
                 problems)


@procedure("inspect_signature", single)
def run_signature(run: RunContext, clause: Clause, item: Item) -> None:
    """inspect.signature(<the operation>) is the release's signature."""
    api = run.spec.api
    with opened(run, clause.scenario, minimal=True) as tb:
        try:
            sig = inspect.signature(getattr(tb.local.cache_manager, api))
        except (TypeError, ValueError) as exc:
            # e.g. a native binding: the behavioural clauses (positional, defaults, no_var_kwargs) still judge it
            pytest.skip(f"not supported: {api} has no introspectable signature ({exc})")
        problems = signature_problems(sig, run.signature, kwargs_may_be_named=clause.procedure.kwargs_may_be_named)
        assert not problems, (f"clause {clause.id} (release {run.release})\n  inspect.signature({api}) = {sig}\n  "
                              + "\n  ".join(problems))


@procedure("product", single)
def run_product(run: RunContext, clause: Clause, item: Item) -> None:
    """The backend's declared product (``capabilities["product"]``) against the spec's ``types.products`` lists:
    the clause judges it when the product is in one of the lists its procedure names (``products``), or, with
    ``unlisted``, in none of them (no product declared, an emulator); then a baseline push is judged by the
    clause's expect. Another clause judges the other products."""
    product = run.caps.get("product")
    member = run.spec.types.products.lists_holding(str(product)) if product is not None else []
    wanted = clause.procedure.products
    if not (set(member) & set(wanted) or (not member and clause.procedure.unlisted)):
        where = f"listed under types.products {', '.join(member)}" if member else "in no types.products list"
        pytest.skip(f"not supported: the declared product {product!r} ({where}) is judged by another clause")
    with opened(run, clause.scenario) as tb:
        push = tb.call({})
        outcome = tb.push(push, bound=per_call_bound(run))
        judge(tb, push, outcome, clause.expect, clause.id, f"product {product or 'undeclared'}")

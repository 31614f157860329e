"""The ``construct`` procedure: ``node.api.<type>(**case args)`` refuses what the expectation says, or keeps every
field the spec's types table lists (its argument, or its documented default)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..inputs.values import Value, literal
from ..judging.judge import fail, raised_as
from ..running.context import RunContext
from ..spec import Case, Clause, Raises
from ..testbed.recorder import lit
from ..testbed.testbed import describe_exception
from .common import opened
from .registry import Item, case_items, procedure


@procedure("construct", case_items)
def run_construct(run: RunContext, clause: Clause, item: Item) -> None:
    __tracebackhide__ = True
    case: Case = item.data
    type_name = str(clause.procedure.type)
    expect = case.expect
    with opened(run, case.scenario, minimal=True) as tb:
        api = tb.api
        args = {k: _argument(run, api, k, literal(v)) for k, v in case.args.items()}
        code = f"api.{type_name}({', '.join(f'{k}={v.code}' for k, v in args.items())})"
        if getattr(api, type_name, None) is None:
            fail(clause.id, case.name, None, f"node.api has no {type_name}")
        try:
            obj, exc = tb.rec.invoke("obj", Value(api, "api"), type_name, **args), None
        except Exception as e:  # noqa: BLE001
            obj, exc = None, e
        if isinstance(expect, Raises):
            if not raised_as(expect, exc, api):
                got = f"returned {obj!r}" if exc is None else f"raised {describe_exception(exc)}"
                fail(clause.id, case.name, None, f"{code}: the constructor {got}, but the clause expects: "
                                                 f"{expect.describe()}")
            return
        if exc is not None:
            fail(clause.id, case.name, None, f"{code}: expected the constructor to succeed, but it raised "
                                             f"{describe_exception(exc)}")
        check_fields(run, clause, case, type_name, obj, args, api)


def _argument(run: RunContext, api: Any, name: str, value: Any) -> Value:
    """A member name of the enum the field is typed by becomes the member; anything else passes as is."""
    table = run.spec.types.field_type(name)
    enum = getattr(api, table, None) if table is not None and table in run.spec.types.enums else None
    if isinstance(value, str) and enum is not None and hasattr(enum, value):
        return Value(getattr(enum, value), f"api.{table}.{value}")
    return lit(value)


def check_fields(run: RunContext, clause: Clause, case: Case, type_name: str, obj: Any, args: Mapping[str, Value],
                 api: Any) -> None:
    """Every field the spec's types table lists keeps its argument, or its documented default."""
    __tracebackhide__ = True
    record = run.spec.types.records.get(type_name)
    fields = record.fields if record is not None else {}
    want = {k: v.obj for k, v in args.items()}
    for name, spec in fields.items():
        if name not in want and spec.has_default and spec.attribute:
            enum = getattr(api, spec.type, None)
            want[name] = getattr(enum, spec.default) if isinstance(spec.default, str) and enum is not None \
                else spec.default
    problems = []
    for name, value in want.items():
        if name in fields and not fields[name].attribute:
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

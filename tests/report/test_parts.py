"""The typed report model (conformance_tests/report/parts.py) is the schema's: every TypedDict has exactly the
properties, and the required ones, of the schema object it types, all the way down from Report, so a schema
change without its type (or a type without its schema) fails here; and from_json refuses what the schema does."""

from __future__ import annotations

import copy
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from conformance_tests.report import parts
from conformance_tests.report.model import VerdictKind
from conformance_tests.report.schema import ReportError, from_json, load_schema, to_json

GOLDEN = Path(__file__).with_name("golden")


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    assert ref.startswith("#/$defs/"), ref
    return _resolve(load_schema()["$defs"][ref.removeprefix("#/$defs/")])


def _descend(annotation: Any, node: dict[str, Any], where: str, seen: set[str], problems: list[str]) -> None:
    """Check ``annotation`` (a field's type) against ``node`` (its schema)."""
    node = _resolve(node)
    if typing.is_typeddict(annotation):
        _check(annotation, node, where, seen, problems)
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list and "items" in node:
        _descend(args[0], node["items"], where + "[]", seen, problems)
    elif origin is dict:
        if args[1] == parts.JSONValue and "properties" in node:
            problems.append(f"{where}: the schema lists properties {sorted(node['properties'])}, its type is "
                            "an open JSONObject")
        elif isinstance(node.get("additionalProperties"), dict):
            _descend(args[1], node["additionalProperties"], where + "{}", seen, problems)
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            _descend(arg, node, where, seen, problems)


def _check(td: Any, node: dict[str, Any], where: str, seen: set[str], problems: list[str]) -> None:
    seen.add(td.__name__)
    hints = typing.get_type_hints(td)
    properties = node.get("properties", {})
    if set(hints) != set(properties):
        problems.append(f"{where} ({td.__name__}): only in the type {sorted(set(hints) - set(properties))}, "
                        f"only in the schema {sorted(set(properties) - set(hints))}")
    if set(td.__required_keys__) != set(node.get("required", [])):
        problems.append(f"{where} ({td.__name__}): required in the type {sorted(td.__required_keys__)}, in the "
                        f"schema {sorted(node.get('required', []))}")
    for key, annotation in hints.items():
        if key in properties:
            _descend(annotation, properties[key], f"{where}.{key}", seen, problems)


def _problems() -> tuple[list[str], set[str]]:
    problems: list[str] = []
    seen: set[str] = set()
    _check(parts.Report, load_schema(), "$", seen, problems)
    return problems, seen


def test_every_typed_part_has_the_schemas_keys_all_the_way_down() -> None:
    problems, _ = _problems()
    assert problems == []


def test_every_typed_part_is_reached_from_the_report() -> None:
    _, seen = _problems()
    declared = {name for name, value in vars(parts).items() if typing.is_typeddict(value)}
    assert declared - seen == set()


def test_a_schema_property_the_type_lacks_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    # the check itself can fail: a property added to the schema's verdict and not to Verdict
    schema = copy.deepcopy(load_schema())
    schema["properties"]["verdict"]["properties"]["new_field"] = {"type": "string"}
    monkeypatch.setattr("tests.report.test_parts.load_schema", lambda: schema)
    problems, _ = _problems()
    assert problems and "new_field" in problems[0] and "Verdict" in problems[0]


def test_from_json_gives_the_report_back_and_to_json_its_bytes() -> None:
    text = (GOLDEN / "reference.report.json").read_text(encoding="utf-8")
    report = from_json(text)
    assert report["verdict"].get("kind") is VerdictKind.CERTIFIED
    assert to_json(report) == text


@pytest.mark.parametrize("breakage", [
    lambda r: r.pop("verdict"),
    lambda r: r["verdict"].update(kind="certified_declared"),
    lambda r: r["tests"][0].update(outcome="green"),
    lambda r: r["summary"].update(surprise=1),
])
def test_from_json_refuses_a_report_the_schema_refuses(breakage: Any) -> None:
    report = json.loads((GOLDEN / "every.report.json").read_text(encoding="utf-8"))
    breakage(report)
    with pytest.raises(ReportError, match="^here: not a valid report: "):
        from_json(json.dumps(report), "here")


@pytest.mark.parametrize("text", ["", "[]", "{", "[" * 200 + "]" * 200])
def test_from_json_refuses_what_is_no_report(text: str) -> None:
    with pytest.raises(ReportError, match="^here: "):
        from_json(text, "here")

"""The packaged report schema, validation and loading."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import jsonschema

from .model import VerdictKind
from .parts import Report

SCHEMA_PATH = Path(__file__).with_name("report.schema.json")
#: the deepest nesting a report may have: the kit's own reports nest a few levels below 20, and the report commands
#: walk values recursively (the builder's copies, the pages' templates), so a deeper file is refused as it is read,
#: before any of them could exhaust Python's stack
MAX_DEPTH = 100


class ReportError(ValueError):
    """A report that cannot be read or does not follow the schema; the message is one line."""


@functools.cache
def load_schema() -> dict[str, Any]:
    with SCHEMA_PATH.open(encoding="utf-8") as fh:
        return json.load(fh)


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    # the schema's own validity is a self-test's (tests/report/test_schema.py), not every run's
    return jsonschema.Draft202012Validator(load_schema())


def _one_line(text: object, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def validate_report(report: Any) -> None:
    """Raise ReportError naming the JSON path of the first problem when `report` breaks the schema."""
    if not isinstance(report, Mapping):
        raise ReportError(f"$: a report must be a JSON object, not {type(report).__name__}")
    errors = list(_validator().iter_errors(report))
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors)
    raise ReportError(f"{error.json_path}: {_one_line(error.message)}")


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep ``value``'s lists and objects nest (a scalar is 0), counted without recursion and no further than
    ``limit + 1`` (enough to say it is too deep)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if depth > limit:
            return depth
        stack.extend((child, depth) for child in children)
    return deepest


def parse_report(text: str, where: str) -> Any:
    """The JSON value of a report's text; a one-line ReportError (naming ``where``) for text that is not JSON or
    nests deeper than :data:`MAX_DEPTH`."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{where}: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:  # the decoder's own guard, far deeper than any report
        raise ReportError(f"{where}: not a valid report: nested deeper than {MAX_DEPTH} levels") from None
    if nesting_depth(value) > MAX_DEPTH:
        raise ReportError(f"{where}: not a valid report: nested deeper than {MAX_DEPTH} levels")
    return value


def to_json(report: Report) -> str:
    """The text of a report.json: the bytes every writer of one writes (two-space indents, UTF-8 as it is)."""
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def typed_report(value: Any) -> Report:
    """``value`` (a JSON value) as a :class:`Report`, once it follows the schema (a one-line ReportError where it
    does not); its verdict's kind becomes a :class:`VerdictKind` (a str: the JSON it writes is the same)."""
    validate_report(value)
    report = cast(Report, value)
    verdict = report["verdict"]
    if "kind" in verdict:
        verdict["kind"] = VerdictKind(verdict["kind"])
    return report


def from_json(text: str, where: str = "report") -> Report:
    """The report a report.json's text holds; a one-line ReportError (naming ``where``) for text that is not JSON,
    nests too deep or breaks the schema."""
    value = parse_report(text, where)
    try:
        return typed_report(value)
    except ReportError as exc:
        raise ReportError(f"{where}: not a valid report: {exc}") from None


def load_report(path: str | Path) -> Report:
    """Read and validate a report.json; every problem is a one-line ReportError naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ReportError(f"{path}: is a directory, not a report file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: cannot read: {_one_line(exc)}") from None
    return from_json(text, str(path))

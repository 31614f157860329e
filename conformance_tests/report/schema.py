"""The packaged report schema, validation and loading."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_PATH = Path(__file__).with_name("report.schema.json")


class ReportError(ValueError):
    """A report that cannot be read or does not follow the schema; the message is one line."""


@functools.cache
def load_schema() -> dict[str, Any]:
    with SCHEMA_PATH.open(encoding="utf-8") as fh:
        return json.load(fh)


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


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


def load_report(path: str | Path) -> dict[str, Any]:
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
    try:
        report = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"{path}: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    try:
        validate_report(report)
    except ReportError as exc:
        raise ReportError(f"{path}: not a valid report: {exc}") from None
    return report

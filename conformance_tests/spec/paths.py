"""Where the packaged specs and their schema are (``push_cache_spec``: one file per operation of the transfer
family, ``<api>.yaml``), and the vocabularies the schema defines."""

from __future__ import annotations

import functools
import importlib.resources
import json
import pathlib
from typing import Any

SPEC_PACKAGE = "push_cache_spec"
#: the operation a run certifies unless told another (--operation): the kit began as push_cache's
DEFAULT_OPERATION = "push_cache"
SPEC_FILE = f"{DEFAULT_OPERATION}.yaml"
SCHEMA_FILE = "spec.schema.json"


def default_spec_path() -> pathlib.Path:
    """The packaged spec: ``push_cache_spec/push_cache.yaml``."""
    return pathlib.Path(str(importlib.resources.files(SPEC_PACKAGE) / SPEC_FILE))


def operation_spec_path(api: str) -> pathlib.Path:
    """The packaged spec of operation ``api`` (``push_cache_spec/<api>.yaml``; it may not exist yet)."""
    return pathlib.Path(str(importlib.resources.files(SPEC_PACKAGE) / f"{api}.yaml"))


def operations() -> tuple[str, ...]:
    """The operations of the family, in the schema's order (its ``api`` enum)."""
    return tuple(schema()["properties"]["api"]["enum"])


def specified_operations() -> tuple[str, ...]:
    """The operations that have a packaged spec file, in the family's order."""
    return tuple(api for api in operations() if operation_spec_path(api).is_file())


def default_schema_path() -> pathlib.Path:
    return pathlib.Path(str(importlib.resources.files(SPEC_PACKAGE) / SCHEMA_FILE))


@functools.cache
def schema() -> dict[str, Any]:
    """The spec's JSON Schema (read once)."""
    return dict(json.loads(default_schema_path().read_text(encoding="utf-8")))


def schema_enum(*path: str) -> tuple[str, ...]:
    """The values of an enum of the schema's ``$defs``, e.g. ``schema_enum("clause", "family")``."""
    node: Any = schema()["$defs"][path[0]]
    for part in path[1:]:
        node = node["properties"][part]
    return tuple(node["enum"] if "enum" in node else node["items"]["enum"])


def families() -> tuple[str, ...]:
    """The clause families, in the schema's (and the reports') order."""
    return schema_enum("clause", "family")

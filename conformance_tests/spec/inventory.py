"""The transfer family's clause inventory (``spec/family_inventory.yaml``, installed in ``push_cache_spec``) as
typed rules: what each sibling operation's documentation states, sentence by sentence, before the operation has a
spec file of its own.  Validated against ``family_inventory.schema.json``; any problem is one :class:`SpecError`
line.  ``docs/family_clauses.py`` renders it and ``push-cache-kit clauses`` lists it.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import pathlib
from dataclasses import dataclass
from typing import Any

import jsonschema
import yaml

from .bounded_yaml import BoundedLoader, LimitError, read_bounded
from .errors import SpecError
from .levels import Level
from .paths import SPEC_PACKAGE

INVENTORY_FILE = "family_inventory.yaml"
INVENTORY_SCHEMA_FILE = "family_inventory.schema.json"


@dataclass(frozen=True)
class InventoryRule:
    """One rule a sibling's page states (or, with ``sentence`` None, the fact sheets alone)."""

    id: str
    operation: str
    level: Level
    says: str
    page: str | None
    where: str | None
    sentence: str | None
    raises: tuple[str, ...]
    status: str | None
    refines: str | None
    deviation: str | None
    facts: str | None

    def describe_expect(self) -> str:
        """The refusal the rule names, in the clause listing's words ("raises TypeError or ValueError"), or what
        the rule says must hold."""
        if not self.raises:
            return "documented rule (not yet a test)"
        names = " or ".join(f"{r}({self.status})" if r == "LLMException" and self.status else r
                            for r in self.raises)
        return f"raises {names}"


@dataclass(frozen=True)
class Inventory:
    path: pathlib.Path
    refined_spec: str
    pages: dict[str, str]  # operation -> its recorded page
    rules: tuple[InventoryRule, ...]

    @property
    def operations(self) -> tuple[str, ...]:
        return tuple(self.pages)

    def of(self, operation: str) -> tuple[InventoryRule, ...]:
        return tuple(r for r in self.rules if r.operation == operation)


def default_inventory_path() -> pathlib.Path:
    return pathlib.Path(str(importlib.resources.files(SPEC_PACKAGE) / INVENTORY_FILE))


def load_inventory(path: str | pathlib.Path | None = None) -> Inventory:
    """Read, validate and type the inventory (default: the packaged one)."""
    file = pathlib.Path(path) if path is not None else default_inventory_path()
    return _load(str(file.resolve()))


@functools.cache
def _schema() -> dict[str, Any]:
    text = (importlib.resources.files(SPEC_PACKAGE) / INVENTORY_SCHEMA_FILE).read_text(encoding="utf-8")
    return dict(json.loads(text))


@functools.lru_cache(maxsize=4)
def _load(path: str) -> Inventory:
    file = pathlib.Path(path)
    try:
        raw = yaml.load(read_bounded(file), Loader=BoundedLoader)  # noqa: S506 - a SafeLoader subclass
    except OSError as exc:
        raise SpecError(file, "$", f"cannot read inventory: {exc.strerror or exc}") from None
    except (ValueError, LimitError, yaml.YAMLError) as exc:
        raise SpecError(file, "$", f"inventory is not usable YAML: {str(exc).splitlines()[0]}") from None
    first = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(_schema()).iter_errors(raw))
    if first is not None:
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.path)
        raise SpecError(file, where, first.message.splitlines()[0])
    pages = {name: str(op["page"]) for name, op in raw["operations"].items()}
    rules = tuple(InventoryRule(
        id=e["id"], operation=e["operation"], level=Level(e["level"]), says=e["says"], page=e.get("page"),
        where=e.get("where"), sentence=e.get("sentence"), raises=tuple(e.get("raises", ())),
        status=e.get("status"), refines=e.get("refines"), deviation=e.get("deviation"), facts=e.get("facts"))
        for e in raw["entries"])
    unknown = sorted({r.operation for r in rules} - set(pages))
    if unknown:
        raise SpecError(file, "$.entries", f"operation(s) {', '.join(unknown)} not under operations")
    return Inventory(file, str(raw["refined_spec"]), pages, rules)

"""The transfer family's clause inventory (``spec/family_inventory.yaml``, installed in ``push_cache_spec``) as
typed rules: each rule a sibling operation's documentation states, sentence by sentence, and the push_cache clause
it refines.  Validated against ``family_inventory.schema.json``; a file that cannot be read or fails the schema is
one :class:`SpecError` line.  ``docs/family_clauses.py`` renders it and ``push-cache-kit clauses`` lists it.

One owner per fact.  Where an operation has a spec file beside the inventory (``<operation>.yaml``), the spec file
owns its rules: an entry ``{clause: ID, refines: ...}`` names a clause of it, and the rule's level, words, sentence,
outcome and deviation are read from that clause here, never restated; the inventory owns only ``refines`` (the
push_cache clause the rule shares; a spec file's own ``refines`` names a clause of the same file).  A rule the
inventory states itself is for an operation without a spec file, or one deliberately not a clause of it
(``not_a_clause``, why).  Where the two files disagree (an entry naming an ID its operation's spec lacks, restating
a clause of it, or stating a rule without saying why it is not a clause) is listed in :attr:`Inventory.problems`
rather than raised, so the clause listing keeps working while a spec file is edited; the tests require it empty.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import yaml

from .bounded_yaml import BoundedLoader, LimitError, read_bounded
from .errors import SpecError, json_path, suggest
from .expect import Raises
from .levels import Level
from .load import load_spec
from .model import Clause, Spec
from .paths import SPEC_PACKAGE

INVENTORY_FILE = "family_inventory.yaml"
INVENTORY_SCHEMA_FILE = "family_inventory.schema.json"


@dataclass(frozen=True)
class InventoryRule:
    """One rule a sibling's page states (or, with ``sentence`` None, the fact sheets alone).

    With ``clause`` set, every field but ``refines`` is that spec clause's (``says`` its title, ``where`` its
    source's ref); otherwise the inventory states the rule, and ``not_a_clause`` says why, where the operation has a
    spec file."""

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
    clause: Clause | None = None
    not_a_clause: str | None = None

    def describe_expect(self) -> str:
        """The outcome the rule requires, in the clause listing's words ("raises TypeError or ValueError"): the spec
        clause's, or the refusal an inventory rule names."""
        if self.clause is not None:
            return self.clause.expect.describe()
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
    specs: Mapping[str, Spec]  # operation -> the spec file its named clauses are read from (only those that have one)
    #: where the inventory and the spec files beside it disagree (see :func:`_problems`); empty when they agree
    problems: tuple[str, ...] = ()

    @property
    def operations(self) -> tuple[str, ...]:
        return tuple(self.pages)

    def of(self, operation: str) -> tuple[InventoryRule, ...]:
        return tuple(r for r in self.rules if r.operation == operation)

    def unnamed(self, operation: str) -> tuple[str, ...]:
        """The clauses of ``operation``'s spec file that no entry names, in the spec's order."""
        spec = self.specs.get(operation)
        named = {r.id for r in self.of(operation) if r.clause is not None}
        return tuple(c.id for c in spec.clauses if c.id not in named) if spec is not None else ()


def default_inventory_path() -> pathlib.Path:
    return pathlib.Path(str(importlib.resources.files(SPEC_PACKAGE) / INVENTORY_FILE))


def spec_beside(inventory: pathlib.Path, operation: str) -> pathlib.Path:
    """Where the spec file of ``operation`` is, for the inventory at ``inventory``: in the same folder."""
    return inventory.with_name(f"{operation}.yaml")


def load_inventory(path: str | pathlib.Path | None = None) -> Inventory:
    """Read, validate and type the inventory (default: the packaged one), reading each named clause from its
    operation's spec file beside it."""
    file = (pathlib.Path(path) if path is not None else default_inventory_path()).resolve()
    return _load(str(file), _stamp(file))


def _stamp(file: pathlib.Path) -> tuple[tuple[str, int, int], ...]:
    """The inventory's and its neighbours' (mtime, size): the cache sees an edit of the inventory or of a spec."""
    try:
        files = sorted(p for p in file.parent.iterdir() if p.suffix in (".yaml", ".json"))
    except OSError:
        files = [file]
    out = []
    for p in files:
        try:
            st = p.stat()
        except OSError:
            continue
        out.append((p.name, st.st_mtime_ns, st.st_size))
    return tuple(out)


@functools.cache
def _schema() -> dict[str, Any]:
    text = (importlib.resources.files(SPEC_PACKAGE) / INVENTORY_SCHEMA_FILE).read_text(encoding="utf-8")
    return dict(json.loads(text))


@functools.lru_cache(maxsize=4)
def _load(path: str, stamp: tuple[tuple[str, int, int], ...]) -> Inventory:
    del stamp  # the cache key only
    file = pathlib.Path(path)
    try:
        raw = yaml.load(read_bounded(file), Loader=BoundedLoader)  # noqa: S506 - a SafeLoader subclass
    except OSError as exc:
        raise SpecError(file, "$", f"cannot read inventory: {exc.strerror or exc}") from None
    except (ValueError, LimitError, yaml.YAMLError) as exc:
        raise SpecError(file, "$", f"inventory is not usable YAML: {str(exc).splitlines()[0]}") from None
    first = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(_schema()).iter_errors(raw))
    if first is not None:
        raise SpecError(file, json_path(*first.path), first.message.splitlines()[0])
    pages = {name: str(op["page"]) for name, op in raw["operations"].items()}
    unknown = sorted({e["operation"] for e in raw["entries"] if "operation" in e} - set(pages))
    if unknown:
        raise SpecError(file, "$.entries", f"operation(s) {', '.join(unknown)} not under operations")
    specs = {op: load_spec(spec_beside(file, op)) for op in pages if spec_beside(file, op).is_file()}
    rules: list[InventoryRule] = []
    problems: list[str] = []
    for index, entry in enumerate(raw["entries"]):
        rule, problem = _rule(file, entry, pages, specs)
        if rule is not None:
            rules.append(rule)
        if problem:
            problems.append(f"{json_path('entries', index)}: {problem}")
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            problems.append(f"{rule.id}: named or stated twice")
        seen.add(rule.id)
    return Inventory(file, str(raw["refined_spec"]), pages, tuple(rules), specs, tuple(problems))


def _rule(file: pathlib.Path, e: Mapping[str, Any], pages: Mapping[str, str],
          specs: Mapping[str, Spec]) -> tuple[InventoryRule | None, str | None]:
    """The rule an entry names or states, and what in it disagrees with the spec files (None if nothing).

    The disagreements are reported, not raised, so that a clause renamed in a spec file leaves the clause listing
    working; ``tests/spec/test_family_inventory.py`` requires there be none."""
    if "clause" in e:
        return _named(file, e, pages, specs)
    operation, rid = e["operation"], e["id"]
    rule = InventoryRule(
        id=rid, operation=operation, level=Level(e["level"]), says=e["says"], page=e.get("page"),
        where=e.get("where"), sentence=e.get("sentence"), raises=tuple(e.get("raises", ())),
        status=e.get("status"), refines=e.get("refines"), deviation=e.get("deviation"), facts=e.get("facts"),
        not_a_clause=e.get("not_a_clause"))
    spec = specs.get(operation)
    if spec is None:
        if "not_a_clause" in e:
            return rule, (f"{rid}: not_a_clause, but {operation} has no spec file "
                          f"({spec_beside(file, operation).name}): every rule of it is the inventory's")
        return rule, None
    if any(c.id == rid for c in spec.clauses):
        return rule, (f"{rid} is a clause of {spec.path.name}, and the entry restates it (level, says, deviation): "
                      f"name it instead, {{clause: {rid}, refines: ...}}")
    if "not_a_clause" not in e:
        return rule, (f"{spec.path.name} has no clause {rid}{suggest(rid, (c.id for c in spec.clauses))}: name the "
                      "clause that holds this rule, or say why it is deliberately not one (not_a_clause)")
    return rule, None


def _named(file: pathlib.Path, e: Mapping[str, Any], pages: Mapping[str, str],
           specs: Mapping[str, Spec]) -> tuple[InventoryRule | None, str | None]:
    """The rule a ``{clause: ID}`` entry names, read from its operation's spec file."""
    cid = str(e["clause"])
    operation = cid.split(".", 1)[0]
    if operation not in pages:
        return None, f"{cid}: operation {operation!r} is not under operations"
    spec = specs.get(operation)
    if spec is None:
        return None, f"{cid}: {operation} has no spec file ({spec_beside(file, operation).name}) to read it from"
    clause = next((c for c in spec.clauses if c.id == cid), None)
    if clause is None:
        return None, (f"{spec.path.name} has no clause {cid}{suggest(cid, (c.id for c in spec.clauses))} (a rule "
                      "deliberately not a clause is an entry with its own id and not_a_clause)")
    src, expect = clause.source, clause.expect
    doc = src.kind == "doc"
    return InventoryRule(
        id=cid, operation=operation, level=clause.level, says=clause.title,
        page=pages[operation] if doc else None, where=src.ref if doc else None, sentence=src.zh if doc else None,
        raises=expect.kinds if isinstance(expect, Raises) else (),
        status=expect.status if isinstance(expect, Raises) else None,
        refines=e["refines"], deviation=clause.deviation, facts=None if doc else src.ref, clause=clause), None

"""The transfer family's clause inventory (spec/family_inventory.yaml) holds what it claims: it validates against its
schema; every sentence stands verbatim in the recorded page it names (white space, table-cell separators, <br> and
Markdown escapes aside); every ``refines`` names a clause of the push_cache spec; the IDs are unique and each
belongs to its operation; and docs/family-clauses.md is what docs/family_clauses.py renders from it. Each check
also runs on a copy broken on purpose, so none of them can pass vacuously."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conformance_tests.spec import load_spec
from tests.helpers import ROOT, docs_script

SPEC_DIR = ROOT / "spec"
PAGES = SPEC_DIR / "documentation"
INVENTORY = SPEC_DIR / "family_inventory.yaml"
SCHEMA = SPEC_DIR / "family_inventory.schema.json"


def _norm(text: str) -> str:
    """The text as it reads: Markdown escapes dropped, <br> and table-cell separators read as white space, runs of
    white space collapsed (a page wraps a cell or a prototype where the inventory quotes it on one line)."""
    text = re.sub(r"\\([\\`*_{}\[\]()#+\-.!|])", r"\1", text)
    text = re.sub(r"<br\s*/?>", " ", text)
    return " ".join(re.sub(r"[\t|]+", " ", text).split())


def _body(path: Path) -> str:
    """A page without its front matter: a sentence must be the vendor's, not our header's."""
    text = path.read_text(encoding="utf-8")
    if text.startswith("---\n"):
        text = text.split("\n---\n", 1)[1]
    return text


@cache
def _pages() -> dict[str, str]:
    return {p.name: _norm(_body(p)) for p in PAGES.iterdir() if p.is_file()}


def _inventory() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(INVENTORY.read_text(encoding="utf-8"))
    return data


def schema_problems(data: dict[str, Any]) -> list[str]:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = jsonschema.Draft202012Validator(schema).iter_errors(data)
    return sorted(f"{e.json_path}: {e.message}" for e in errors)


def sentence_problems(data: dict[str, Any]) -> list[str]:
    pages = _pages()
    out = []
    for entry in data["entries"]:
        if entry["sentence"] is None:
            continue
        page, recorded = entry["page"], data["operations"][entry["operation"]]["page"]
        if page != recorded:
            out.append(f"{entry['id']}: page {page!r}, but {entry['operation']}'s recorded page is {recorded!r}")
        elif page not in pages:
            out.append(f"{entry['id']}: page {page!r} is not in {PAGES.relative_to(ROOT)}")
        elif _norm(entry["sentence"]) not in pages[page]:
            out.append(f"{entry['id']}: sentence {entry['sentence']!r} is not in {page}")
    return out


def refines_problems(data: dict[str, Any]) -> list[str]:
    spec = load_spec()
    known = {clause.id for clause in spec.clauses}
    out = []
    for entry in data["entries"]:
        target = entry["refines"]
        if target is None:
            continue
        if target not in known:
            out.append(f"{entry['id']}: refines {target!r}, which the push_cache spec does not have")
        else:
            assert spec.clause(target).id == target  # the spec's own look-up finds it too
    return out


def id_problems(data: dict[str, Any]) -> list[str]:
    out, seen = [], set()
    for entry in data["entries"]:
        if entry["operation"] not in data["operations"]:
            out.append(f"{entry['id']}: operation {entry['operation']!r} is not in operations")
        if not entry["id"].startswith(entry["operation"] + "."):
            out.append(f"{entry['id']}: the ID does not start with its operation {entry['operation']!r}")
        if entry["id"] in seen:
            out.append(f"{entry['id']}: the ID is repeated")
        seen.add(entry["id"])
    return out


CHECKS = {
    "schema": schema_problems,
    "sentences": sentence_problems,
    "refines": refines_problems,
    "ids": id_problems,
}


def _broken(check: str, data: dict[str, Any]) -> dict[str, Any]:
    """A copy of the inventory with one defect of the kind ``check`` looks for."""
    bad = copy.deepcopy(data)
    first = next(e for e in bad["entries"] if e["sentence"] is not None and e["refines"] is not None)
    if check == "schema":
        first["level"] = "mustt"
    elif check == "sentences":
        first["sentence"] = first["sentence"].replace("。", "，", 1) + "此句不在页面上"
    elif check == "refines":
        first["refines"] = first["refines"] + ".no_such_clause"
    else:
        bad["entries"].append(copy.deepcopy(first))
    return bad


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_the_inventory_passes(check):
    problems = CHECKS[check](_inventory())
    assert not problems, f"{check}: {len(problems)} problem(s) in {INVENTORY.relative_to(ROOT)}:\n" + "\n".join(problems)


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_each_check_finds_a_defect_made_on_purpose(check):
    data = _inventory()
    problems = CHECKS[check](_broken(check, data))
    assert problems, f"{check}: a copy of {INVENTORY.relative_to(ROOT)} broken on purpose passed the check"


def test_every_operation_has_entries_from_its_page():
    data = _inventory()
    quoted = {e["operation"] for e in data["entries"] if e["sentence"] is not None}
    assert quoted == set(data["operations"]), f"operations without a quoted sentence: {set(data['operations']) - quoted}"


def test_the_rendered_table_is_current():
    doc = docs_script("family_clauses")
    rendered, written = doc.render(), doc.DOC.read_text(encoding="utf-8")
    assert written == rendered, "docs/family-clauses.md is stale: python docs/family_clauses.py --write"


def test_a_stale_table_is_found():
    doc = docs_script("family_clauses")
    inventory = doc.load()
    first = inventory.rules[0]
    changed = dataclasses.replace(inventory, rules=(dataclasses.replace(first, says=first.says + " (changed)"),
                                                    *inventory.rules[1:]))
    assert doc.render(changed) != doc.DOC.read_text(encoding="utf-8"), "render() ignored a change to the inventory"

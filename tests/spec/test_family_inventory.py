"""The transfer family's clause inventory (spec/family_inventory.yaml) holds what it claims: it validates against its
schema; every sentence it states stands verbatim in the recorded page it names (white space, table-cell separators,
<br> and Markdown escapes aside); every ``refines`` names a clause of the push_cache spec; the IDs are unique and each
belongs to its operation; it and the siblings' spec files have one owner per fact (an entry names a clause of its
operation's spec, whose level, words and deviation are read from there, or states a rule that is deliberately not
a clause, saying why); and docs/family-clauses.md is what docs/family_clauses.py renders from them. Each check also
runs on a copy broken on purpose, so none of them can pass vacuously."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conformance_tests.spec import load_spec, operation_spec_path
from conformance_tests.spec.inventory import load_inventory
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


def _name(entry: dict[str, Any]) -> str:
    """The entry's ID: the clause it names, or the rule it states."""
    return str(entry["clause"] if "clause" in entry else entry["id"])


def sentence_problems(data: dict[str, Any]) -> list[str]:
    """The sentences the inventory states itself (a named clause's quote is its spec file's: test_quotes.py and
    test_operation_specs.py check those)."""
    pages = _pages()
    out = []
    for entry in data["entries"]:
        if entry.get("sentence") is None:
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
            out.append(f"{_name(entry)}: refines {target!r}, which the push_cache spec does not have")
        else:
            assert spec.clause(target).id == target  # the spec's own look-up finds it too
    return out


def id_problems(data: dict[str, Any]) -> list[str]:
    out, seen = [], set()
    for entry in data["entries"]:
        name = _name(entry)
        operation = entry.get("operation", name.split(".", 1)[0])
        if operation not in data["operations"]:
            out.append(f"{name}: operation {operation!r} is not in operations")
        if not name.startswith(operation + "."):
            out.append(f"{name}: the ID does not start with its operation {operation!r}")
        if name in seen:
            out.append(f"{name}: the ID is repeated")
        seen.add(name)
    return out


def owner_problems(data: dict[str, Any]) -> list[str]:
    """Where the inventory and the spec files beside it disagree, as the loader finds it: an entry naming a clause
    its operation's spec lacks, an entry restating a clause of it (its own level, says and deviation beside the
    spec's), or a rule of an operation with a spec file that does not say why it is not a clause. The copy is read
    beside the spec files, as the packaged inventory is."""
    folder = Path(tempfile.mkdtemp(prefix="inventory-"))
    try:
        for spec in SPEC_DIR.glob("*.yaml"):
            if spec != INVENTORY:
                shutil.copyfile(spec, folder / spec.name)
        copy_path = folder / INVENTORY.name
        copy_path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
        return list(load_inventory(copy_path).problems)
    finally:
        shutil.rmtree(folder)


CHECKS = {
    "schema": schema_problems,
    "sentences": sentence_problems,
    "refines": refines_problems,
    "ids": id_problems,
    "owners": owner_problems,
}


def _broken(check: str, data: dict[str, Any]) -> dict[str, Any]:
    """A copy of the inventory with one defect of the kind ``check`` looks for."""
    bad = copy.deepcopy(data)
    first = next(e for e in bad["entries"] if e.get("sentence") is not None and e["refines"] is not None)
    if check == "schema":
        first["level"] = "mustt"
    elif check == "sentences":
        first["sentence"] = first["sentence"].replace("。", "，", 1) + "此句不在页面上"
    elif check == "refines":
        first["refines"] = first["refines"] + ".no_such_clause"
    elif check == "owners":
        named = next(e for e in bad["entries"] if "clause" in e)
        named["clause"] += ".no_such_clause"
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
    inventory = load_inventory(INVENTORY)
    quoted = {r.operation for r in inventory.rules if r.sentence is not None}
    assert quoted == set(inventory.operations), f"operations without a quoted sentence: {set(inventory.operations) - quoted}"


# ---- one owner per fact: what the spec files hold is read from them, never restated -----------------------------

def _restated(data: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy in which the first named clause is restated as a rule under the same ID: its level, says and deviation
    written out again (as the inventory had them before the spec files), then ``changes`` applied."""
    bad = copy.deepcopy(data)
    index = next(i for i, e in enumerate(bad["entries"]) if "clause" in e)
    cid = bad["entries"][index]["clause"]
    clause = load_spec(operation_spec_path(cid.split(".", 1)[0])).clause(cid)
    operation = cid.split(".", 1)[0]
    rule = {"id": cid, "operation": operation, "page": bad["operations"][operation]["page"],
            "where": clause.source.ref, "sentence": clause.source.zh, "says": clause.title,
            "level": clause.level.value, "refines": bad["entries"][index]["refines"], "deviation": clause.deviation,
            **changes}
    bad["entries"][index] = rule
    return bad


@pytest.mark.parametrize("change", [
    {},  # the same facts, written twice: still a second owner
    {"level": "may", "not_a_clause": "a level of its own"},
    {"deviation": "the vendor departs otherwise", "not_a_clause": "a deviation of its own"},
], ids=["restated", "other_level", "other_deviation"])
def test_an_entry_restating_a_spec_clause_is_found(change):
    problems = owner_problems(_restated(_inventory(), **change))
    assert problems and "restates it" in problems[0], problems


def test_a_rule_of_a_specified_operation_must_say_why_it_is_not_a_clause():
    data = _inventory()
    apart = next(e for e in data["entries"] if "not_a_clause" in e)
    del apart["not_a_clause"]
    problems = owner_problems(data)
    assert problems and "has no clause" in problems[0] and "not_a_clause" in problems[0], problems


def test_not_a_clause_is_refused_where_the_operation_has_no_spec_file():
    data = _inventory()
    data["operations"]["push_elsewhere"] = {"page": "push_blocks.zh.md"}
    data["entries"].append({"id": "push_elsewhere.signature.returns_none", "operation": "push_elsewhere",
                            "not_a_clause": "nothing to be a clause of", "page": None, "sentence": None,
                            "says": "returns None", "level": "should", "refines": None, "deviation": None,
                            "facts": "the fact sheets"})
    problems = owner_problems(data)
    assert problems and "has no spec file" in problems[0], problems


def test_each_named_clause_reads_level_and_deviation_from_its_spec_file():
    """Read apart from the spec loader (the spec YAML as it stands): every rule the inventory names has the level,
    title and deviation its clause has in the spec file, and each not_a_clause rule names an ID the spec lacks."""
    inventory = load_inventory(INVENTORY)
    raw = {op: {c["id"]: c for c in yaml.safe_load(spec.path.read_text(encoding="utf-8"))["clauses"]}
           for op, spec in inventory.specs.items()}
    assert set(raw) == set(inventory.operations), "a sibling without a spec file: its rules are the inventory's"
    for rule in inventory.rules:
        clauses = raw[rule.operation]
        if rule.clause is None:
            assert rule.not_a_clause and rule.id not in clauses, rule.id
            continue
        clause = clauses[rule.id]
        assert (rule.level.value, rule.says, rule.deviation) == (
            clause["level"], clause["title"], clause.get("deviation")), rule.id


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

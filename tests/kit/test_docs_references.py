"""What the documents name exists: every test ID they write names a test function of the suite's module, and
every field of the report example in docs/architecture.md is a field of the report schema."""

from __future__ import annotations

import ast
import json
import re

from tests.helpers import ROOT

DOCS = [ROOT / "README.md", ROOT / "reports" / "README.md", ROOT / "spec" / "README.md",
        *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").rglob("*.md"))]
TEST_ID = re.compile(r"(conformance_tests/suite/(test_[a-z_]+)\.py)::([A-Za-z_]+)")


def _functions(module: str) -> set[str]:
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    names |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return names


def test_every_test_id_in_the_documents_names_a_real_test():
    found = [(doc.relative_to(ROOT), m.group(1), m.group(3)) for doc in DOCS
             for m in TEST_ID.finditer(doc.read_text(encoding="utf-8"))]
    assert found, "the documents quote test IDs"
    wrong = [f"{doc}: {module}::{name}" for doc, module, name in found
             if not (ROOT / module).is_file() or name not in _functions(module)]
    assert wrong == []


def _schema_keys(node: object) -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                out |= set(value)
            out |= _schema_keys(value)
    elif isinstance(node, list):
        for value in node:
            out |= _schema_keys(value)
    return out


def test_the_report_example_uses_the_schemas_fields():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    example = text[text.index("## Report"):]
    example = example[example.index("```json") + 7:example.index("```", example.index("```json") + 7)]
    keys = set(re.findall(r'"([a-z_0-9]+)":', example))
    schema = json.loads((ROOT / "reports" / "report.schema.json").read_text(encoding="utf-8"))
    assert keys and keys <= _schema_keys(schema), sorted(keys - _schema_keys(schema))
    assert '"hypothesis_seed": null' in example  # the certify profile is derandomized: no seed to record

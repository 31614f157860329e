"""What the documents name exists and what they state holds: every test ID they write names a test function of
the suite's module, every field of the report example in docs/architecture.md is a field of the report schema,
its capabilities block is the reference's, and spec/README.md's test counts are the generated suite's."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from typing import Any

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


def _evaluate(node: ast.expr) -> Any:
    """A value of the capabilities block: literals, lists and ``a << b`` (how the sizes are written)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift):
        return _evaluate(node.left) << _evaluate(node.right)
    if isinstance(node, ast.List):
        return [_evaluate(e) for e in node.elts]
    return ast.literal_eval(node)


def documented_capabilities(text: str) -> dict[str, Any]:
    """The capabilities mapping docs/architecture.md shows, evaluated."""
    block = text[text.index("Capabilities (a mapping"):]
    block = block[block.index("```python") + 9:block.index("```", block.index("```python") + 9)]
    tree = ast.parse(block, mode="eval").body
    assert isinstance(tree, ast.Dict), "docs/architecture.md: the capabilities block is not a mapping"
    return {_evaluate(k): _evaluate(v) for k, v in zip(tree.keys, tree.values, strict=True) if k is not None}


def test_the_documented_capabilities_are_the_references():
    from reference_impl.backend import CAPABILITIES

    documented = documented_capabilities((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert documented == CAPABILITIES, \
        f"docs/architecture.md's capabilities {documented} != reference_impl.backend.CAPABILITIES {CAPABILITIES}"


def test_a_drifted_capability_is_seen():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").replace("1 << 28", "1 << 26")
    assert documented_capabilities(text)["max_cache_bytes"] == 1 << 26


def _collected(clauses: str) -> list[str]:
    """The test IDs certify collects for ``--clauses`` (the generated suite, as a run selects it)."""
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "--collect-only", "-q", "-p",
                           "no:cacheprovider", "--no-reports", "--clauses", clauses], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)
    ids = [ln for ln in proc.stdout.splitlines() if "::" in ln]
    assert ids, f"certify --collect-only --clauses {clauses}: exit {proc.returncode}: {proc.stdout[-800:]}"
    return ids


#: the sentence of spec/README.md ("How to add a clause", step 5) that counts a mutant's failing tests
COUNTED = re.compile(r"\(`--clauses '(?P<selection>[^']+)'`\) it fails exactly\s+`(?P<clause>[a-z_.]+)` "
                     r"\((?P<failing>\d+) of (?P<total>\d+) tests\)")


def test_the_spec_readmes_test_counts_are_the_suites():
    text = (ROOT / "spec" / "README.md").read_text(encoding="utf-8")
    said = COUNTED.search(text)
    assert said, f"spec/README.md no longer says how many tests the example's mutant fails: {COUNTED.pattern}"
    total, failing = len(_collected(said["selection"])), len(_collected(said["clause"]))
    assert (int(said["failing"]), int(said["total"])) == (failing, total), \
        f"spec/README.md says {said[0]!r}; the suite collects {failing} of {total} tests"

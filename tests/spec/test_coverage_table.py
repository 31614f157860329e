"""The coverage table in spec/README.md names only clauses the spec has, and every family appears in it."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from conformance_tests.spec import load_spec

README = Path(__file__).resolve().parents[2] / "spec" / "README.md"


def test_every_id_in_the_coverage_table_exists():
    spec = load_spec()
    ids = {c.id for c in spec.clauses}
    table = README.read_text(encoding="utf-8").split("## What the spec covers", 1)[1]
    named = re.findall(r"`(push_cache\.[a-z0-9_.*]+)`", table)
    assert len(named) > 60
    for name in named:
        assert any(fnmatch.fnmatchcase(i, name) for i in ids), f"spec/README.md names {name}, which the spec lacks"
    families = {c.family for c in spec.clauses}
    assert families <= {n.split(".")[1] for n in named}

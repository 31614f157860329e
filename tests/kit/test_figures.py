"""The README's figures cannot go stale: they are a block docs/figures.py renders from docs/figures.json, and
docs/figures.json holds what the runs' own files say. The spec's counts are checked against the spec; the
certification's and the mutants' deterministic figures against the last run's files where a run left them
(CI runs tox -e certify and -e mutants before the self-tests, so there they are always checked)."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from tests.helpers import ROOT, docs_script


def _figures() -> ModuleType:
    return docs_script("figures")


def test_the_readme_holds_the_recorded_figures():
    figures = _figures()
    assert figures.documented() == figures.block(figures.load()), \
        "README.md's figures differ from docs/figures.json: python docs/figures.py --write"


def test_the_recorded_spec_counts_are_the_specs():
    figures = _figures()
    assert figures.load()["spec"] == figures.spec_figures(), \
        "docs/figures.json is stale: tox -e certify,mutants,bench, then python docs/figures.py --record --write"


DETERMINISTIC = ("verdict", "tests", "passed", "not_supported", "push_calls", "distinct_layouts", "uncovered",
                 "histories", "history_steps", "history_pushes")


def test_the_recorded_certification_is_the_last_runs():
    figures = _figures()
    if not figures.REPORT.is_file():
        pytest.skip(f"no {figures.REPORT.relative_to(ROOT)}: run tox -e certify first (CI does)")
    report = json.loads(figures.REPORT.read_text(encoding="utf-8"))
    if not report.get("completeness", {}).get("full"):
        pytest.skip(f"{figures.REPORT.relative_to(ROOT)} is not a full run")
    last = figures.report_figures(report)
    recorded = figures.load()["certify"]
    assert {k: recorded[k] for k in DETERMINISTIC} == {k: last[k] for k in DETERMINISTIC}, \
        "docs/figures.json is stale: python docs/figures.py --record --write"


def test_the_recorded_mutants_are_the_last_runs():
    figures = _figures()
    if not figures.KILL_MATRIX.is_file():
        pytest.skip(f"no {figures.KILL_MATRIX.relative_to(ROOT)}: run tox -e mutants first (CI does)")
    last = figures.matrix_figures(json.loads(figures.KILL_MATRIX.read_text(encoding="utf-8")))
    recorded = figures.load()["mutants"]
    kept = ("killed", "total", "should", "histories_only")
    assert {k: recorded[k] for k in kept} == {k: last[k] for k in kept}

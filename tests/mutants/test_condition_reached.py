"""The kill matrix's "condition reached" column, on hand-made reports: a mutant's declared ``reaches`` keys are
looked up in its run's domain coverage, and a mutant that survives where its condition was never drawn says so."""

from __future__ import annotations

import pytest

from conformance_tests.spec import load_spec
from mutants import reach
from mutants.catalog import MUTANTS, Mutant
from mutants.run import Result, catalog_problems, family_specs, header, judge, line

SPEC = load_spec()
CLAUSE = "push_cache.data.dtypes"
BF16 = "data_type=DT_BF16"
HOST_PAIR = "src_placement=HOST & dst_placement=HOST"
MUTANT = Mutant("m", "a defect of bf16 only", (CLAUSE,), reaches=(BF16,))
CAPS = {"placements": ["HOST", "DEVICE"], "threads": True}


def _report(label: str = "CERTIFIED", outcome: str = "passed", *, unreached: tuple[str, ...] = (),
            unreached_pairs: tuple[str, ...] = (), caps: dict | None = None, coverage: bool = True) -> dict:
    run = {"domain_coverage": {"unreached_partitions": list(unreached), "unreached_pairs": list(unreached_pairs),
                               "excluded": []}} if coverage else {}
    return {"verdict": {"label": label}, "clauses": [{"id": CLAUSE, "outcome": outcome}], "run": run,
            "spec": {"version": SPEC.releases[-1]}, "backend": {"capabilities": CAPS if caps is None else caps}}


def _judged(mutant: Mutant, report: dict) -> Result:
    result = Result(mutant.name, mutant.defect, list(mutant.targets), mutant.breaks, verdict="?")
    judge(mutant, report, result, spec=SPEC)
    return result


def test_a_declared_key_the_run_did_not_reach_is_reported_no():
    result = _judged(MUTANT, _report(unreached=(BF16, "data_type=DT_INT8")))
    assert result.condition_reached == f"no: {BF16}", result
    assert result.status == "survived" and result.detail.startswith(f"its condition was not reached ({BF16})"), result
    row = line(result, 8)
    assert f"no: {BF16}" in row and "condition reached" in header(8), row


def test_a_declared_key_the_run_reached_is_reported_yes():
    result = _judged(MUTANT, _report("NOT CERTIFIED", "failed", unreached=("data_type=DT_INT8",)))
    assert (result.condition_reached, result.status) == ("yes", "killed"), result
    assert "not reached" not in result.detail


@pytest.mark.parametrize(("reaches", "report", "cell"), [
    ((), _report(unreached=(BF16,)), reach.UNDECLARED),
    ((BF16,), _report(coverage=False), "unknown: the report has no domain coverage of this spec"),
    # every declared key is needed: one unreached pair is enough for "no"
    ((BF16, HOST_PAIR), _report(unreached_pairs=(HOST_PAIR,)), f"no: {HOST_PAIR}"),
    # a backend whose capabilities exclude HOST: the partition and its pairs are outside the run's universe
    (("src_placement=HOST", HOST_PAIR), _report(caps={"placements": ["DEVICE"]}),
     f"no: src_placement=HOST, {HOST_PAIR}"),
    ((BF16,), {**_report(), "spec": {"version": "0.0.0-no-such-release"}},
     "unknown: the report has no domain coverage of this spec"),
])
def test_condition_cell(reaches, report, cell):
    assert reach.cell(reaches, report, SPEC) == cell, (reaches, report["run"], report["backend"])


def test_every_declared_key_is_a_key_of_the_spec():
    keys = reach.spec_keys(SPEC)
    assert BF16 in keys and HOST_PAIR in keys, sorted(keys)[:5]
    levels = {c.id: c.level for spec in family_specs() for c in spec.clauses}
    assert catalog_problems(MUTANTS, levels, keys) == []
    assert sum(bool(m.reaches) for m in MUTANTS) >= 10, "the catalog declares the conditions of its mutants"


def test_an_unknown_declared_key_is_a_catalog_problem():
    bad = Mutant("typo", "d", (CLAUSE,), reaches=("data_type=DT_BFLOAT16",))
    problems = catalog_problems([bad], {CLAUSE: "must"}, reach.spec_keys(SPEC))
    assert problems == ["typo: reaches 'data_type=DT_BFLOAT16' is no partition or pair key of the spec's coverage"]

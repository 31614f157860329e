"""``certify --operation A --operation B`` / ``--operation all``: each operation certified in a process of its own,
then family.json (conformance_tests/report/family.schema.json) with each operation's verdict and the family's,
whose exit code is the most severe of theirs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from conformance_tests.cli import exitcodes
from conformance_tests.cli.family_run import most_severe
from tests.helpers import ROOT

SCHEMA = json.loads((ROOT / "conformance_tests" / "report" / "family.schema.json").read_text(encoding="utf-8"))


def _certify(cwd: Path, *args: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "PUSH_CACHE_BACKEND"}
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "-q", "-p", "no:warnings", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def _family(folder: Path) -> dict:
    family = json.loads((folder / "family.json").read_text(encoding="utf-8"))
    jsonschema.validate(family, SCHEMA)
    return family


def test_every_operation_gets_its_verdict_and_the_family_the_most_severe(tmp_path):
    code, out = _certify(tmp_path, "--operation", "all", "--clauses", "push_cache.signature.*,push_blocks.signature.*")
    family = _family(tmp_path / "reports" / "family")
    assert code == exitcodes.PARTIAL and family["verdict"] == "PARTIAL", out[-2000:]
    assert [r["operation"] for r in family["operations"]] == ["push_cache", "push_blocks"]
    for row in family["operations"]:
        report = json.loads((tmp_path / row["report"]).read_text(encoding="utf-8"))
        assert report["spec"]["operation"] == row["operation"] and row["verdict"] == report["verdict"]["label"]
    assert "family verdict: PARTIAL" in out


def test_one_operation_failing_fails_the_family(tmp_path):
    # from the clone: the mutants are importable there (not installed with the kit)
    code, out = _certify(ROOT, "--operation", "push_cache", "--operation", "push_blocks", "--backend",
                         "mutants.catalog:blocks_sorted", "--report-dir", str(tmp_path / "out"),
                         "--clauses", "push_cache.signature.returns_none,push_blocks.data.postcondition")
    family = _family(tmp_path / "out")
    rows = {r["operation"]: r for r in family["operations"]}
    assert rows["push_cache"]["exit_code"] == exitcodes.PARTIAL, out[-2000:]
    assert rows["push_blocks"]["exit_code"] == exitcodes.NOT_CERTIFIED
    assert code == exitcodes.NOT_CERTIFIED and family["verdict"] == "NOT_CERTIFIED"


def test_an_operation_without_a_spec_is_one_line_and_exit_2(tmp_path):
    code, out = _certify(tmp_path, "--operation", "push_blocks", "--operation", "pull_cache")
    assert code == exitcodes.USAGE_ERROR and "--operation 'pull_cache': no packaged spec" in out, out
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(("codes", "worst"), [
    ((0, 5), 5), ((5, 1), 1), ((6, 0), 6), ((1, 3), 3), ((4, 2), 2), ((0, 0), 0)])
def test_the_family_takes_the_most_severe_exit_code(codes, worst):
    assert most_severe(codes) == worst

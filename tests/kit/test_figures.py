"""The README's figures cannot go stale: they are a block docs/figures.py renders from docs/figures.json, and
docs/figures.json holds what the runs' own files say. The spec's counts are checked against the spec; the
certification's and the mutants' deterministic figures against the last run's files where a run left them
(CI runs tox -e certify and -e mutants before the self-tests and sets PUSH_CACHE_CI, so there a missing file
fails); the mutants' figures against the catalog always."""

from __future__ import annotations

import json
import os
import re
import shlex
from types import ModuleType

import pytest

from tests.helpers import ROOT, docs_script
from tests.helpers.ssh import CI_ENV


def _figures() -> ModuleType:
    return docs_script("figures")


def _skip_outside_ci(why: str) -> None:
    """A run's file is missing: skip here, fail in CI, where the runs came first (.ci/run)."""
    if os.environ.get(CI_ENV):
        pytest.fail(f"${CI_ENV} is set, and {why}", pytrace=False)
    pytest.skip(why)


def test_the_readme_holds_the_recorded_figures():
    figures = _figures()
    assert figures.documented() == figures.block(figures.load()), \
        "README.md's figures differ from docs/figures.json: python docs/figures.py --write"


def test_the_recorded_spec_counts_are_the_specs():
    figures = _figures()
    assert figures.load()["spec"] == figures.spec_figures(), \
        "docs/figures.json is stale: tox -e certify,mutants,bench, then python docs/figures.py --record --write"


DETERMINISTIC = ("verdict", "tests", "passed", "not_supported", "push_calls", "distinct_layouts", "uncovered",
                 "histories", "history_steps", "history_pushes", "partitions", "partitions_reached", "pairs",
                 "pairs_reached")


def test_the_recorded_certification_is_the_last_runs():
    figures = _figures()
    if not figures.REPORT.is_file():
        _skip_outside_ci(f"no {figures.REPORT.relative_to(ROOT)}: run tox -e certify first (CI does)")
    report = json.loads(figures.REPORT.read_text(encoding="utf-8"))
    if not report.get("completeness", {}).get("full"):
        pytest.skip(f"{figures.REPORT.relative_to(ROOT)} is not a full run")
    last = figures.report_figures(report)
    recorded = figures.load()["certify"]
    assert {k: recorded.get(k) for k in DETERMINISTIC} == {k: last.get(k) for k in DETERMINISTIC}, \
        "docs/figures.json is stale: python docs/figures.py --record --write"


def test_the_recorded_mutants_agree_with_the_catalog():
    """Always checked, matrix or not: the record's counts are the catalog's (every mutant killed, as tox -e
    mutants requires), and the histories alone killed every mutant left to them."""
    from mutants.catalog import MUTANTS

    figures = _figures()
    problems = figures.catalog_problems(figures.load()["mutants"], MUTANTS)
    assert not problems, f"docs/figures.json's mutants vs mutants/catalog.py: {problems}"


def test_a_record_the_catalog_contradicts_is_seen():
    from mutants.catalog import MUTANTS

    figures = _figures()
    recorded = dict(figures.load()["mutants"])
    recorded["total"] -= 1
    recorded["histories_alone"] = recorded["histories_alone"][1:] + ["no_such_mutant"]
    problems = figures.catalog_problems(recorded, MUTANTS)
    assert len(problems) == 3 and "no_such_mutant" in problems[-1], problems


def test_the_recorded_mutants_are_the_last_runs():
    """Against the live matrix where tox -e mutants left one; CI always has one (.ci/run runs it before tox) and
    sets PUSH_CACHE_CI, so there its absence fails instead of skipping."""
    figures = _figures()
    if not figures.KILL_MATRIX.is_file():
        _skip_outside_ci(f"no {figures.KILL_MATRIX.relative_to(ROOT)}: run tox -e mutants first (CI does)")
    last = figures.matrix_figures(json.loads(figures.KILL_MATRIX.read_text(encoding="utf-8")))
    recorded = figures.load()["mutants"]
    kept = ("killed", "total", "should", "histories_only", "histories_alone")
    assert {k: recorded[k] for k in kept} == {k: last[k] for k in kept}, \
        "docs/figures.json is stale: python docs/figures.py --record --write"


def test_the_recorded_self_tests_are_the_default_tox_command():
    """The README's tox time is a record of tox.ini's default command (python docs/figures.py --time-tests), and
    no other sentence of the README states a time for it."""
    figures = _figures()
    recorded = figures.load().get("tox")
    assert recorded, "docs/figures.json has no timed tox run: python docs/figures.py --time-tests, then --write"
    command = shlex.join(["pytest", *figures.default_test_command()])
    assert recorded["command"] == command, \
        f"docs/figures.json times `{recorded['command']}`, tox.ini's default is `{command}`: --time-tests again"
    assert recorded["passed"] > 0 and recorded["failed"] == 0 and recorded["seconds"] > 0, recorded
    outside = figures.README.read_text(encoding="utf-8").replace(figures.documented(), "")
    stated = [ln for ln in outside.splitlines() if re.search(r"\btox\b\s+#.*\d+\s*(min|minutes|s)\b", ln)]
    assert not stated, f"README.md states the tox time outside the generated figures: {stated}"


def test_junit_counts_read_a_failing_run(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text('<testsuites><testsuite tests="10" skipped="2" failures="1" errors="1" time="3.0"/>'
                     "</testsuites>", encoding="utf-8")
    assert _figures().junit_counts(junit) == {"passed": 6, "skipped": 2, "failed": 2}


def test_what_the_default_run_leaves_out_runs_in_ci():
    """The default tox command deselects the heavy tests; tox -e heavy selects exactly them, and CI runs it."""
    import configparser

    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini", encoding="utf-8")
    default = _figures().default_test_command()
    assert default[default.index("-m") + 1] == "not heavy", default
    heavy = shlex.split(ini["testenv:heavy"]["commands"])
    assert heavy[heavy.index("-m") + 1] == "heavy", heavy
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # tox -e heavy, alone or among the environments of a run-parallel
    envs = [e for listed in re.findall(r"^python3 -m tox (?:run-parallel [^\n]*?)?-e (\S+)", ci, re.M)
            for e in listed.split(",")]
    assert "heavy" in envs, f".ci/run does not run tox -e heavy (its tox environments: {envs})"

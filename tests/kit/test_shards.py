"""Shards as a user runs them: ``certify --shard 1/2`` and ``--shard 2/2`` (at once, each into its own
--report-dir, one of them under pytest-xdist), ``report merge`` of the two, and the serial run of the same
selection. The merge must be the serial run's report: the same rows, clause outcomes, verdict and likely causes.

The selection is small (two clause families) and the backend is the reference in vendor mode, so that the
merged report carries failures, their messages and likely causes, and not only passes.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance_tests.cli import exitcodes
from conformance_tests.selecting.selection import WHY_OTHER_SHARD, WHY_SHARD_MISSING
from tests.helpers import ROOT
from tests.helpers.certify import certify

pytestmark = pytest.mark.xdist_group("test_shards")

#: a stream (weighty) and single-call clauses; the vendor's recorded departures make some of them fail
SELECTION = ("--backend", "reference-vendor", "--clauses", "push_cache.safety.*,push_cache.signature.*")
#: what a row is, apart from how long it took
ROW_FIELDS = ("id", "clauses", "level", "outcome", "expected", "message")


@dataclass
class Run:
    proc: subprocess.CompletedProcess[str]
    report: dict[str, Any]
    path: Path


def _read(proc: subprocess.CompletedProcess[str], folder: Path) -> Run:
    path = folder / "report.json"
    assert path.is_file(), (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return Run(proc, json.loads(path.read_text(encoding="utf-8")), path)


def merge(*reports: Path, out: Path) -> Run:
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "report", "merge", *map(str, reports),
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return _read(proc, out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    where = tmp_path_factory.mktemp("shards")

    def shard(index: int, *extra: str) -> Run:
        folder = where / f"shard-{index}"
        return _read(certify(*SELECTION, "--shard", f"{index}/2", *extra, "--report-dir", str(folder)), folder)

    # two machines at once, each into its own --report-dir; one of them runs its part under pytest-xdist
    with ThreadPoolExecutor(2) as pool:
        first, second = pool.submit(shard, 1), pool.submit(shard, 2, "-n", "2")
        one, two = first.result(), second.result()
    serial = _read(certify(*SELECTION, "--report-dir", str(where / "serial")), where / "serial")
    return {"1": one, "2": two, "serial": serial,
            "merged": merge(one.path, two.path, out=where / "merged"),
            "only-1": merge(one.path, out=where / "only-1")}


def _ids(run: Run) -> list[str]:
    return [t["id"] for t in run.report["tests"]]


def _rows(run: Run) -> list[dict[str, Any]]:
    return [{k: t[k] for k in ROW_FIELDS} for t in run.report["tests"]]


def test_each_shard_is_partial_and_exits_with_its_verdicts_code(runs):
    codes = {}
    for k in ("1", "2"):
        run = runs[k]
        verdict, shard = run.report["verdict"], run.report["completeness"]["shard"]
        assert (shard["index"], shard["count"]) == (int(k), 2), shard
        assert verdict["partial"] is True and shard["reason"] in run.report["completeness"]["reasons"], verdict
        assert run.proc.returncode == exitcodes.for_verdict(verdict), (k, run.proc.returncode, verdict["label"])
        codes[k] = run.proc.returncode
    passing = [k for k in codes if not runs[k].report["verdict"]["blocking"]]
    assert passing, f"every shard of this selection has a failing clause ({codes}): pick one where a shard passes"
    assert all(codes[k] == exitcodes.PARTIAL for k in passing), codes


def test_the_shards_split_the_selection_and_keep_each_clause_together(runs):
    one, two, serial = runs["1"], runs["2"], runs["serial"]
    selection = one.report["completeness"]["shard"]["selection"]
    assert selection == two.report["completeness"]["shard"]["selection"] == _ids(serial)
    assert one.report["tests"] and two.report["tests"], (len(one.report["tests"]), len(two.report["tests"]))
    assert not set(_ids(one)) & set(_ids(two)), set(_ids(one)) & set(_ids(two))
    assert sorted(_ids(one) + _ids(two)) == sorted(selection)
    home: dict[str, str] = {}
    for k in ("1", "2"):
        for t in runs[k].report["tests"]:
            for cid in t["clauses"]:
                assert home.setdefault(cid, k) == k, f"clause {cid} has tests in shards {home[cid]} and {k}"
    for mine, other in ((one, two), (two, one)):
        elsewhere = [x["id"] for x in mine.report["completeness"]["left_out"] if x["why"] == WHY_OTHER_SHARD]
        assert elsewhere == _ids(other), (elsewhere, _ids(other))


def test_the_merge_is_the_serial_runs_report(runs):
    merged, serial = runs["merged"], runs["serial"]
    assert merged.proc.returncode == serial.proc.returncode, (merged.proc.stdout, merged.proc.stderr)
    assert _rows(merged) == _rows(serial)
    for key in ("verdict", "clauses", "summary", "clause_summary", "likely_causes", "warnings"):
        assert merged.report[key] == serial.report[key], (key, merged.report[key], serial.report[key])
    assert serial.report["verdict"]["blocking"], "the vendor fails clauses of this selection: rows with failures"
    for key in ("reasons", "left_out", "selected"):
        assert merged.report["completeness"][key] == serial.report["completeness"][key], key
    for key in ("push_calls", "distinct_layouts", "layouts_sha256", "hypothesis_profile", "hypothesis_seed"):
        assert merged.report["run"][key] == serial.report["run"][key], (key, merged.report["run"][key],
                                                                       serial.report["run"][key])
    # `report verify` of the merged report re-runs the whole selection in one run
    assert not any(a.startswith("--shard") for a in merged.report["run"]["certify_args"]), merged.report["run"]
    assert [m["index"] for m in merged.report["run"]["merged_from"]] == [1, 2]
    assert f"verdict: {serial.report['verdict']['label']}" in merged.proc.stdout, merged.proc.stdout


def test_merging_one_shard_is_partial_and_names_the_missing_one(runs):
    only, two = runs["only-1"], runs["2"]
    reasons = only.report["completeness"]["reasons"]
    assert f"shard 2/2 missing: {len(two.report['tests'])} test(s) not run" in reasons, reasons
    assert only.report["verdict"]["partial"] is True
    assert only.proc.returncode == exitcodes.for_verdict(only.report["verdict"])
    missing = [x["id"] for x in only.report["completeness"]["left_out"] if x["why"] == WHY_SHARD_MISSING]
    assert missing == _ids(two), missing


@pytest.mark.parametrize("value", ["0/2", "3/2", "half"])
def test_a_bad_shard_is_one_line_and_exit_2(value):
    proc = certify("--shard", value, "--no-reports")
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert proc.returncode == exitcodes.USAGE_ERROR and len(lines) == 1, (proc.returncode, lines)
    assert f"--shard {value}:" in lines[0] and "Traceback" not in proc.stderr, lines


def readme_shard_commands() -> list[list[str]]:
    """The commands of the README's "Shards across machines" block, as argument lists."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Shards across machines"):]
    section = section[:section.index("\n## ", 4)]
    block = section[section.index("```bash\n") + 8:section.index("\n```", section.index("```bash"))]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def test_the_readmes_shard_commands_run_as_written(runs, tmp_path):
    """The README's certify lines are accepted as they stand (collected, not run: the module's fixture runs
    shards); its merge line, run as written where the two shard reports lie, gives the serial run's verdict."""
    commands = readme_shard_commands()
    certifies = [c for c in commands if c[:2] == ["push-cache-kit", "certify"]]
    merges = [c for c in commands if c[:3] == ["push-cache-kit", "report", "merge"]]
    assert len(certifies) == 2 and len(merges) == 1, commands
    for command in certifies:
        proc = certify(*command[2:], "--collect-only", "-q", cwd=tmp_path)
        assert proc.returncode == 0, (command, proc.stdout[-1500:], proc.stderr[-1500:])
    for k in ("1", "2"):
        folder = tmp_path / "reports" / f"shard-{k}"
        folder.mkdir(parents=True)
        shutil.copyfile(runs[k].path, folder / "report.json")
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", *merges[0][1:]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    out = tmp_path / merges[0][merges[0].index("--out") + 1]
    merged = _read(proc, out)
    assert proc.returncode == runs["serial"].proc.returncode, (proc.stdout, proc.stderr)
    assert _rows(merged) == _rows(runs["serial"])

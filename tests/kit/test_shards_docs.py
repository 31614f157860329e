"""docs/shards.md is checked against the kit: its commands use options the kit has, its shard values are K/N of
the right N, and in its CI workflow the merge job reads exactly what the matrix's shard jobs upload."""

from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import PurePosixPath
from typing import Any

import yaml

from conformance_tests.cli.options import OPTIONS
from conformance_tests.report.cli import _parser as report_parser
from conformance_tests.selecting.shards import Shard, parse_shard
from tests.helpers import ROOT

DOC = ROOT / "docs" / "shards.md"
#: how the workflow names its matrix value
MATRIX_SHARD = "${{ matrix.shard }}"
KIT_FLAGS = {flag for flags, _ in OPTIONS for flag in flags}


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)\n```", DOC.read_text(encoding="utf-8"), re.S)


def _workflow() -> dict[str, Any]:
    (block,) = _blocks("yaml")
    return yaml.safe_load(block)


def _kit_lines(text: str) -> list[list[str]]:
    return [shlex.split(line, comments=True) for line in text.splitlines()
            if line.strip().startswith("push-cache-kit ")]


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _certify_options(argv: list[str]) -> set[str]:
    assert argv[:2] == ["push-cache-kit", "certify"], argv
    return {a.split("=", 1)[0] for a in argv[2:] if a.startswith("--")}


def _merge(argv: list[str]) -> Any:
    assert argv[:3] == ["push-cache-kit", "report", "merge"], argv
    return report_parser(None).parse_args(argv[2:])


def test_the_bash_block_uses_the_kits_options_and_shards_1_to_n():
    (block,) = _blocks("bash")
    lines = _kit_lines(block)
    certifies = [a for a in lines if a[1] == "certify"]
    merges = [a for a in lines if a[1] == "report"]
    assert certifies and len(merges) == 1, lines
    for argv in certifies:
        assert _certify_options(argv) <= KIT_FLAGS, sorted(_certify_options(argv) - KIT_FLAGS)
    shards = [parse_shard(_option(a, "--shard")) for a in certifies]
    assert shards == [Shard(k, len(certifies)) for k in range(1, len(certifies) + 1)], shards
    dirs = [_option(a, "--report-dir") for a in certifies]
    assert len(set(dirs)) == len(dirs), f"each shard needs its own --report-dir: {dirs}"
    assert [str(p) for p in _merge(merges[0]).reports] == [f"{d}/report.json" for d in dirs]


def _job_with_matrix(jobs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    found = [(name, job) for name, job in jobs.items() if "shard" in ((job.get("strategy") or {}).get("matrix") or {})]
    assert len(found) == 1, list(jobs)
    return found[0]


def _steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(action + "@")]


def _runs(job: dict[str, Any], shard: int | None = None) -> list[list[str]]:
    """The kit's command lines in the job's ``run`` steps, with the matrix's value put in first (as the runner
    does before the shell sees the line)."""
    texts = [s["run"] if shard is None else s["run"].replace(MATRIX_SHARD, str(shard))
             for s in job["steps"] if "run" in s]
    return [argv for text in texts for argv in _kit_lines(text)]


def test_the_workflows_shard_jobs_run_shards_1_to_n_of_the_matrix():
    name, job = _job_with_matrix(_workflow()["jobs"])
    values = job["strategy"]["matrix"]["shard"]
    assert values == list(range(1, len(values) + 1)), values
    for value in values:
        (certify,) = [a for a in _runs(job, value) if a[1] == "certify"]
        assert _certify_options(certify) <= KIT_FLAGS, sorted(_certify_options(certify) - KIT_FLAGS)
        assert parse_shard(_option(certify, "--shard")) == Shard(value, len(values)), (name, certify)
    (upload,) = _steps_using(job, "actions/upload-artifact")
    assert upload["with"]["path"] == f"{_option(certify, '--report-dir')}/report.json", upload
    assert MATRIX_SHARD in upload["with"]["name"], "each shard's artefact needs a name of its own"


def test_the_workflows_merge_reads_every_shards_artefact():
    jobs = _workflow()["jobs"]
    shard_job, job = _job_with_matrix(jobs)
    (merge_name,) = [n for n, j in jobs.items() if any(a[1] == "report" for a in _runs(j))]
    merge_job = jobs[merge_name]
    assert merge_job.get("needs") == shard_job, merge_job.get("needs")
    (download,) = _steps_using(merge_job, "actions/download-artifact")
    (merge,) = [a for a in _runs(merge_job) if a[1] == "report"]
    patterns = [str(p) for p in _merge(merge).reports]
    artefact = _steps_using(job, "actions/upload-artifact")[0]["with"]["name"]
    for value in job["strategy"]["matrix"]["shard"]:
        name = artefact.replace(MATRIX_SHARD, str(value))
        assert fnmatch.fnmatchcase(name, download["with"]["pattern"]), (name, download["with"])
        # download-artifact puts each artefact in a folder of its name under `path`
        landed = str(PurePosixPath(download["with"]["path"]) / name / "report.json")
        assert any(fnmatch.fnmatchcase(landed, p) for p in patterns), (landed, patterns)

"""``report verify REPORT.json``: run again the certification a report describes and say whether it agrees.

A report records what made its rows: the user's ``certify`` arguments (backend, selection, profile, seed,
expectations file, spec), the spec's and the expectations file's sha256, the kit's, the backend's and the generating
libraries' versions, and a fingerprint of the layouts the suite drew. Verification runs ``certify`` with the same
arguments in a fresh process (its reports in a folder of their own, never over the report being checked) and
compares: the verdict, every row, and every recorded input. VERIFIED means all agree; anything else is listed, one
line per difference. A report is a file anyone can edit: only the arguments replay.py allows are run again, and
the backend the re-run imports is named, with where it comes from, before it runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

from ..cli.exitcodes import NOT_CERTIFIED
from ..running.reproducible import VERSIONED, run_versions
from ..spec.paths import DEFAULT_OPERATION
from .parts import Report
from .replay import BackendOrigin, backend_origin, replayable
from .schema import ReportError, load_report

#: what a row must repeat: its outcome and what it was judged against (durations and messages may vary)
ROW_KEYS = ("outcome", "expected", "level", "clauses")
#: the recorded inputs and fingerprints of a run, by their path in the report
HEADER_PATHS = (
    ("suite", "version"),
    ("spec", "version"),
    ("spec", "sha256"),
    ("backend", "name"),
    ("backend", "version"),
    ("run", "hypothesis_profile"),
    ("run", "hypothesis_seed"),
    ("expectations", "sha256"),
    ("run", "push_calls"),
    ("run", "distinct_layouts"),
    ("run", "layouts_sha256"),
    ("verdict", "label"),
    ("completeness", "full"),
)
#: lines of the re-run's output shown when it writes no report
TAIL_LINES = 5


@dataclass(frozen=True)
class Difference:
    """One thing the re-run did not repeat: where, what the report says, what happened now."""

    where: str
    recorded: Any
    now: Any

    def line(self) -> str:
        return f"  {self.where}: {_show(self.recorded)} in the report, {_show(self.now)} now"


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return "absent" if value is None else str(value)


def _get(report: Report, path: Sequence[str]) -> object:
    node: object = report
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


@dataclass(frozen=True)
class Plan:
    """What verification will run: certify's arguments (its reports into the folder verification chose), what
    they say, and the backend they import."""

    args: list[str]
    given: argparse.Namespace
    backend: BackendOrigin


def rerun_plan(report: Report, out: Path) -> Plan:
    """The ``certify`` run that repeats the one `report` describes, writing its reports to `out`: only arguments
    :func:`~.replay.replayable` allows, the backend found (not imported); a one-line ReportError otherwise."""
    args = report["run"].get("certify_args")
    if args is None:
        raise ReportError("the report does not record certify's arguments (made by an older kit, or by pytest "
                          "directly), so the run cannot be repeated")
    kept, given = replayable(args)
    named = given.backend
    if named is None:
        named = report["backend"].get("spec")
        if not named:
            raise ReportError("the report names no backend target (backend.spec), so the run cannot be repeated")
        # attached, so that a value reading like an option stays --backend's value
        kept.append(f"--backend={named}")
    if given.pc_operation is None and given.pc_spec is None:
        # recorded before certify's default became the whole family: the run was of the report's operation alone
        kept.append(f"--operation={report['spec'].get('operation') or DEFAULT_OPERATION}")
    return Plan([*kept, "--report-dir", str(out)], given, backend_origin(str(named)))


def environment_differences(report: Report) -> list[Difference]:
    """The versions that change what runs, as the report records them and as they are in this Python."""
    here = {"python": platform.python_version(), **run_versions()}
    return [Difference(f"environment {name}", _get(report, ("environment", name)), here[name])
            for name in VERSIONED if _get(report, ("environment", name)) != here[name]]


def input_problems(given: argparse.Namespace) -> list[str]:
    """Why the run cannot be repeated here at all (a file it read is missing); one line each."""
    if given.expectations is not None and not Path(given.expectations).is_file():
        return [f"the expectations file {given.expectations} the run read is not here (run verify where the run "
                "ran)"]
    if given.pc_spec is not None and not Path(given.pc_spec).is_file():
        return [f"the spec {given.pc_spec} the run read is not here (run verify where the run ran)"]
    return []


def expectations_difference(report: Report, given: argparse.Namespace) -> list[Difference]:
    path = given.expectations
    if path is None:
        return []
    now = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    recorded = _get(report, ("expectations", "sha256"))
    return [] if now == recorded else [Difference(f"expectations file {path} sha256", recorded, now)]


def compare(recorded: Report, now: Report) -> list[Difference]:
    """Every header entry and every row on which two reports disagree, header first, rows in the report's order."""
    out = [Difference(".".join(path), _get(recorded, path), _get(now, path))
           for path in HEADER_PATHS if _get(recorded, path) != _get(now, path)]
    out += [Difference(f"environment {name}", _get(recorded, ("environment", name)), _get(now, ("environment", name)))
            for name in VERSIONED if _get(recorded, ("environment", name)) != _get(now, ("environment", name))]
    rows_now = {row["id"]: row for row in now["tests"]}
    seen = set()
    for row in recorded["tests"]:
        seen.add(row["id"])
        again = rows_now.get(row["id"])
        if again is None:
            out.append(Difference(f"test {row['id']}", row["outcome"], None))
            continue
        mine, theirs = cast(Mapping[str, object], row), cast(Mapping[str, object], again)  # keys: ROW_KEYS
        out += [Difference(f"test {row['id']} {key}", mine.get(key), theirs.get(key))
                for key in ROW_KEYS if mine.get(key) != theirs.get(key)]
    out += [Difference(f"test {row['id']}", None, row["outcome"]) for row in now["tests"] if row["id"] not in seen]
    return out


@contextmanager
def _out_folder(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="push-cache-verify-") as tmp:
        yield Path(tmp)


def rerun(args: Sequence[str], out: Path) -> tuple[Report | None, int, str]:
    """Run certify with `args` in a fresh Python; (its report or None, its exit code, its output's last lines)."""
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify", *args], capture_output=True,
                          text=True, errors="replace", check=False)
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-TAIL_LINES:])
    try:
        return load_report(out / "report.json"), proc.returncode, tail
    except ReportError:
        return None, proc.returncode, tail


class DifferenceRow(TypedDict):
    """A :class:`Difference` as ``--json`` writes it."""

    where: str
    recorded: object
    now: object


class Verification(TypedDict):
    """``report verify --json``: whether the re-run agrees, and every difference."""

    report: str
    verified: bool
    verdict: str
    rows: int
    certify_args: list[str]
    differences: list[DifferenceRow]


def verify(path: Path, keep: Path | None = None) -> Verification:
    """The verification of the report at `path`: ``verified``, the re-run's arguments and every difference."""
    report = load_report(path)
    with _out_folder(keep) as out:
        plan = rerun_plan(report, out)
        problems = input_problems(plan.given)
        if problems:
            raise ReportError(problems[0])
        differences = environment_differences(report) + expectations_difference(report, plan.given)
        # before anything is imported: the one thing of the report's that runs as code
        print(plan.backend.line(), file=sys.stderr, flush=True)
        again, code, tail = rerun(plan.args, out)
    if again is None:
        differences.append(Difference("the re-run's report", "written", f"none (exit {code}): {tail}"))
    else:
        differences += [d for d in compare(report, again) if not d.where.startswith("environment ")]
    return {"report": str(path), "verified": not differences, "verdict": report["verdict"]["label"],
            "rows": len(report["tests"]), "certify_args": plan.args[:-2],
            "differences": [DifferenceRow(where=d.where, recorded=d.recorded, now=d.now) for d in differences]}


def format_verification(result: Verification) -> str:
    args = " ".join(result["certify_args"])
    if result["verified"]:
        return (f"VERIFIED: {result['report']}: certify {args} gave the verdict {result['verdict']} again and all "
                f"{result['rows']} rows agree\n")
    lines = [f"NOT VERIFIED: {result['report']}: certify {args} differs in {len(result['differences'])} place(s):"]
    lines += [Difference(**d).line() for d in result["differences"]]
    return "\n".join(lines) + "\n"


def main(path: Path, keep: Path | None, as_json: bool) -> int:
    """``report verify``: 0 VERIFIED, 1 when anything differs; a ReportError (bad input) is the caller's exit 2."""
    result = verify(path, keep)
    sys.stdout.write(json.dumps(result, indent=2) + "\n" if as_json else format_verification(result))
    return 0 if result["verified"] else NOT_CERTIFIED


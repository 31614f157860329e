"""``certify`` without ``--operation`` (or with ``--operation all``, or the option repeated): the operations of the
transfer family certified in one command, each in a certify process of its own (the run of one operation is
unchanged: one spec, one report), then one verdict per operation and the family's, written as ``family.json``.

The family's exit code is the most severe of the operations' by the precedence of ``exitcodes`` (usage error,
adapter error, internal error, not certified, partial, certified with waivers, certified), so a family certifies
only when every operation does.

What the run-wide options mean across the operations (docs/family.md, "The family on the command line"):

- ``--clauses GLOBS``: each glob goes to the operations its first dotted part names (a clause ID starts with its
  operation's api: ``push_cache.data.*`` is push_cache's, ``*.signature.*`` every operation's); an operation no
  glob names is not run (said in the summary and in family.json); a glob naming no operation of the run is a usage
  error.
- ``--spec-version V``: passed to the operations whose spec has release V; the others are not run for that
  release (said and recorded); a release no operation's spec has is a usage error.
- ``--failed-from REPORT``: only the operation that report certified (its ``spec.operation``; absent: push_cache).
- every other argument goes to every operation as it is.

Where the reports go: with ``--report-dir DIR``, each operation's in ``DIR/<operation>/`` and ``family.json`` in
``DIR``; without it, each operation's where a run of that operation alone puts it (``reports/<backend>/`` for
push_cache, ``reports/<backend>@<operation>/`` for the others, ``.partial`` for a partial run) and
``family.json`` in ``reports/<backend>@family/`` (``@family@<release>`` for an older release, ``.partial`` for a
partial family): a folder of its own, so that neither a run of one operation replaces it nor it turns push_cache's
report folder into one that holds more than report files.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import exitcodes
from .family_processes import DEFAULT_JOBS, Ended, Stopping, run_at_once

#: the exit codes from the most severe to the least (exitcodes' docstring: its precedence)
PRECEDENCE = (exitcodes.USAGE_ERROR, exitcodes.ADAPTER_ERROR, exitcodes.INTERNAL_ERROR, exitcodes.NOT_CERTIFIED,
              exitcodes.PARTIAL, exitcodes.CERTIFIED_WITH_WAIVERS, exitcodes.CERTIFIED)
FAMILY_FILE = "family.json"
FAMILY_VERSION = 2
#: what a family's report folder adds after the backend's name, where an operation's adds its name
FAMILY_TAG = "family"
ALL = "all"
PROG = "push-cache-kit certify"


@dataclass
class Asked:
    """The arguments a family run reads itself, and every other one (passed to each operation as it is)."""

    operations: list[str]
    report_dir: str | None
    clauses: str | None
    spec_version: str | None
    failed_from: str | None
    spec: str | None
    no_reports: bool
    rest: list[str]
    #: --jobs as given (operations certified at once)
    jobs: str | None = None


def _split(args: Sequence[str]) -> Asked:
    """What ``args`` ask for, as certify takes them (``--operation X`` or ``--operation=X``, repeatable)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--operation", action="append", default=[])
    for flag in ("--report-dir", "--clauses", "--spec-version", "--failed-from", "--jobs"):
        parser.add_argument(flag, default=None)
    # read, not taken: a run against a spec file of its own is one operation's, and --no-reports goes to each
    known, rest = parser.parse_known_args(list(args))
    spec = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    spec.add_argument("--spec", default=None)
    spec.add_argument("--no-reports", action="store_true")
    seen, _ = spec.parse_known_args(rest)
    return Asked(list(known.operation), known.report_dir, known.clauses, known.spec_version, known.failed_from,
                 seen.spec, seen.no_reports, rest, known.jobs)


def _jobs(given: str | None) -> int:
    """``--jobs N``: how many operations are certified at once, 1 or more (a Refused otherwise)."""
    if given is None:
        return DEFAULT_JOBS
    if not given.isdigit() or int(given) < 1:
        raise Refused(f"--jobs {given!r}: the number of operations certified at once, 1 or more")
    return int(given)


def family_asked(args: Sequence[str]) -> bool:
    """Whether ``args`` ask for the family: no ``--operation`` (and no ``--spec``, a file of one operation's), or
    ``--operation all``, or ``--operation`` given more than once."""
    asked = _split(args)
    if not asked.operations:
        return asked.spec is None
    return len(asked.operations) > 1 or ALL in asked.operations


def most_severe(codes: Sequence[int]) -> int:
    return min(codes, key=lambda c: PRECEDENCE.index(c) if c in PRECEDENCE else 0)


class Refused(Exception):
    """A family's arguments that cannot be run: one line, exit 2, nothing run."""


@dataclass
class Step:
    """One operation of the family: the arguments its certify process gets, or why it is not run (``narrowed``:
    left out by the run's selection, --clauses or --failed-from, which makes the family partial; an operation
    whose spec lacks the release asked for has nothing of that release to judge, and leaves the verdict alone)."""

    operation: str
    args: list[str] = field(default_factory=list)
    not_run: str | None = None
    narrowed: bool = False


@dataclass
class Plan:
    """The family's steps, what it was asked, and the release its folder is tagged with (None: the newest)."""

    steps: list[Step]
    asked: Asked
    release_tag: str | None = None
    #: operations certified at once
    jobs: int = DEFAULT_JOBS


def _globs_by_operation(clauses: str, ops: Sequence[str]) -> dict[str, list[str]]:
    """Each operation's share of ``--clauses``: a glob goes to the operations its first dotted part matches."""
    mine: dict[str, list[str]] = {op: [] for op in ops}
    for glob in (g for g in clauses.split(",") if g):
        named = [op for op in ops if fnmatch.fnmatchcase(op, glob.split(".", 1)[0])]
        if not named:
            raise Refused(f"--clauses {glob!r}: names no operation of this run (a clause ID starts with its "
                          f"operation: {', '.join(ops)})")
        for op in named:
            mine[op].append(glob)
    return mine


def _releases(ops: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each operation's releases, as its packaged spec lists them (the one loader reads it)."""
    from ..spec import SpecError, load_spec, operation_spec_path

    out = {}
    for op in ops:
        try:
            out[op] = load_spec(operation_spec_path(op)).releases
        except SpecError as exc:
            raise Refused(str(exc)) from None
    return out


def _report_operation(path: str) -> str:
    """The operation a report certified (``spec.operation``; a report from before the family: push_cache)."""
    from ..report.schema import ReportError, load_report
    from ..spec.paths import DEFAULT_OPERATION

    try:
        report = load_report(path)
    except ReportError as exc:
        raise Refused(f"--failed-from {exc}") from None
    return str(report["spec"].get("operation") or DEFAULT_OPERATION)


def plan(args: Sequence[str]) -> Plan:
    """Each operation's step; a Refused when the arguments cannot be run."""
    from ..spec import specified_operations

    asked = _split(args)
    jobs = _jobs(asked.jobs)
    known = specified_operations()
    ops = list(known) if not asked.operations or ALL in asked.operations else list(dict.fromkeys(asked.operations))
    unknown = [op for op in ops if op not in known]
    if unknown:
        raise Refused(f"--operation {unknown[0]!r}: no packaged spec; the operations with one: {', '.join(known)}")
    if asked.spec is not None:
        raise Refused(f"--spec {asked.spec} is one operation's spec: give it with one --operation, or leave it out")
    steps = {op: Step(op, ["--operation", op]) for op in ops}
    out = Plan(list(steps.values()), asked, jobs=jobs)

    def leave_out(op: str, why: str, narrowed: bool) -> None:
        if steps[op].not_run is None:  # the first reason stands
            steps[op].not_run, steps[op].narrowed = why, narrowed

    if asked.failed_from is not None:
        theirs = _report_operation(asked.failed_from)
        if theirs not in steps:
            raise Refused(f"--failed-from {asked.failed_from}: a report of {theirs}, which this run does not "
                          f"certify ({', '.join(ops)})")
        steps[theirs].args += ["--failed-from", asked.failed_from]
        for op in ops:
            if op != theirs:
                leave_out(op, f"--failed-from {asked.failed_from} is a report of {theirs}", True)
    if asked.clauses and any(asked.clauses.split(",")):  # an empty --clauses selects nothing away, as in one run
        for op, globs in _globs_by_operation(asked.clauses, ops).items():
            if globs:
                steps[op].args += ["--clauses", ",".join(globs)]
            else:
                leave_out(op, f"--clauses {asked.clauses!r} names none of its clauses", True)
    if asked.spec_version is not None:
        release = asked.spec_version
        releases = _releases(ops)
        having = [op for op in ops if release in releases[op]]
        if not having:
            raise Refused(f"--spec-version {release}: not a release of any operation's spec; known: "
                          + "; ".join(f"{op}: {', '.join(releases[op])}" for op in ops))
        for op in ops:
            if op in having:
                steps[op].args += ["--spec-version", release]
            else:
                leave_out(op, f"its spec has no release {release} (its releases: {', '.join(releases[op])})", False)
        ran = [op for op in having if steps[op].not_run is None]
        out.release_tag = None if all(releases[op][-1] == release for op in ran) else release
    if all(step.not_run is not None for step in out.steps):
        raise Refused("no operation is left to run: " + "; ".join(f"{s.operation}: {s.not_run}" for s in out.steps))
    return out


def run_family(args: Sequence[str]) -> int:
    """Certify the operations, ``--jobs`` at a time; print and write the verdict of each and the family's."""
    try:
        family_plan = plan(args)
    except Refused as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return exitcodes.USAGE_ERROR
    asked = family_plan.asked
    base = Path(asked.report_dir) if asked.report_dir is not None else None
    to_run = [s for s in family_plan.steps if s.not_run is None]

    def heading(index: int) -> str | None:
        # the first operation's run starts without a line of the family's: arguments it refuses are then the one
        # line it prints, as a run of one operation says them (README: a bad option is one line)
        return None if index == 0 else f"== certify --operation {to_run[index].operation} ({index + 1} of {len(to_run)})"

    argvs = [[sys.executable, "-m", "conformance_tests", "certify", *step.args,
              *(["--report-dir", str(base / step.operation)] if base is not None else []), *asked.rest]
             for step in to_run]
    with Stopping() as stopping:
        ended = dict(zip((s.operation for s in to_run), run_at_once(argvs, family_plan.jobs, stopping, heading),
                         strict=True))
    first = ended[to_run[0].operation]
    if first is not None and first.code == exitcodes.USAGE_ERROR:
        return exitcodes.USAGE_ERROR  # its one line said why; nothing ran, nothing is written
    rows: list[dict[str, Any]] = []
    backend = None
    family_partial = any(s.narrowed for s in family_plan.steps)
    for step in family_plan.steps:
        result = ended.get(step.operation)
        if step.not_run is None and result is None:
            step.not_run, family_partial = stopping.why(), True
        if step.not_run is not None or result is None:
            rows.append({"operation": step.operation, "exit_code": None, "verdict": None, "report": None,
                         "not_run": step.not_run})
            continue
        row, partial = _row(step, result)
        rows.append(row)
        backend = backend or result.said.get("backend")
        family_partial = family_partial or partial
    code = most_severe([r["exit_code"] for r in rows if r["exit_code"] is not None])
    family = {"family_version": FAMILY_VERSION, "exit_code": code, "verdict": exitcodes.BY_CODE[code].name,
              "operations": rows}
    where, why_not = _family_file(base, family_plan, backend, family_partial)
    if where is not None:
        from ..report.folders import write_files

        write_files({FAMILY_FILE: json.dumps(family, indent=2) + "\n"}, where.parent)
    print(f"\nfamily verdict: {family['verdict']} ({len(rows)} operations; "
          f"{_shown(where) if where is not None else why_not})")
    for row in rows:
        if row["exit_code"] is None:
            print(f"  {row['operation']:<12} not run: {row['not_run']}")
        else:
            print(f"  {row['operation']:<12} {row['verdict'] or exitcodes.BY_CODE[row['exit_code']].name:<28} "
                  f"{row['report'] or '-'}")
    return code


def _family_file(base: Path | None, family_plan: Plan, backend: str | None,
                 partial: bool) -> tuple[Path | None, str]:
    """Where family.json goes, or why it is not written."""
    if family_plan.asked.no_reports:
        return None, "family.json not written: --no-reports"
    if base is not None:
        return base / FAMILY_FILE, ""
    if backend is None:
        return None, "family.json not written: no operation's run named its backend"
    from ..report.folders import default_folder

    tag = FAMILY_TAG + (f"@{family_plan.release_tag}" if family_plan.release_tag else "")
    return default_folder(Path("reports"), backend, partial=partial, release=tag) / FAMILY_FILE, ""


def _shown(path: Path) -> str:
    from ..report.rerun import shown_path

    return shown_path(path)


def _row(step: Step, result: Ended) -> tuple[dict[str, Any], bool]:
    """An operation's row of family.json from what its certify process decided, and whether its run was partial
    (so is a run that wrote no report)."""
    folder = result.said.get("report_dir")
    report = Path(folder) / "report.json" if isinstance(folder, str) else None
    verdict, partial = None, True
    if report is not None and report.is_file():
        try:
            judged = json.loads(report.read_text(encoding="utf-8"))["verdict"]
            verdict, partial = judged["label"], bool(judged.get("partial"))
        except (ValueError, KeyError, TypeError):
            pass
    else:
        report = None
    row = {"operation": step.operation, "exit_code": result.code, "verdict": verdict,
           "report": _shown(report) if report is not None else None, "not_run": None}
    if result.signal is not None:
        row["killed_by"] = result.signal
    return row, partial


def record_result(path: str, code: int, result: exitcodes.RunResult) -> None:
    """In an operation's certify process: write what the family reads (family_processes.RESULT_ENV)."""
    try:
        Path(path).write_text(json.dumps({"exit_code": code, "report_dir": result.report_dir,
                                          "backend": result.backend_name}), encoding="utf-8")
    except OSError:
        pass  # the family then says it found no report; the process's exit code still stands

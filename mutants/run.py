"""Certify every mutant backend and print the kill matrix (``tox -e mutants``).

Each mutant is certified in its own ``python -m conformance_tests certify`` process, exactly as a vendor's
backend would be: forked, with the same argv and environment, from a zygote that has imported the kit once
(:mod:`mutants.zygote`; ``--no-zygote``: a fresh interpreter each, slower). Its ``targets`` are exact clause IDs, all of the level its ``breaks`` names. A ``must`` mutant
is *killed* when the verdict is NOT CERTIFIED and at least one target (a blocking ``must`` clause) failed; a
``should`` (compatibility) mutant is killed when at least one target is reported incompatible. The run fails
when a mutant survives: no clause caught it, or only clauses other than its targets did. The matrix shows which
part of the suite killed each mutant: the clause tests, or the stateful suite (tests of a ``history``
procedure); a mutant of ``by="histories"`` counts as killed only when the histories alone caught it (its focus
names the clause tests it goes through unseen). The matrix is printed and written as JSON beside the reports;
its "condition reached" column says whether the run reached the partitions and pairs a mutant's ``reaches``
declares (:mod:`mutants.reach`): a mutant that survives where its condition was never drawn says so.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from conformance_tests.cli.exitcodes import USAGE_ERROR
from conformance_tests.report.model import LABEL_KIND, VerdictKind
from conformance_tests.report.parts import Report, TestRow
from conformance_tests.report.schema import ReportError, from_json
from conformance_tests.running.phases import UNTIL_FAILED_OUTCOMES
from conformance_tests.spec import Level, Spec, load_spec, operation_spec_path, specified_operations
from conformance_tests.spec.model import HISTORY_PROCEDURE
from mutants import reach
from mutants.catalog import MUTANTS, Mutant
from mutants.children import STOP_SIGNALS, Children, Stopped, raise_stopped, watch_parent

CAUGHT = set(UNTIL_FAILED_OUTCOMES)  # a failing clause is what ends a run certify --until-failed
LEVELS = ("must", "should")
#: how long a mutant's failing history is shrunk: most of a matrix's time was shrinking the histories only the
#: stateful suite fails (about 30 s each under certify's default)
MUTANT_SHRINK_S = 5.0
#: the parts of the suite that kill mutants: the clause tests, and the stateful suite (procedure history)
PARTS = ("clauses", "histories")
# the clause outcomes that count as a kill, by the level the mutant breaks (a should clause never "fails"; a flaky
# must clause blocks the verdict as a failed one does)
KILLING_OUTCOMES = {"must": ("failed", "flaky"), "should": ("incompatible",)}


@dataclass
class Result:
    name: str
    defect: str
    targets: list[str]
    breaks: str
    verdict: str
    caught_by: list[str] = field(default_factory=list)
    caught_by_target: list[str] = field(default_factory=list)
    killed_by: list[str] = field(default_factory=list)   # the parts whose tests failed a target: clauses, histories
    by: str = "clauses"
    status: str = "survived"   # killed | survived | unrelated | not_only_histories | error
    seconds: float = 0.0
    detail: str = ""
    reaches: list[str] = field(default_factory=list)  # the domain-coverage keys the mutant's condition needs
    condition_reached: str = reach.UNDECLARED  # yes | no: <keys> | unknown: <why> | — (none declared)


def catalog_problems(mutants: list[Mutant], levels: dict[str, str], keys: set[str] | None = None) -> list[str]:
    """Why the catalog is unusable: an unknown ``breaks``, no targets, a target that is not the exact ID of
    a spec clause of the mutant's level (``levels``: clause ID -> level), or a ``reaches`` key that is no partition
    or pair of the spec's coverage (``keys``; None: not checked)."""
    problems = []
    for m in mutants:
        for k in reach.unknown_keys(m.reaches, keys) if keys is not None else ():
            problems.append(f"{m.name}: reaches {k!r} is no partition or pair key of the spec's coverage")
        if m.breaks not in LEVELS:
            problems.append(f"{m.name}: breaks={m.breaks!r}, expected one of {LEVELS}")
        if not m.targets:
            problems.append(f"{m.name}: no targets")
        for t in m.targets:
            if t not in levels:
                problems.append(f"{m.name}: {t!r} is not a clause ID of the spec (targets are exact IDs, no globs)")
        for f in m.focus:
            if not any(fnmatch.fnmatchcase(cid, f) for cid in levels):
                problems.append(f"{m.name}: focus {f!r} matches no clause ID of the spec")
        if m.by not in PARTS:
            problems.append(f"{m.name}: by={m.by!r}, expected one of {PARTS}")
        for t in m.targets:
            if t in levels and levels[t] != m.breaks:
                problems.append(f"{m.name}: target {t} is a {levels[t]} clause, the mutant breaks {m.breaks}")
    return problems


def family_specs() -> list[Spec]:
    """The spec of every operation of the family that has one (a mutant is certified against its targets')."""
    return [load_spec(operation_spec_path(api)) for api in specified_operations()]


def spec_of(mutant: Mutant, specs: list[Spec]) -> Spec:
    """The operation spec holding the mutant's first target (catalog_problems checks it holds them all)."""
    return next((s for s in specs if any(c.id == mutant.targets[0] for c in s.clauses)), specs[0])


def certify_env() -> dict[str, str]:
    """The environment of every certify process (and of the zygote they are forked from: the hash seed is fixed
    when an interpreter starts)."""
    return {**os.environ, "PYTHONHASHSEED": "0"}


def certify(mutant: Mutant, out_dir: Path, extra: list[str], children: Children) -> Result:
    report_dir = out_dir / mutant.name
    spec = spec_of(mutant, family_specs())
    argv = [sys.executable, "-m", "conformance_tests", "certify", "--isolation", "off", "--operation", spec.api,
            "--backend", f"mutants.catalog:{mutant.name}",
            "--report-dir", str(report_dir), "-q", "--no-header", "-p", "no:warnings",
            # a kill is its targets' failures: the run ends once every target has failed (every clause test first,
            # so whether one of them catches a mutant left to the histories is still known)
            "--until-failed", ",".join(mutant.targets), *extra]
    if mutant.focus:
        argv += ["--clauses", ",".join(mutant.focus)]
    started = time.monotonic()
    returncode, stdout, stderr = children.run(argv, certify_env())
    result = Result(mutant.name, mutant.defect, list(mutant.targets), mutant.breaks, verdict="?",
                    seconds=round(time.monotonic() - started, 1), by=mutant.by)
    report_path = report_dir / "report.json"
    if not report_path.exists():
        result.status = "error"
        tail = (stdout + stderr).strip().splitlines()[-5:]
        result.detail = f"no report (exit {returncode}): " + " | ".join(tail)
        return result
    try:
        report = from_json(report_path.read_text(encoding="utf-8"), str(report_path))
    except ReportError as exc:  # certify validates what it writes: a broken file is the run's error, not a verdict
        result.status = "error"
        result.detail = str(exc)
        return result
    judge(mutant, report, result, {c.id: c.procedure.name for c in spec.clauses}, spec)
    return result


def part_of(test: TestRow, procedures: dict[str, str]) -> str:
    """Which part of the suite a report row's test belongs to: its clause's procedure says."""
    clause = (test.get("params") or {}).get("clause")
    return "histories" if procedures.get(str(clause)) == HISTORY_PROCEDURE else "clauses"


def killing_parts(mutant: Mutant, report: Report, procedures: dict[str, str]) -> list[str]:
    """The parts whose tests failed (or found incompatible) one of the mutant's targets."""
    parts = set()
    for test in report.get("tests") or ():
        if test["outcome"] not in CAUGHT:
            continue
        blamed = test.get("failed_clauses") or test["clauses"]
        if any(t in blamed for t in mutant.targets):
            parts.add(part_of(test, procedures))
    return sorted(parts)


def judge(mutant: Mutant, report: Report, result: Result, procedures: dict[str, str] | None = None,
          spec: Spec | None = None) -> None:
    """Fill in ``result``'s verdict, catches and status from a certification report of ``mutant``
    (``procedures``: clause ID -> procedure name, to tell the histories' tests from the clause tests), and
    whether the run reached its condition (``spec``: whose coverage the report measured; None: not looked up)."""
    result.verdict = report["verdict"]["label"]
    result.reaches = list(mutant.reaches)
    if spec is not None:
        result.condition_reached = reach.cell(mutant.reaches, report, spec)
    result.caught_by = sorted(c["id"] for c in report["clauses"] if c["outcome"] in CAUGHT)
    outcomes = {c["id"]: c["outcome"] for c in report["clauses"]}
    killing = KILLING_OUTCOMES[mutant.breaks]
    result.caught_by_target = [t for t in mutant.targets if outcomes.get(t) in killing]
    result.killed_by = killing_parts(mutant, report, procedures or {})
    blocked = LABEL_KIND.get(result.verdict) is VerdictKind.NOT_CERTIFIED
    if result.caught_by_target and mutant.by == "histories" and result.killed_by != ["histories"]:
        result.status = "not_only_histories"
        result.detail = (f"killed by {' and '.join(result.killed_by)}: a clause test catches it, so it shows "
                         "nothing the histories add")
    elif result.caught_by_target and (not Level(mutant.breaks).blocking or blocked):
        result.status = "killed"
    elif result.caught_by_target:   # a must target failed, yet certified (e.g. an expectations file waived it)
        result.status = "survived"
        result.detail = f"{result.caught_by_target} failed, yet the verdict is {result.verdict}"
    elif result.caught_by:
        result.status = "unrelated"
        result.detail = f"no target {' or '.join(killing)}; caught only by other clauses"
    else:
        result.status = "survived"
        result.detail = "no clause failed"
    if result.status != "killed" and result.condition_reached.startswith("no"):
        # the diagnosis: no test drew the condition, so the suite never looked where the defect is
        result.detail = (f"its condition was not reached ({result.condition_reached.removeprefix('no: ')}); "
                         + result.detail).rstrip("; ")


#: the widest verdict label a report can give (the columns fit every verdict)
VERDICT_WIDTH = max(len(label) for label in LABEL_KIND)
STATUS_WIDTH = max(len(s) for s in ("killed", "survived", "unrelated", "error", "not_only_histories"))
#: the widest "killed by" cell: every part of the suite joined
PARTS_WIDTH = len("+".join(PARTS))
REACHED_TITLE = "condition reached"


def line(r: Result, name_width: int) -> str:
    """One row of the matrix: the mutant, the level it breaks, its status, the verdict, seconds, and the target
    clauses that caught it (failed for a must mutant, incompatible for a should one) or why not."""
    others = [c for c in r.caught_by if c not in r.caught_by_target]
    how = " or ".join(KILLING_OUTCOMES.get(r.breaks, ()))
    shown = ([f"{', '.join(r.caught_by_target)} ({how})"] if r.caught_by_target else []) + (
        [f"+ {len(others)} other"] if others else [])
    return (f"{r.name.ljust(name_width)}  {r.breaks:6} {r.status:{STATUS_WIDTH}} "
            f"{'+'.join(r.killed_by) or '-':{PARTS_WIDTH}} {r.verdict:{VERDICT_WIDTH}} "
            f"{r.seconds:6.1f}  {r.condition_reached:{len(REACHED_TITLE)}}  {'; '.join(shown) or r.detail}")


def header(name_width: int) -> str:
    return (f"{'mutant'.ljust(name_width)}  {'breaks':6} {'status':{STATUS_WIDTH}} {'killed by':{PARTS_WIDTH}} "
            f"{'verdict':{VERDICT_WIDTH}} "
            f"{'s':>6}  {REACHED_TITLE}  caught by (the target clauses and how; then the other clauses that failed)")


def print_matrix(results: list[Result]) -> None:
    width = max(len(r.name) for r in results)
    print("\n" + header(width))
    for r in results:
        print(line(r, width))
    killed = sum(r.status == "killed" for r in results)
    only = sum(r.status == "killed" and r.killed_by == ["histories"] for r in results)
    print(f"\n{killed}/{len(results)} mutants killed ({only} by the histories alone); "
          f"{sum(len(r.caught_by) for r in results)} clause failures in all")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mutants.run", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated mutant names (default: all)")
    parser.add_argument("--out", default="reports/mutants", help="where the mutants' reports and the matrix go")
    parser.add_argument("--jobs", type=int, default=2, help="mutants certified at once")
    parser.add_argument("--focus", action="store_true",
                        help="run only each mutant's focus clauses (fast; used by the self-tests)")
    parser.add_argument("--shrink-time", type=float, default=MUTANT_SHRINK_S, metavar="SECONDS",
                        help=f"how long each mutant's failing histories are shrunk (default {MUTANT_SHRINK_S:g}s: a "
                             "kill needs the failure, not the shortest history; certify's own default is longer)")
    parser.add_argument("--no-zygote", action="store_true",
                        help="start each certify process as a fresh interpreter, not forked from a zygote that "
                             "has imported the kit once (same argv, environment and results; a few seconds slower "
                             "each)")
    args, extra = parser.parse_known_args(argv)
    extra = ["--shrink-time", f"{args.shrink_time:g}", *extra]
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only.split(",")]
    unknown = set(filter(None, args.only.split(","))) - {m.name for m in MUTANTS}
    if unknown:
        print(f"error: unknown mutant(s) {sorted(unknown)}; known: {[m.name for m in MUTANTS]}", file=sys.stderr)
        return USAGE_ERROR
    specs = family_specs()
    problems = catalog_problems(chosen, {c.id: c.level for s in specs for c in s.clauses},
                                set().union(*(reach.spec_keys(s) for s in specs)))
    problems += [f"{m.name}: its targets are clauses of more than one operation" for m in chosen
                 if len({spec_of(replace(m, targets=(t,)), specs).api for t in m.targets}) > 1]
    if problems:
        print("error: bad mutant catalog: " + "; ".join(problems), file=sys.stderr)
        return USAGE_ERROR
    if not args.focus:
        chosen = [replace(m, focus=()) for m in chosen]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    width = max(len(m.name) for m in chosen)
    print(f"certifying {len(chosen)} mutants, {max(1, args.jobs)} at a time; a line as each ends", flush=True)
    counter = len(f"[{len(chosen)}/{len(chosen)}] ")
    print(" " * counter + header(width), flush=True)
    done, stopped_by = _certify_all(chosen, out, extra, max(1, args.jobs), (counter, width),
                                    zygote=not args.no_zygote)
    if stopped_by:
        return 128 + stopped_by  # as a shell reports a process the signal ended
    results = [done[m.name] for m in chosen]  # the matrix in catalog order
    print_matrix(results)
    elapsed = round(time.monotonic() - started, 1)
    matrix = {"mutants": [asdict(r) for r in results], "seconds": elapsed,
              "killed": sum(r.status == "killed" for r in results), "total": len(results)}
    (out / "kill-matrix.json").write_text(json.dumps(matrix, indent=2) + "\n")
    print(f"matrix: {out / 'kill-matrix.json'} ({elapsed} s)")
    return 0 if all(r.status == "killed" for r in results) else 1


def _certify_all(chosen: list[Mutant], out: Path, extra: list[str], jobs: int,
                 columns: tuple[int, int], zygote: bool = True) -> tuple[dict[str, Result], int]:
    """Each mutant's result, a line as each ends, and the signal that ended the run (0: none); on a signal every
    certify process has ended before this returns (and the zygote, ``zygote``: whether they are forked from one)."""
    counter, width = columns
    children = Children(zygote_env=certify_env() if zygote else None)
    for signum in STOP_SIGNALS:
        signal.signal(signum, raise_stopped)
    watch_parent()
    done: dict[str, Result] = {}
    pool = ThreadPoolExecutor(max_workers=jobs)
    stopped_by, finished = 0, False
    try:
        futures = [pool.submit(certify, m, out, extra, children) for m in chosen]
        for k, future in enumerate(as_completed(futures), 1):
            r = future.result()
            done[r.name] = r
            print(f"[{k}/{len(chosen)}]".ljust(counter) + line(r, width), flush=True)
        finished = True
    except KeyboardInterrupt:
        stopped_by = signal.SIGINT
    except Stopped as exc:
        stopped_by = exc.signum
    finally:
        if not finished:  # a signal, or stdout gone with the parent (BrokenPipeError): the children end first
            for signum in (*STOP_SIGNALS, signal.SIGINT):  # a second signal must not cut the cleanup short
                signal.signal(signum, signal.SIG_IGN)
            children.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        children.close()
    if children.zygote is not None and children.zygote.why:
        with contextlib.suppress(OSError):
            print(f"mutants.run: the zygote was not usable ({children.zygote.why}): mutants were certified in fresh "
                  "processes instead",
                  file=sys.stderr, flush=True)
    if stopped_by:
        with contextlib.suppress(OSError):  # the terminal or the parent may be gone
            print(f"mutants.run: stopped by {signal.Signals(stopped_by).name}: {len(done)}/{len(chosen)} mutants "
                  "certified, every certify process ended; no kill matrix written", file=sys.stderr, flush=True)
    return done, stopped_by


if __name__ == "__main__":
    sys.exit(main())

"""Certify every mutant backend and print the kill matrix (``tox -e mutants``).

Each mutant is certified in its own ``python -m conformance_tests certify`` process, exactly as a vendor's
backend would be. A mutant is *killed* when at least one of the clauses its defect breaks (its ``targets``)
fails (a ``must``/``may`` clause: NOT CERTIFIED) or is reported incompatible (a ``should`` clause). The run
fails when a mutant survives: it is certified with no failing clause, or only clauses unrelated to its
defect caught it. The matrix is printed and written as JSON beside the reports.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mutants.catalog import MUTANTS, Mutant

CAUGHT = {"failed", "incompatible"}


@dataclass
class Result:
    name: str
    defect: str
    targets: list[str]
    verdict: str
    caught_by: list[str] = field(default_factory=list)
    caught_by_target: list[str] = field(default_factory=list)
    status: str = "survived"   # killed | survived | unrelated | error
    seconds: float = 0.0
    detail: str = ""


def _matches(clause_id: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(clause_id, p) for p in patterns)


def certify(mutant: Mutant, out_dir: Path, extra: list[str]) -> Result:
    report_dir = out_dir / mutant.name
    argv = [sys.executable, "-m", "conformance_tests", "certify", "--backend", f"mutants.catalog:{mutant.name}",
            "--report-dir", str(report_dir), "-q", "--no-header", "-p", "no:warnings", *extra]
    if mutant.focus:
        argv += ["--clauses", ",".join(mutant.focus)]
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    result = Result(mutant.name, mutant.defect, list(mutant.targets), verdict="?",
                    seconds=round(time.monotonic() - started, 1))
    report_path = report_dir / "report.json"
    if not report_path.exists():
        result.status = "error"
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        result.detail = f"no report (exit {proc.returncode}): " + " | ".join(tail)
        return result
    report = json.loads(report_path.read_text())
    result.verdict = report["verdict"]["label"]
    result.caught_by = sorted(c["id"] for c in report["clauses"] if c["outcome"] in CAUGHT)
    result.caught_by_target = [c for c in result.caught_by if _matches(c, mutant.targets)]
    if result.caught_by_target:
        result.status = "killed"
    elif result.caught_by:
        result.status = "unrelated"
        result.detail = "caught only by clauses unrelated to the defect"
    else:
        result.status = "survived"
        result.detail = "no clause failed"
    return result


def print_matrix(results: list[Result]) -> None:
    width = max(len(r.name) for r in results)
    print(f"\n{'mutant'.ljust(width)}  {'status':9} {'verdict':15} {'s':>6}  caught by (target clauses first)")
    for r in results:
        others = [c for c in r.caught_by if c not in r.caught_by_target]
        shown = r.caught_by_target + ([f"+ {len(others)} unrelated"] if others else [])
        print(f"{r.name.ljust(width)}  {r.status:9} {r.verdict:15} {r.seconds:6.1f}  {', '.join(shown) or r.detail}")
    killed = sum(r.status == "killed" for r in results)
    print(f"\n{killed}/{len(results)} mutants killed; "
          f"{sum(len(r.caught_by) for r in results)} clause failures in all")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mutants.run", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated mutant names (default: all)")
    parser.add_argument("--out", default="reports/mutants", help="where the mutants' reports and the matrix go")
    parser.add_argument("--jobs", type=int, default=2, help="mutants certified at once")
    parser.add_argument("--focus", action="store_true",
                        help="run only each mutant's focus clauses (fast; used by the self-tests)")
    args, extra = parser.parse_known_args(argv)
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only.split(",")]
    unknown = set(filter(None, args.only.split(","))) - {m.name for m in MUTANTS}
    if unknown:
        print(f"error: unknown mutant(s) {sorted(unknown)}; known: {[m.name for m in MUTANTS]}", file=sys.stderr)
        return 2
    if not args.focus:
        chosen = [Mutant(m.name, m.defect, m.targets, focus=()) for m in chosen]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda m: certify(m, out, extra), chosen))
    print_matrix(results)
    elapsed = round(time.monotonic() - started, 1)
    matrix = {"mutants": [asdict(r) for r in results], "seconds": elapsed,
              "killed": sum(r.status == "killed" for r in results), "total": len(results)}
    (out / "kill-matrix.json").write_text(json.dumps(matrix, indent=2) + "\n")
    print(f"matrix: {out / 'kill-matrix.json'} ({elapsed} s)")
    return 0 if all(r.status == "killed" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

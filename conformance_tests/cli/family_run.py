"""``certify --operation A --operation B`` (or ``--operation all``): several operations of the transfer family
certified in one command, each in a certify process of its own (the run of one operation is unchanged: one spec,
one report), then one verdict per operation and the family's, written as ``family.json`` beside their reports.

The family's exit code is the most severe of the operations' by the precedence of ``exitcodes`` (usage error,
adapter error, internal error, not certified, partial, certified with waivers, certified), so a family certifies
only when every operation does.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import exitcodes

#: the exit codes from the most severe to the least (exitcodes' docstring: its precedence)
PRECEDENCE = (exitcodes.USAGE_ERROR, exitcodes.ADAPTER_ERROR, exitcodes.INTERNAL_ERROR, exitcodes.NOT_CERTIFIED,
              exitcodes.PARTIAL, exitcodes.CERTIFIED_WITH_WAIVERS, exitcodes.CERTIFIED)
#: where a family run writes when no --report-dir is given (each operation in a folder of its own under it)
DEFAULT_DIR = Path("reports") / "family"
FAMILY_FILE = "family.json"
ALL = "all"


def _split(args: Sequence[str]) -> tuple[list[str], str | None, list[str]]:
    """The operations asked for, the --report-dir given (or None), and every other argument, as certify takes
    them (``--operation X`` or ``--operation=X``, repeatable)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--operation", action="append", default=[])
    parser.add_argument("--report-dir", default=None)
    known, rest = parser.parse_known_args(list(args))
    return list(known.operation), known.report_dir, rest


def family_asked(args: Sequence[str]) -> bool:
    """Whether ``args`` ask for more than one operation (``--operation`` repeated, or ``--operation all``)."""
    ops, _, _ = _split(args)
    return len(ops) > 1 or ALL in ops


def most_severe(codes: Sequence[int]) -> int:
    return min(codes, key=lambda c: PRECEDENCE.index(c) if c in PRECEDENCE else 0)


def run_family(args: Sequence[str]) -> int:
    """Certify each asked operation in turn; print and write the verdict of each and the family's."""
    from ..spec import specified_operations

    ops, report_dir, rest = _split(args)
    known = specified_operations()
    ops = list(known) if ALL in ops else list(dict.fromkeys(ops))
    unknown = [op for op in ops if op not in known]
    if unknown:
        print(f"push-cache-kit certify: --operation {unknown[0]!r}: no packaged spec; the operations with one: "
              f"{', '.join(known)}", file=sys.stderr)
        return exitcodes.USAGE_ERROR
    base = Path(report_dir) if report_dir is not None else DEFAULT_DIR
    rows = [_certify_one(op, base, rest) for op in ops]
    code = most_severe([r["exit_code"] for r in rows])
    family = {"family_version": 1, "exit_code": code, "verdict": exitcodes.BY_CODE[code].name, "operations": rows}
    base.mkdir(parents=True, exist_ok=True)
    (base / FAMILY_FILE).write_text(json.dumps(family, indent=2) + "\n", encoding="utf-8")
    print(f"\nfamily verdict: {family['verdict']} ({len(rows)} operations; {base / FAMILY_FILE})")
    for row in rows:
        print(f"  {row['operation']:<12} {row['verdict'] or exitcodes.BY_CODE[row['exit_code']].name:<28} "
              f"{row['report'] or '-'}")
    return code


def _certify_one(op: str, base: Path, rest: Sequence[str]) -> dict[str, Any]:
    out = base / op
    argv = [sys.executable, "-m", "conformance_tests", "certify", "--operation", op, "--report-dir", str(out), *rest]
    print(f"== certify --operation {op} (reports: {out})", flush=True)
    code = subprocess.run(argv, check=False).returncode
    # a partial run writes beside a full report it finds there (out.partial): the newer of the two is this run's
    written = [p / "report.json" for p in (out, out.with_name(out.name + ".partial")) if (p / "report.json").is_file()]
    report = max(written, key=lambda p: p.stat().st_mtime_ns) if written else out / "report.json"
    verdict = None
    if report.is_file():
        try:
            verdict = json.loads(report.read_text(encoding="utf-8"))["verdict"]["label"]
        except (ValueError, KeyError, TypeError):
            verdict = None
    return {"operation": op, "exit_code": code, "verdict": verdict,
            "report": str(report) if report.is_file() else None}

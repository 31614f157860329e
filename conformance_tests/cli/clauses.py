"""List the clauses of the push_cache spec: ``python -m conformance_tests clauses [options]``.

Exit status: 0 listed (possibly nothing), 2 bad spec or bad arguments (one line on stderr).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TextIO

from conformance_tests.cli.exitcodes import USAGE_ERROR
from conformance_tests.cli.usage_parser import UsageParser
from conformance_tests.spec import LEVELS, Clause, Spec, SpecError, families, load_spec

COLUMNS = ("ID", "LEVEL", "FAMILY", "SINCE", "UNTIL", "EXPECT")


def build_parser(prog: str = "push-cache-kit clauses") -> argparse.ArgumentParser:
    parser = UsageParser(prog=prog, description="List the clauses of the push_cache spec.")
    parser.add_argument("--spec", metavar="PATH", help="spec YAML to read (default: the packaged spec)")
    parser.add_argument("--release", metavar="NAME",
                        help="only clauses that hold in this release (since <= NAME < until)")
    parser.add_argument("--level", action="append", choices=LEVELS, metavar="LEVEL",
                        help=f"only this level ({'|'.join(LEVELS)}); repeatable")
    parser.add_argument("--family", action="append", choices=families(), metavar="FAMILY",
                        help=f"only this family ({'|'.join(families())}); repeatable")
    parser.add_argument("--format", choices=("table", "json", "markdown"), default="table",
                        help="output format (default: table)")
    return parser


def select(spec: Spec, levels: Sequence[str] | None = None, families: Sequence[str] | None = None) -> list[Clause]:
    return [c for c in spec.clauses
            if (not levels or c.level.value in levels) and (not families or c.family in families)]


def clause_row(clause: Clause) -> dict[str, object]:
    return {
        "id": clause.id,
        "title": clause.title,
        "level": clause.level.value,
        "family": clause.family,
        "since": clause.since,
        "until": clause.until,
        "outcome": clause.expect.describe(),
        "expect": clause.expect.as_data(),
        "refines": clause.refines,
        "requires": list(clause.requires),
        "deviation": clause.deviation,
        "source": {k: v for k, v in dataclasses.asdict(clause.source).items() if v is not None},
        "cases": [case.name for case in clause.cases],
    }


def _cells(clause: Clause) -> tuple[str, ...]:
    return (clause.id, clause.level.value, clause.family, clause.since or "-", clause.until or "-",
            clause.expect.describe())


def _summary(clauses: Sequence[Clause]) -> str:
    counts = Counter(c.level.value for c in clauses)
    parts = ", ".join(f"{level}: {counts[level]}" for level in LEVELS)
    return f"{len(clauses)} clause(s) ({parts})"


def render_table(clauses: Sequence[Clause]) -> str:
    rows = [COLUMNS, *(_cells(c) for c in clauses)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(_summary(clauses))
    return "\n".join(lines)


def render_markdown(clauses: Sequence[Clause]) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for clause in clauses:
        cells = list(_cells(clause))
        cells[0] = f"`{cells[0]}`"
        lines.append("| " + " | ".join(esc(c) for c in cells) + " |")
    lines.append("")
    lines.append(_summary(clauses))
    return "\n".join(lines)


def render_json(spec: Spec, clauses: Sequence[Clause]) -> str:
    doc = {
        "spec": {"version": spec.version, "path": str(spec.path), "sha256": spec.sha256, "release": spec.release},
        "clauses": [clause_row(c) for c in clauses],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str)


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:  # --help, or a bad option said in one line (usage_parser)
        return int(exc.code) if isinstance(exc.code, int) else USAGE_ERROR
    try:
        spec = load_spec(args.spec, release=args.release)
    except SpecError as exc:
        print(f"error: {exc}", file=err)
        return USAGE_ERROR
    clauses = select(spec, args.level, args.family)
    if args.format == "json":
        text = render_json(spec, clauses)
    elif args.format == "markdown":
        text = render_markdown(clauses)
    else:
        text = render_table(clauses)
    print(text, file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

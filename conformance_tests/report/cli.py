"""`python -m conformance_tests report render|summary|diff|verify|merge`: work on report.json files.

Exit codes: 0 fine; 1 `diff` found a regression, or `verify` a difference; 2 bad input (one line on stderr).
`merge` exits with the code `certify` gives the merged report's verdict (0, 1, 5 or 6; 4 when it could not be
written).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cli.usage_parser import UsageParser
from .builder import outcome_for
from .diff import diff_reports, format_diff
from .markdown import format_compatibility
from .merge import merge_reports, read_shard
from .model import CLAUSE_OUTCOMES, FAILING_TEST_OUTCOMES, TEST_OUTCOMES
from .parts import Expectations, Report, full_run, operation_of
from .render import render_derived, write_reports
from .rerun import rerun_command, shown_path
from .schema import ReportError, load_report


def _parser(prog: str | None) -> argparse.ArgumentParser:
    parser = UsageParser(
        prog=prog or "python -m conformance_tests report",
        description="Render, summarise and compare push_cache conformance reports (report.json).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    render = sub.add_parser(
        "render", help="write junit.xml, summary.md, index.html, badge.json from a report.json"
    )
    render.add_argument("report", type=Path, metavar="REPORT_JSON")
    render.add_argument("--out", type=Path, default=None, help="output folder (default: the report's folder)")
    summary = sub.add_parser("summary", help="print the verdict, counts and failing clauses")
    summary.add_argument("report", type=Path, metavar="REPORT_JSON")
    diff = sub.add_parser("diff", help="compare two reports by clause ID and test ID; exit 1 on regression")
    diff.add_argument("before", type=Path, metavar="A.json")
    diff.add_argument("after", type=Path, metavar="B.json")
    diff.add_argument("--json", action="store_true", help="print the differences as JSON")
    verify = sub.add_parser("verify", help="run again the certification a report describes; VERIFIED when the "
                                           "verdict and every row agree, else each difference (exit 1)")
    verify.add_argument("report", type=Path, metavar="REPORT_JSON")
    verify.add_argument("--out", type=Path, default=None,
                        help="keep the re-run's reports in this folder (default: a temporary one)")
    verify.add_argument("--json", action="store_true", help="print the verification as JSON")
    merge = sub.add_parser(
        "merge", help="join the reports of `certify --shard K/N` runs into the report of the whole run; exit code "
                      "as certify's for its verdict"
    )
    merge.add_argument("reports", type=Path, nargs="+", metavar="SHARD_REPORT_JSON")
    merge.add_argument("--out", type=Path, required=True, metavar="DIR",
                       help="folder for report.json and the formats derived from it (a partial result never "
                            "replaces a full report there: it goes to DIR.partial/)")
    return parser


def _render(args: argparse.Namespace) -> int:
    report = load_report(args.report)
    out = args.out if args.out is not None else args.report.parent
    try:
        paths = render_derived(report, out, args.report)
    except OSError as exc:
        raise ReportError(f"{out}: cannot write: {exc.strerror or exc}") from None
    for path in paths.values():
        print(path)
    return 0


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def _na(value: Any) -> str:
    return "n/a" if value is None else str(value)


def _expectations(exp: Expectations) -> str:
    if not exp.get("path"):
        return "none"
    waived = exp.get("waived") or []
    return (f"{exp['path']} (sha256 {exp.get('sha256')}), {len(waived)} tests waived, "
            f"{len(exp.get('expired') or [])} expired entries")


def _failing_tests(report: Report, clause_id: str) -> int:
    """How many tests failed the clause (a history that broke another clause passed this one)."""
    by_id = {t["id"]: t for t in report["tests"]}
    return sum(1 for tid in next(c for c in report["clauses"] if c["id"] == clause_id)["tests"]
               if tid in by_id and outcome_for(by_id[tid], clause_id) in FAILING_TEST_OUTCOMES)


def _cause_lines(report: Report, location: str | None) -> list[str]:
    lines = []
    for cause in report.get("likely_causes") or []:
        more = len(cause["clauses"]) - CAUSE_CLAUSES_SHOWN
        lines.append(f"  likely cause: {cause['statement']} (failed clauses: "
                     + ", ".join(cause["clauses"][:CAUSE_CLAUSES_SHOWN]) + (f" and {more} more" if more > 0 else "")
                     + ")")
    command = rerun_command(report, location)
    if command:
        lines.append(f"  re-run the failing tests: {command}")
    return lines


#: the clauses of each likely cause the terminal names (the report lists them all)
CAUSE_CLAUSES_SHOWN = 4


def format_summary(report: Report, location: str | None = None) -> str:
    """The report for a terminal; ``location``: where its report.json lies, as the re-run command names it."""
    verdict, summary = report["verdict"], report["summary"]
    backend = f"{report['backend']['name']} {report['backend'].get('version') or ''}".strip()
    lines = [
        f"{operation_of(report)} conformance: {verdict['label']}",
        f"  backend {backend}; spec {report['spec']['version']}; suite {report['suite']['version']}; "
        f"run {report['run'].get('started')} ({float(report['run'].get('duration_s') or 0):.2f} s)",
        f"  compatibility: {format_compatibility(verdict['compatibility'])}",
        f"  {operation_of(report)} calls: {_na(report['run'].get('push_calls'))}, "
        f"distinct layouts: {_na(report['run'].get('distinct_layouts'))}, "
        f"histories: {_na(report['run'].get('histories'))}, steps: {_na(report['run'].get('history_steps'))}, "
        f"pushes in histories: {_na(report['run'].get('history_pushes'))}",
        f"  expectations: {_expectations(report['expectations'])}",
    ]
    lines += [f"  why: {r}" for r in verdict.get("reasons") or []]
    lines += _cause_lines(report, location)
    completeness = report.get("completeness") or full_run()
    if not completeness.get("full", True):
        lines.append(f"  partial run: {completeness.get('left_out_count', 0)} test(s) left out; "
                     + "; ".join(completeness.get("reasons") or []))
    lines += [
        "",
        f"tests: {summary['tests']}",
    ]
    # summary.get: a report written before an outcome existed (flaky) has no count for it
    lines += _table([tuple(TEST_OUTCOMES), tuple(str(summary.get(o, 0)) for o in TEST_OUTCOMES)])
    counts = dict.fromkeys(CLAUSE_OUTCOMES, 0)
    for clause in report["clauses"]:
        counts[clause["outcome"]] += 1
    lines += ["", f"clauses: {len(report['clauses'])}"]
    lines += _table([tuple(CLAUSE_OUTCOMES), tuple(str(counts[o]) for o in CLAUSE_OUTCOMES)])
    blocking = set(verdict["blocking"])
    failing = [
        c for c in report["clauses"] if c["outcome"] in ("failed", "flaky", "incompatible") or c["id"] in blocking
    ]
    lines.append("")
    if failing:
        lines.append(f"failing clauses: {len(failing)}")
        rows = [("clause", "level", "outcome", "blocking", "failing tests")]
        rows += [
            (c["id"], c["level"], c["outcome"], "yes" if c["id"] in blocking else "no",
             f"{_failing_tests(report, c['id'])} of {len(c['tests'])}")
            for c in failing
        ]
        lines += _table(rows)
    else:
        lines.append("failing clauses: none")
    flaky = [t for t in report["tests"] if t["outcome"] == "flaky"]
    if flaky:
        lines += ["", f"flaky tests (failed, then passed when run again): {len(flaky)}"]
        lines += _table([("test", "level", "attempts")] + [
            (t["id"], t["level"], " -> ".join(a["outcome"] for a in t.get("attempts") or []) or "hypothesis replay")
            for t in flaky])
    known = {c["id"] for c in report["clauses"]}
    extra = [cid for cid in verdict["blocking"] if cid not in known]
    if extra:
        lines.append("blocking clause IDs not in the clause list: " + ", ".join(extra))
    return "\n".join(lines) + "\n"


def _summary(args: argparse.Namespace) -> int:
    sys.stdout.write(format_summary(load_report(args.report), shown_path(args.report)))
    return 0


def _diff(args: argparse.Namespace) -> int:
    diff = diff_reports(load_report(args.before), load_report(args.after))
    if args.json:
        sys.stdout.write(json.dumps(diff, indent=2) + "\n")
    else:
        sys.stdout.write(format_diff(diff, str(args.before), str(args.after)))
    return 1 if diff["regression"] else 0


def _verify(args: argparse.Namespace) -> int:
    from . import verify

    return verify.main(args.report, args.out, args.json)


def verdict_line(report: Report) -> str:
    """The verdict as certify's terminal summary words it."""
    verdict, backend = report["verdict"], report["backend"]
    line = (f"verdict: {verdict['label']} — backend {backend['name']} {backend.get('version') or '?'} against "
            f"spec {report['spec']['version']}")
    if verdict.get("blocking"):
        line += "; blocking clauses: " + ", ".join(verdict["blocking"])
    return line


def merge_command(args: argparse.Namespace) -> int:
    """``report merge``: read every shard report (a bad one is a one-line error), merge, write the set into
    --out (DIR.partial/ instead when the result is partial and DIR holds a full report), print the verdict and
    the files; the exit code is the one certify gives that verdict."""
    from ..cli import exitcodes
    from .folders import check_writable, holds_full_report, partial_sibling

    shards = [read_shard(p) for p in args.reports]
    report = merge_reports(shards)
    out = Path(args.out)
    partial = bool(report["verdict"].get("partial"))
    if partial and holds_full_report(out):
        out = partial_sibling(out)
    problem = check_writable(out)
    if problem:
        raise ReportError(f"--out {args.out}: reports cannot be written: {problem}")
    try:
        paths = write_reports(report, out)
    except OSError as exc:
        print(f"error: reports not written to {out}: {exc.strerror or exc}", file=sys.stderr)
        return exitcodes.INTERNAL_ERROR
    merged = ", ".join(f"{s.index}/{s.count}" for s in sorted(shards, key=lambda s: s.index))
    print(f"merged {len(shards)} shard report(s) ({merged}): {report['summary']['tests']} tests, "
          f"{report['completeness']['left_out_count']} left out")
    if partial:
        print("partial: " + "; ".join(report["completeness"]["reasons"]))
    if out != Path(args.out):
        print(f"the full report in {args.out} is kept (a partial result never overwrites it)")
    for name, path in sorted(paths.items()):
        print(f"report {name}: {path}")
    print(verdict_line(report))
    return exitcodes.for_verdict(report["verdict"])


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run one report subcommand; returns the exit code (argparse usage errors also give 2)."""
    try:
        args = _parser(prog).parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    handlers = {"render": _render, "summary": _summary, "diff": _diff, "verify": _verify, "merge": merge_command}
    try:
        return handlers[args.command](args)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

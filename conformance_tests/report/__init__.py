"""Conformance reports: the canonical report.json and the formats derived from it.

report = build_report(header, tests, clauses, expectations)   # a schema-valid, typed Report (report/parts.py)
paths = write_reports(report, out_dir)                         # report.json, junit.xml, summary.md, ...
report = from_json(text)                                       # a report.json's text, validated, as a Report
"""

from .builder import build_report, clause_outcome, compute_verdict
from .diff import diff_reports, format_diff
from .parts import Report
from .render import render_derived, write_reports
from .schema import SCHEMA_PATH, ReportError, from_json, load_report, load_schema, to_json, validate_report

__all__ = [
    "SCHEMA_PATH",
    "Report",
    "ReportError",
    "build_report",
    "clause_outcome",
    "compute_verdict",
    "diff_reports",
    "format_diff",
    "from_json",
    "load_report",
    "load_schema",
    "render_derived",
    "to_json",
    "validate_report",
    "write_reports",
]

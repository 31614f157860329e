"""Conformance reports: the canonical report.json and the formats derived from it.

report = build_report(header, tests, clauses, expectations)   # schema-valid dict
paths = write_reports(report, out_dir)                         # report.json, junit.xml, summary.md, ...
"""

from .builder import build_report, clause_outcome, compute_verdict
from .diff import diff_reports, format_diff
from .render import render_derived, write_reports
from .schema import SCHEMA_PATH, ReportError, load_report, load_schema, validate_report

__all__ = [
    "SCHEMA_PATH",
    "ReportError",
    "build_report",
    "clause_outcome",
    "compute_verdict",
    "diff_reports",
    "format_diff",
    "load_report",
    "load_schema",
    "render_derived",
    "validate_report",
    "write_reports",
]

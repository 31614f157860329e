"""The self-contained HTML page derived from a report (Jinja2; inline CSS and JS, no network assets)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TypedDict

import jinja2

from .model import CLAUSE_OUTCOMES, FAILING_TEST_OUTCOMES, TEST_OUTCOMES, seed_text
from .parts import ClauseRow, Report, operation_of
from .rerun import failing_tests, first_failure, rerun_command
from .shades import TEMPLATE_CONTEXT, VERDICT_CLASS, shade_of

#: how many left-out tests the page lists by name (report.json lists them all)
LEFT_OUT_SHOWN = 500

TEMPLATES = Path(__file__).with_name("templates")


@functools.cache
def environment() -> jinja2.Environment:
    """The report page's and the results site's Jinja2 environment (one templates folder, autoescaped)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["lines"] = first_lines
    env.globals["shades"] = TEMPLATE_CONTEXT  # the colours, from their one owner
    return env


def first_lines(text: object, n: int) -> str:
    """The first ``n`` lines of a message (a failure's byte diff comes in its first lines)."""
    lines = str(text or "").splitlines()
    return "\n".join(lines[:n] + ([f"… {len(lines) - n} more lines"] if len(lines) > n else []))


class FamilyClause(ClauseRow):
    """A clause row of the page's matrix: the row, and its tests' count per test outcome."""

    per_outcome: dict[str, int]


class Family(TypedDict):
    """A family of the page's matrix: its clauses, and their count per clause outcome."""

    name: str
    clauses: list[FamilyClause]
    outcomes: dict[str, int]


def _families(report: Report) -> list[Family]:
    outcome_of = {t["id"]: t["outcome"] for t in report["tests"]}
    families: dict[str, Family] = {}
    for clause in report["clauses"]:
        fam = families.setdefault(
            clause["family"],
            {"name": clause["family"], "clauses": [], "outcomes": dict.fromkeys(CLAUSE_OUTCOMES, 0)},
        )
        per_outcome = dict.fromkeys(TEST_OUTCOMES, 0)
        for tid in clause["tests"]:
            per_outcome[outcome_of.get(tid, "error")] += 1
        fam["clauses"].append({**clause, "per_outcome": per_outcome})
        fam["outcomes"][clause["outcome"]] += 1
    return list(families.values())


def to_html(report: Report, location: str | None = None) -> str:
    """The report as one HTML page; counts sit in elements with stable ids (count-<outcome>). ``location``: where
    its report.json lies, as the command that re-runs the failing tests names it."""
    clause_counts = dict.fromkeys(CLAUSE_OUTCOMES, 0)
    for clause in report["clauses"]:
        clause_counts[clause["outcome"]] += 1
    anchors = {t["id"]: f"test-{i}" for i, t in enumerate(report["tests"])}
    failures = [t for t in report["tests"] if t["outcome"] in FAILING_TEST_OUTCOMES]
    compat = report["verdict"]["compatibility"]
    return (
        environment()
        .get_template("report.html.j2")
        .render(
            report=report,
            operation=operation_of(report),
            test_outcomes=TEST_OUTCOMES,
            clause_outcomes=CLAUSE_OUTCOMES,
            clause_counts=clause_counts,
            families=_families(report),
            failures=failures,
            failing_outcomes=FAILING_TEST_OUTCOMES,
            anchors=anchors,
            compatibility="n/a" if compat is None else f"{compat:.1%}",
            verdict_class=VERDICT_CLASS[shade_of(report["verdict"])],
            left_out_shown=LEFT_OUT_SHOWN,
            seed_text=seed_text(report["run"]),
            rerun=rerun_command(report, location),
            first_cause=next((c for c in report.get("likely_causes") or [] if c.get("predicate")), None),
            first_failure=first_failure(report),
            rerun_count=len(failing_tests(report)),
        )
    )

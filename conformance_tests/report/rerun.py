"""What the first screen of every format of a failing report shows besides the verdict and the likely cause: the
first failure, and the command that runs again only the failing tests (``certify --failed-from``)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from .model import FAILING_TEST_OUTCOMES
from .parts import Report, TestRow

#: certify's option, as its command line spells it (conformance_tests/cli/options.py registers it)
FLAG = "--failed-from"


def failing_tests(report: Report) -> list[str]:
    """The IDs of the tests ``--failed-from`` runs again from ``report``, in its order."""
    return [t["id"] for t in report["tests"] if t["outcome"] in FAILING_TEST_OUTCOMES]


def shown_path(path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> str:
    """``path`` as a user types it from ``cwd``: relative when it lies below, else absolute."""
    where = Path(os.path.abspath(cwd or os.getcwd()))
    full = Path(os.path.abspath(path))
    return str(full.relative_to(where)) if full.is_relative_to(where) else str(full)


def rerun_command(report: Report, report_json: str | None) -> str | None:
    """The command that runs again only the failing tests of ``report``, which lies at ``report_json`` (None
    when none failed, or when where it lies is not known); with the backend as the run named it."""
    if report_json is None or not failing_tests(report):
        return None
    words = ["python", "-m", "conformance_tests", "certify"]
    target = (report.get("backend") or {}).get("spec")
    if target:
        words += ["--backend", str(target)]
    return shlex.join([*words, FLAG, report_json])


def first_failure(report: Report) -> TestRow | None:
    """The failure a report's first screen shows: the first one its first likely cause explains, else the first."""
    failing = [t for t in report["tests"] if t["outcome"] in FAILING_TEST_OUTCOMES]
    causes = report.get("likely_causes") or []
    explained = set(causes[0]["tests"]) if causes and causes[0].get("predicate") else set()
    return next((t for t in failing if t["id"] in explained), failing[0] if failing else None)

"""``certify --failed-from REPORT_JSON``: run again only the tests a report says failed, errored, were flaky or
incompatible, against the backend and spec that report certified (a partial run: see selection.py).

A file that is not a report, or a report of another backend, spec or release, is a one-line usage error (exit 2)
before any test runs; a report that lists no failing test selects none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from ..report.rerun import FLAG, failing_tests
from ..report.schema import ReportError, load_report
from .selection import WHY_FAILED_FROM

if TYPE_CHECKING:
    from ..report.parts import Report
    from ..running.state import RunState


class FailedFrom:
    """Deselects every test the report does not list as failing (after the kit's own selection)."""

    def __init__(self, state: RunState, path: str, report: Report) -> None:
        self.state = state
        self.path = path
        self.wanted = set(failing_tests(report))

    @classmethod
    def read(cls, path: str) -> Report:
        """The report ``--failed-from`` names, validated; a bad file is a one-line usage error."""
        try:
            return load_report(path)
        except ReportError as exc:
            raise pytest.UsageError(f"{FLAG} {exc}") from None

    @classmethod
    def for_run(cls, state: RunState, path: str, report: Report) -> FailedFrom:
        """The plugin, once the run's backend and spec are known: a report of another run is refused."""
        from ..running.finish import backend_display_name

        run = state.run
        problem = foreign(report, backend_name=backend_display_name(run.backend), spec_sha256=run.spec.sha256,
                          release=run.release)
        if problem:
            raise pytest.UsageError(f"{FLAG} {path}: {problem}")
        return cls(state, path, report)

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        keep = [item for item in items if item.nodeid in self.wanted]
        drop = [item for item in items if item.nodeid not in self.wanted]
        for item in drop:
            self.state.own_deselected[item.nodeid] = WHY_FAILED_FROM
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep


def foreign(report: Report, *, backend_name: str, spec_sha256: str, release: str) -> str | None:
    """Why ``report`` is not a report of this run's backend, spec and release (None when it is)."""
    said: Sequence[tuple[str, Any, Any]] = (
        ("backend", report["backend"]["name"], backend_name),
        ("spec sha256", report["spec"]["sha256"], spec_sha256),
        ("spec release", report["spec"]["version"], release),
    )
    for what, theirs, ours in said:
        if theirs != ours:
            return f"a report of another run: its {what} is {theirs!r}, this run's is {ours!r}"
    return None

"""The exit codes of ``python -m conformance_tests certify`` (and of pytest runs with the kit's plugin).

Each code has exactly one meaning.  The README's "## Exit codes" table is checked against ``EXIT_CODES`` by a
self-test (``tests/kit/test_verdicts.py``), and ``certify --help`` prints the same table.

Precedence, when more than one applies: usage error, adapter error, internal error (including "the reports
could not be written"), not certified, partial, certified with waivers, certified.  A partial run that found a
blocking failure exits 1: a defect found is a defect, however few tests ran.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

CERTIFIED = 0
NOT_CERTIFIED = 1
USAGE_ERROR = 2
ADAPTER_ERROR = 3
INTERNAL_ERROR = 4
PARTIAL = 5
CERTIFIED_WITH_WAIVERS = 6


class ExitCode(NamedTuple):
    code: int
    name: str
    meaning: str


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(CERTIFIED, "CERTIFIED",
             "certified: a full run, nothing waived at must level, no must or may test failed, errored or was "
             "flaky"),
    ExitCode(NOT_CERTIFIED, "NOT_CERTIFIED",
             "not certified: a must or may test failed, errored or was flaky (failed, then passed when run "
             "again), or a must clause has no passing test "
             "(untested, or all its tests waived or skipped); also a partial run that found such a failure"),
    ExitCode(USAGE_ERROR, "USAGE_ERROR",
             "usage or input error: bad option, unknown backend, bad spec or expectations file, "
             "unwritable report folder (one line on stderr; nothing was run)"),
    ExitCode(ADAPTER_ERROR, "ADAPTER_ERROR",
             "adapter error: the smoke check failed (one valid push on the baseline scenario); no tests ran"),
    ExitCode(INTERNAL_ERROR, "INTERNAL_ERROR",
             "internal error: an INTERNALERROR in pytest or the kit, or the reports could not be written"),
    ExitCode(PARTIAL, "PARTIAL",
             "partial run, no blocking failure: -k, -m, --deselect, --clauses, --failed-from, test paths, "
             "a custom --spec, the quick profile, one shard (--shard), an interrupt (Ctrl-C, SIGTERM, SIGHUP) or tests not run; "
             "written beside the full report, never over it"),
    ExitCode(CERTIFIED_WITH_WAIVERS, "CERTIFIED_WITH_WAIVERS",
             "certified with waivers: a full run that would certify, but the expectations file waived "
             "(xfail or skip) at least one must test"),
)

BY_CODE = {e.code: e for e in EXIT_CODES}

#: the exit code of each verdict kind (reports/README.md, "The verdict"); spelled here, not imported from
#: report.model.VerdictKind, because this module must import nothing of the kit's dependencies: the CLI reads it to
#: exit with USAGE_ERROR when one is missing (tests/report/test_vocabulary.py holds the keys to VerdictKind)
BY_VERDICT_KIND = {
    "certified": CERTIFIED,
    "certified_with_waivers": CERTIFIED_WITH_WAIVERS,
    "partial": PARTIAL,
    "not_certified": NOT_CERTIFIED,
}


def for_verdict(verdict: Mapping[str, Any]) -> int:
    """The exit code a report's verdict gives (``certify``, and ``report merge`` for the report it makes)."""
    kind = verdict.get("kind")
    if kind is None:  # a verdict without a kind (a fallback): judge by the label
        kind = "certified" if verdict.get("certified") else "not_certified"
    return BY_VERDICT_KIND.get(str(kind), NOT_CERTIFIED)


def markdown_table() -> str:
    """The table the README's "## Exit codes" section carries (``| code | name | meaning |``)."""
    lines = ["| code | name | meaning |", "|---|---|---|"]
    lines += [f"| {e.code} | `{e.name}` | {e.meaning} |" for e in EXIT_CODES]
    return "\n".join(lines) + "\n"


def text_table() -> str:
    """The same table for a terminal (``certify --help``)."""
    return "\n".join(f"  {e.code}  {e.name:<23} {e.meaning}" for e in EXIT_CODES) + "\n"


@dataclass(eq=False)  # a plugin object: pluggy keeps plugins in a set
class RunResult:
    """What a pytest session decided, for whoever started it (pytest's own exit codes overlap the kit's).

    The certify CLI passes one to ``pytest.main`` as a plugin; the kit's plugin finds it among the registered
    plugins and fills it in. It lives here so that the CLI can read it without importing the plugin (and with it hypothesis)
    before pytest starts, which would keep pytest from rewriting those modules' asserts.
    """

    code: int | None = None
    internal_error: bool = False
    report_dir: str | None = None
    #: the backend's name as its report folders are named from it (a family names its own folder after it)
    backend_name: str | None = None
    #: in a family's run: the pipe on which to say that the session has begun (cli/family_processes.py)
    ready_fd: int | None = None

    def session_begun(self) -> None:
        """Every input is checked (a refused one is a usage error before this) and an interrupt from here on ends
        the run with its report: say so once, where asked."""
        fd, self.ready_fd = self.ready_fd, None
        if fd is not None:
            try:
                os.write(fd, b"1")
                os.close(fd)
            except OSError:
                pass  # the family then waits for this run's end before it starts another

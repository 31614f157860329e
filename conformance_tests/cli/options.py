"""The kit's command-line options: registered with pytest, shown first by ``certify --help``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from ..running.context import DEFAULT_SHRINK_S
from ..running.state import DEFAULT_MAX_TIME_S
from .family_processes import DEFAULT_JOBS

#: The kit's options, as (flags, argparse keyword arguments): pytest_addoption registers them and
#: ``certify --help`` shows them first.
OPTIONS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("--backend",), dict(default=None, metavar="SPEC",
                          help="backend to certify: package.module[:attr] or an entry-point name "
                               "(default: $PUSH_CACHE_BACKEND, else 'reference')")),
    (("--spec",), dict(dest="pc_spec", default=None, metavar="PATH",
                       help="spec YAML to certify against (default: the packaged push_cache.yaml; any other "
                            "file makes the run PARTIAL unless its sha256 equals the packaged one's)")),
    (("--operation",), dict(dest="pc_operation", default=None, metavar="NAME",
                            help="the operation of the transfer family to certify, against its packaged spec "
                                 "(one run, its report); given more than once, 'all', or not given (the default): "
                                 "each operation with a packaged spec is certified in a run of its own and "
                                 "family.json gives each one's verdict and the family's (--clauses, --spec-version "
                                 "and --failed-from then go to the operations they name: docs/family.md)")),
    (("--jobs",), dict(dest="pc_jobs", default=None, metavar="N",
                       help=f"how many operations of the family are certified at once, each in its own process "
                            f"(default {DEFAULT_JOBS}; 1: one after another); the console shows them in the "
                            "family's order. A run of one operation ignores it")),
    (("--spec-version",), dict(default=None, metavar="NAME",
                               help="spec release to certify against (default: the newest release the backend "
                                    "declares)")),
    (("--expectations",), dict(default=None, metavar="FILE",
                               help="vendor expectations file (YAML: waivers as xfail/skip entries); a waived "
                                    "must test gives CERTIFIED WITH WAIVERS at best")),
    (("--strict-expectations",), dict(action="store_true", default=False,
                                      help="certify with no waivers at all: refuse an --expectations file")),
    (("--report-dir",), dict(default=None, metavar="DIR",
                             help="where reports are written (default: reports/<backend-name>/, and "
                                  "reports/<backend-name>.partial/ for a partial run)")),
    (("--no-reports",), dict(action="store_true", default=False, help="do not write report files")),
    (("--isolation",), dict(default="auto", choices=("auto", "process", "off"),
                            help="run the backend in its own process, so a crash or a hang costs one test (an "
                                 "error row) and not the run: 'process'; 'off' runs it in the kit's process; "
                                 "'auto' (default) isolates every backend except the kit's own reference (in "
                                 "process, or through the node host)")),
    (("--max-time",), dict(dest="max_time", type=float, default=DEFAULT_MAX_TIME_S, metavar="SECONDS",
                           help=f"overall time budget (default {DEFAULT_MAX_TIME_S:.0f}s): once spent, the tests "
                                "not yet started are recorded as not run and the run is PARTIAL (0: no budget)")),
    (("--until-failed",), dict(dest="until_failed", default="", metavar="CLAUSE_IDS",
                               help="end the run once every one of these comma-separated clause IDs has failed "
                                    "(or was found incompatible), the histories' tests run after every clause "
                                    "test (what the mutants' runs use: a kill is its targets' failures, and "
                                    "whether a clause test catches a mutant left to the histories needs every "
                                    "clause test); the run is PARTIAL")),
    (("--shrink-time",), dict(dest="shrink_time", type=float, default=DEFAULT_SHRINK_S, metavar="SECONDS",
                              help=f"how long a failing example stream (a history of the stateful suite, or a "
                                   f"clause's drawn examples) may be shrunk to a smaller example before it is "
                                   f"reported (default {DEFAULT_SHRINK_S:.0f}s; 0: reported as it failed)")),
    (("--clauses",), dict(default="", metavar="GLOBS",
                          help="run only the tests of clauses matching these comma-separated globs "
                               "(e.g. 'push_cache.data.*,push_cache.safety.guard_bytes'); the run is PARTIAL")),
    (("--failed-from",), dict(dest="failed_from", default=None, metavar="REPORT_JSON",
                              help="run again only the tests that failed, errored, were flaky or incompatible in "
                                   "that report of the same backend and spec (the run is PARTIAL)")),
    (("--shard",), dict(default=None, metavar="K/N",
                        help="run part K of N of the selected tests, every clause's tests in one part (the run is "
                             "PARTIAL; give each shard its own --report-dir and join the N reports with "
                             "`report merge`: docs/shards.md)")),
]


def add_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("push_cache", "push_cache conformance (the kit's options)", after="general")
    for flags, kwargs in OPTIONS:
        g.addoption(*flags, **kwargs)


def takes_value(flag: str) -> bool:
    """Whether the kit's option ``flag`` is followed by a value (an unknown flag: as pytest's own do)."""
    for flags, kwargs in OPTIONS:
        if flag in flags:
            return kwargs.get("action") not in ("store_true", "store_false", "count")
    return True


def without_options(argv: Iterable[str], names: Iterable[str]) -> list[str]:
    """``argv`` less the options ``names`` and their values, however spelled: ``--opt VALUE``, ``--opt=VALUE``
    and a short option with its value attached (``-n2``); a flag that takes no value goes alone."""
    dropped = set(names)
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in dropped:
            skip = takes_value(arg)
        elif "=" in arg and arg.split("=", 1)[0] in dropped:
            continue
        elif not arg.startswith("--") and len(arg) > 2 and arg[:2] in dropped and takes_value(arg[:2]):
            continue
        else:
            out.append(arg)
    return out

"""What a run selects: why a command line selects less than the whole suite, and how left-out tests are named."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the report package reads the constants below without importing pytest
    import pytest

#: what pytest's -k/-m/--deselect/--clauses leave out is "deselected"; tests selected but never finished are
#: "not run"
WHY_DESELECTED, WHY_CLAUSES, WHY_NOT_RUN = "deselected", "--clauses", "not run"
#: a shard run (--shard K/N) leaves out the tests the other shards run; a merge of shard reports leaves out the
#: tests of a shard whose report it was not given
WHY_OTHER_SHARD, WHY_SHARD_MISSING = "another shard", "shard missing"
#: --failed-from leaves out every test its report does not list as failing
WHY_FAILED_FROM = "--failed-from"


def suite_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "suite"


def selection_problems(config: pytest.Config) -> list[str]:
    """Why the command line selects less than the whole suite (empty when it selects all of it)."""
    problems = []
    opt = config.option
    if getattr(opt, "keyword", ""):
        problems.append(f"-k {opt.keyword!r}")
    if getattr(opt, "markexpr", ""):
        problems.append(f"-m {opt.markexpr!r}")
    if getattr(opt, "clauses", ""):
        problems.append(f"--clauses {opt.clauses!r}")
    if getattr(opt, "failed_from", None):
        problems.append(f"--failed-from {opt.failed_from}: only the tests that report lists as failing")
    if getattr(opt, "deselect", None):
        problems.append(f"--deselect: {len(opt.deselect)} test ID(s) given")
    if getattr(opt, "lf", False):
        problems.append("--lf")
    suite = suite_dir()
    odd = []
    for arg in config.args:
        path_part = str(arg).split("::", 1)[0]
        if "::" in str(arg):
            odd.append(str(arg))
        elif path_part == "conformance_tests.suite" and getattr(opt, "pyargs", False):
            continue
        elif (Path(config.invocation_params.dir) / path_part).resolve() != suite:
            odd.append(str(arg))
    if odd:
        problems.append("test paths given: " + ", ".join(odd))
    return problems

"""Command line: ``push-cache-kit`` / ``python -m conformance_tests``.

    certify [pytest args...]      run the conformance suite against a backend (exit 0 = certified)
    clauses [args...]             list / show the spec's clauses (conformance_tests.spec_cli)
    report [render|summary|diff]  work with report files (conformance_tests.report.cli)

Examples::

    python -m conformance_tests certify --backend reference
    python -m conformance_tests certify --backend mypkg.adapter:backend --expectations known.yaml -k param
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

#: arguments every certification run gets (the per-test timeout can be overridden by a later --timeout)
CERTIFY_ARGS = ["-p", "conformance_tests.plugin", "--pyargs", "conformance_tests.suite", "-p", "no:cacheprovider",
                "--timeout=60", "--timeout-method=signal", "--tb=short"]


def certify(args: Sequence[str]) -> int:
    """Run the suite; exit 0 when certified, 1 when blocking clauses fail, 3 on an adapter error, 4 on bad usage."""
    from pathlib import Path

    import pytest

    import conformance_tests

    # test IDs are always "conformance_tests/suite/test_<family>.py::...", wherever the kit is installed
    root = Path(conformance_tests.__file__).resolve().parent.parent
    return int(pytest.main([*CERTIFY_ARGS, f"--rootdir={root}", *args, *_explore_seed(args)]))


def _explore_seed(args: Sequence[str]) -> list[str]:
    """An explore run without --hypothesis-seed gets a random one, so the report records how to replay it."""
    import secrets

    explore = any(a == "explore" or a == "--hypothesis-profile=explore" for a in args) and any(
        a.startswith("--hypothesis-profile") for a in args)
    seeded = any(a.startswith("--hypothesis-seed") for a in args)
    return [f"--hypothesis-seed={secrets.randbelow(2**32)}"] if explore and not seeded else []


def _delegate(module: str, args: Sequence[str]) -> int:
    import importlib

    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        print(f"push-cache-kit: {module} is not available ({exc})", file=sys.stderr)
        return 2
    return int(mod.main(list(args)) or 0)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="push-cache-kit",
        description="Conformance kit for LLM-DataDist CacheManager.push_cache.",
        epilog="certify forwards every further argument to pytest (e.g. --backend, --spec-version, "
               "--expectations, --strict, --report-dir, -k, -x).",
    )
    sub = parser.add_subparsers(dest="command", metavar="{certify,clauses,report}")
    sub.add_parser("certify", help="certify a backend (runs the conformance suite under pytest)", add_help=False)
    sub.add_parser("clauses", help="list or show spec clauses", add_help=False)
    sub.add_parser("report", help="render, summarize or diff reports", add_help=False)
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "certify":
        return certify(rest)
    if command == "clauses":
        return _delegate("conformance_tests.spec_cli", rest)
    if command == "report":
        return _delegate("conformance_tests.report.cli", rest)
    parser.error(f"unknown command {command!r} (choose certify, clauses or report)")
    return 2


if __name__ == "__main__":
    sys.exit(main())

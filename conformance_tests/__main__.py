"""Command line: ``push-cache-kit`` / ``python -m conformance_tests``.

    certify [pytest args...]      run the conformance suite against a backend (exit codes: cli/exitcodes.py)
    clauses [args...]             list the family's clauses, per operation (conformance_tests.cli.clauses)
    report [render|summary|diff]  work with report files (conformance_tests.report.cli)
    site REPORT.json... --out DIR a static results site over many reports (conformance_tests.report.site)

Examples::

    python -m conformance_tests certify --backend reference
    python -m conformance_tests certify --backend mypkg.adapter:backend --expectations known.yaml -k param
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
import time
from collections.abc import Sequence

from .cli import exitcodes
from .cli.invocation import CERTIFY_ARGS, pytest_argv
from .cli.usage_parser import UsageParser

#: how long the certify program waits for threads a backend left running before it exits without them
THREAD_GRACE_S = 2.0
#: how long the exit functions (a node host closing its SSH gateways and their ssh clients among them) may take
#: when the process ends without waiting for a backend's threads
EXIT_FUNCTIONS_S = 20.0
#: the modules the kit needs from its dependencies (pyproject's [project] dependencies; a self-test compares):
#: pytest_rerunfailures is a pytest plugin pytest loads itself, for certify --reruns N
RUNTIME_MODULES = ("numpy", "yaml", "jsonschema", "pytest", "hypothesis", "pytest_timeout", "pytest_rerunfailures",
                   "jinja2", "markupsafe", "msgpack", "execnet")


def missing_dependency() -> str | None:
    """The first runtime dependency that does not import here, or None."""
    import importlib.util

    for name in RUNTIME_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


def _missing(name: str) -> int:
    print(f"push-cache-kit: this Python lacks '{name}': install the kit with its dependencies (pip install . in "
          "its checkout), or run the kit through tox (tox -e certify)", file=sys.stderr)
    return exitcodes.USAGE_ERROR


def _one_line_usage() -> object:
    import pytest

    class _Plugin:
        @pytest.hookimpl(wrapper=True)
        def pytest_cmdline_parse(self, pluginmanager: object, args: list[str]) -> object:
            try:
                return (yield)
            except pytest.UsageError as exc:
                text = " ".join(str(a) for a in exc.args)
                said = [ln.split("error:", 1)[1].strip() for ln in text.splitlines() if "error:" in ln]
                what = said[-1] if said else " ".join(text.split())
                raise pytest.UsageError(f"push-cache-kit certify: {what} (certify --help lists the options)") from None

    return _Plugin()


def certify(args: Sequence[str]) -> int:
    """Run the suite and return the kit's exit code (``conformance_tests/cli/exitcodes.py``)."""
    missing = missing_dependency()  # before --help too: listing the options imports the plugin's dependencies
    if missing:
        return _missing(missing)
    from pathlib import Path

    import conformance_tests

    if any(a in ("-h", "--help") for a in args):
        return certify_help()
    from .cli.family_processes import READY_ENV, RESULT_ENV
    from .cli.family_run import family_asked, record_result, run_family

    if family_asked(args):
        return run_family(args)
    # one operation's run in a family's: it says what it decided in this file, and on this pipe that its arguments
    # are checked (and neither to the processes it starts)
    result_file = os.environ.pop(RESULT_ENV, None)
    result = exitcodes.RunResult(ready_fd=_ready_fd(os.environ.pop(READY_ENV, None)))
    code = _certify_one(str(Path(conformance_tests.__file__).resolve().parent.parent), args, result)
    if result_file is not None:
        record_result(result_file, code, result)
    return code


def _ready_fd(given: str | None) -> int | None:
    """The family's pipe, kept from the processes this run starts."""
    if given is None or not given.isdigit():
        return None
    try:
        os.set_inheritable(int(given), False)
    except OSError:
        return None
    return int(given)


def _certify_one(root: str, args: Sequence[str], result: exitcodes.RunResult) -> int:
    """One operation's run under pytest (``--operation``, else push_cache), from the kit's folder ``root``."""
    import pytest

    # test IDs are always "conformance_tests/suite/test_<family>.py::...", wherever the kit is installed
    try:
        argv = pytest_argv(root, [*args, *_explore_seed(args)])
        ret = int(pytest.main(argv, plugins=[result, _one_line_usage()]))
    except KeyboardInterrupt:
        print("push-cache-kit: interrupted before the run could report", file=sys.stderr)
        return exitcodes.PARTIAL if result.code is None else result.code
    except Exception:  # noqa: BLE001 - anything escaping pytest is the kit's fault, never a verdict
        import traceback

        traceback.print_exc()
        print("push-cache-kit: internal error", file=sys.stderr)
        return exitcodes.INTERNAL_ERROR
    return kit_exit_code(ret, result.code, result.internal_error)


def kit_exit_code(pytest_code: int, session_code: int | None, internal_error: bool = False) -> int:
    """The kit's exit code from pytest's return value and what the plugin decided (None: no session ended)."""
    import pytest

    if internal_error or (pytest_code == pytest.ExitCode.INTERNAL_ERROR and session_code != exitcodes.ADAPTER_ERROR):
        return exitcodes.INTERNAL_ERROR
    if session_code is not None:
        return session_code
    by_pytest_code: dict[int, int] = {
        int(pytest.ExitCode.OK): 0,  # --help, --version, --collect-only: no session was judged
        int(pytest.ExitCode.TESTS_FAILED): exitcodes.NOT_CERTIFIED,
        int(pytest.ExitCode.INTERRUPTED): exitcodes.PARTIAL,
        int(pytest.ExitCode.USAGE_ERROR): exitcodes.USAGE_ERROR,
        int(pytest.ExitCode.NO_TESTS_COLLECTED): exitcodes.PARTIAL,
    }
    return by_pytest_code.get(int(pytest_code), exitcodes.INTERNAL_ERROR)


def certify_help() -> int:
    """``certify --help``: the kit's own options and exit codes first, then pytest's options."""
    import pytest

    from .cli.options import OPTIONS

    parser = argparse.ArgumentParser(
        prog="python -m conformance_tests certify",
        usage="%(prog)s [kit options] [pytest options]",
        description="Certify a backend: run the conformance suite under pytest for each operation of the "
                    "transfer family with a packaged spec (--operation NAME: that one alone) and write push_cache's "
                    "reports to reports/<backend>/, each other operation's to reports/<backend>@<operation>/ and "
                    "family.json to reports/<backend>@family/ (a partial run writes beside them, in .partial/).",
        epilog="exit codes:\n" + exitcodes.text_table()
               + "\nEvery other option is pytest's (listed below); -k, -m, --deselect, --clauses, --shard, test paths "
                 "or a custom --spec make the run PARTIAL. --reruns N (pytest-rerunfailures) runs a failed test up to N "
                 "times more: one that then passes is flaky, and a flaky must or may test blocks certification as a "
                 "failure does.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
    )
    group = parser.add_argument_group("push_cache conformance (the kit's options)")
    for flags, kwargs in OPTIONS:
        group.add_argument(*flags, **kwargs)
    sys.stdout.write(parser.format_help())
    sys.stdout.write("\n" + "=" * 30 + " pytest options (certify forwards them) " + "=" * 30 + "\n\n")
    sys.stdout.flush()
    pytest.main([*CERTIFY_ARGS, "--help"])
    return 0


def _explore_seed(args: Sequence[str]) -> list[str]:
    """An explore run without --hypothesis-seed gets a random one, so the report records how to replay it."""
    import secrets

    explore = any(a == "explore" or a == "--hypothesis-profile=explore" for a in args) and any(
        a.startswith("--hypothesis-profile") for a in args)
    seeded = any(a.startswith("--hypothesis-seed") for a in args)
    return [f"--hypothesis-seed={secrets.randbelow(2**32)}"] if explore and not seeded else []


def _delegate(module: str, args: Sequence[str]) -> int:
    import importlib

    return int(importlib.import_module(module).main(list(args)) or 0)


def exit_now_if_threads_linger(code: int, grace: float = THREAD_GRACE_S) -> None:
    """End the process with ``code`` when a backend left non-daemon threads behind (they would keep it alive).

    Only the certify program does this, after the reports are written and stdout/stderr are flushed.
    """
    deadline = time.monotonic() + grace
    me = threading.current_thread()
    for t in threading.enumerate():
        if t is not me and not t.daemon:
            t.join(max(0.0, deadline - time.monotonic()))
    left = [t.name for t in threading.enumerate() if t is not me and not t.daemon and t.is_alive()]
    if not left:
        return
    print(f"push-cache-kit: the backend left {len(left)} non-daemon thread(s) running ({', '.join(left[:5])}); "
          f"exiting with {code} without waiting for them", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit skips the exit functions, and whatever they close (another host's ssh client and its remote python)
    # would outlive the run: run them first, on a thread of their own, so a hanging one cannot keep the process
    ender = threading.Thread(target=atexit._run_exitfuncs, name="exit functions", daemon=True)
    ender.start()
    ender.join(EXIT_FUNCTIONS_S)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


#: the subcommands other modules hold: each module's ``main(argv)`` parses its own arguments (one line for a bad one)
DELEGATES = {"clauses": "conformance_tests.cli.clauses", "report": "conformance_tests.report.cli",
             "site": "conformance_tests.report.site"}


def front_parser() -> argparse.ArgumentParser:
    """The front door's parser: its help lists the subcommands (each parses its own arguments)."""
    parser = UsageParser(
        prog="push-cache-kit",
        description="Conformance kit for LLM-DataDist CacheManager.push_cache.",
        epilog="certify forwards every further argument to pytest (e.g. --backend, --spec-version, "
               "--expectations, --strict-expectations, --report-dir, -k, -x); `certify --help` lists the kit's "
               "options and exit codes first.",
    )
    sub = parser.add_subparsers(dest="command", metavar="{certify,clauses,report,site}")
    sub.add_parser("certify", help="certify a backend (runs the conformance suite under pytest)", add_help=False)
    sub.add_parser("clauses", help="list or show spec clauses", add_help=False)
    sub.add_parser("report", help="render, summarize or diff reports", add_help=False)
    sub.add_parser("site", help="build a static results site from report.json files", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    program = argv is None  # run as a program (python -m / the console script), not called from Python
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        front_parser().print_help()
        return 0 if argv else exitcodes.USAGE_ERROR
    command, rest = argv[0], argv[1:]
    try:
        if command == "certify":
            code = certify(rest)
            if program:
                exit_now_if_threads_linger(code)
            return code
        if command in DELEGATES:
            return _delegate(DELEGATES[command], rest)
    except ModuleNotFoundError as exc:  # the kit or a dependency is not installed in this Python
        return _missing(exc.name or str(exc))
    except BrokenPipeError:  # `push-cache-kit clauses | head`: the reader left; nothing more to say to it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    print(f"push-cache-kit: unknown command {command!r} (choose certify, clauses, report or site)", file=sys.stderr)
    return exitcodes.USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())

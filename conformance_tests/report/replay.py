"""Which of a report's recorded ``certify`` arguments ``report verify`` runs again, and which backend that imports.

A report is a file anyone can edit, and verification runs what it records; so verification re-runs only options
certify itself defines (:data:`conformance_tests.cli.options.OPTIONS`, as ``certify --help`` lists them) and the few
pytest options whose effect a report records (:data:`PYTEST_REPLAYED`: the selection, hypothesis's profile and
seed, reruns, workers, verbosity), each value checked. Anything else is refused, one line, before anything runs:
a plugin (``-p`` other than ``-p no:NAME``), an ini file or an override (``-c``, ``-o``), a rootdir, an output
file (``--junitxml``), a test path, an ``@argfile``, an option this kit does not know. Where the run's reports go
verification chooses itself (:data:`CHOSEN_BY_VERIFY` are dropped); a backend *file* is imported only from the
folder verification runs in, and :func:`backend_origin` says where the backend comes from without importing it.
"""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from ..cli.options import OPTIONS, without_options
from ..resolution import BackendError, available_backends, backend_target, is_file_target, split_target
from ..running.profiles import NAMES as PROFILE_NAMES
from ..selecting.shards import parse_shard
from .schema import ReportError

#: pytest's spelling of "do not load plugin NAME": the one form of -p that loads nothing
NO_PLUGIN = "no:"
#: how pytest (and argparse, for fromfile_prefix_chars) marks an argument file
ARGFILE_PREFIX = "@"
#: the kit's options whose value is where the run writes: verification writes into a folder of its own choosing
CHOSEN_BY_VERIFY = ("--report-dir", "--no-reports")
#: pytest-xdist's worker counts other than a number
WORKER_WORDS = ("auto", "logical")


def _plugin_off(value: str) -> str:
    if not value.startswith(NO_PLUGIN) or not value[len(NO_PLUGIN):]:
        raise argparse.ArgumentTypeError(f"'-p {value}' loads a plugin (only -p {NO_PLUGIN}NAME, which loads none, "
                                         "is re-run)")
    return value


def _workers(value: str) -> str:
    if value in WORKER_WORDS or (value.isdigit() and int(value) >= 0):
        return value
    raise argparse.ArgumentTypeError(f"-n {value!r}: a number of workers or one of {', '.join(WORKER_WORDS)}")


def _count(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value!r} is negative")
    return number


#: pytest's options (its own and its plugins') that verification re-runs, as (flags, argparse keyword arguments)
#: like OPTIONS; each changes which tests run or how hypothesis draws, which the report records, or only how fast
#: or how loud the run is. tests/kit/test_hostile_reports.py checks each against `certify --help`.
PYTEST_REPLAYED: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("-k",), dict(dest="keyword")),
    (("-m",), dict(dest="markexpr")),
    (("--deselect",), dict(action="append")),
    (("--hypothesis-profile",), dict(choices=PROFILE_NAMES)),
    (("--hypothesis-seed",), dict()),
    (("--reruns",), dict(type=_count)),
    (("-x", "--exitfirst"), dict(action="store_true")),
    (("--maxfail",), dict(type=_count)),
    (("-n", "--numprocesses"), dict(type=_workers)),
    (("--timeout",), dict(type=float)),
    (("-q", "--quiet"), dict(action="count")),
    (("-v", "--verbose"), dict(action="count")),
    (("-p",), dict(dest="plugins", action="append", type=_plugin_off)),
]


class _Refusing(argparse.ArgumentParser):
    """A parser whose every complaint is a ReportError (argparse would print usage and exit)."""

    def error(self, message: str) -> NoReturn:
        raise ReportError(message)


def replay_parser() -> argparse.ArgumentParser:
    """The options verification re-runs: certify's own, then PYTEST_REPLAYED; no positional argument."""
    parser = _Refusing(prog="certify", add_help=False, allow_abbrev=False)
    for flags, kwargs in [*OPTIONS, *PYTEST_REPLAYED]:
        parser.add_argument(*flags, **kwargs)
    return parser


def replayable(args: Sequence[str]) -> tuple[list[str], argparse.Namespace]:
    """The recorded arguments verification may run again (less CHOSEN_BY_VERIFY), and what they say; a one-line
    ReportError naming the first argument it will not run."""
    for arg in args:
        if arg.startswith(ARGFILE_PREFIX):
            raise ReportError(f"the report's certify arguments hold {arg!r}, an argument file: verify does not "
                              "read arguments from files")
    try:
        namespace, rest = replay_parser().parse_known_args(list(args))
    except ReportError as exc:
        raise ReportError(f"the report's certify arguments: {exc}; verify re-runs only certify's own options "
                          "and the selection, hypothesis, reruns and worker options of pytest") from None
    if rest:
        what = "a test path" if not rest[0].startswith("-") else "an option verify does not re-run"
        raise ReportError(f"the report's certify arguments hold {rest[0]!r}, {what}: verify re-runs only "
                          "certify's own options and the selection, hypothesis, reruns and worker options of pytest "
                          "(tests are chosen with --clauses, -k, -m or --deselect)")
    if namespace.shard is not None:  # certify's own option has no type of its own: the plugin parses it
        try:
            parse_shard(namespace.shard)
        except ValueError as exc:
            raise ReportError(f"the report's certify arguments: --shard {namespace.shard!r}: {exc}") from None
    return without_options(args, CHOSEN_BY_VERIFY), namespace


@dataclass(frozen=True)
class BackendOrigin:
    """Where the backend a re-run imports comes from, found without importing it."""

    named: str
    target: str
    origin: str

    def line(self) -> str:
        return f"verify: the re-run imports backend {self.named!r} ({self.target}) from {self.origin}"


def _module_origin(module: str) -> str:
    top = module.split(".")[0]
    try:
        found = importlib.util.find_spec(top)  # a top-level name: found, not run
    except (ImportError, ValueError):
        found = None
    if found is None:
        return f"module {module} in the working directory"
    where = found.origin or ", ".join(found.submodule_search_locations or []) or "an unknown place"
    return f"module {module}, package {top} at {where}"


def backend_origin(named: str, here: Path | None = None) -> BackendOrigin:
    """The backend ``named`` (a --backend value) as verification would import it; a ReportError when it cannot be
    found or is a file outside ``here`` (default: the working directory), which a report could name anywhere."""
    here = (here or Path.cwd()).resolve()
    try:
        target = backend_target(named)
    except BackendError as exc:
        raise ReportError(f"the report's backend cannot be found here: {exc}") from None
    module = split_target(target)[0]
    if not is_file_target(module):
        entry = available_backends().get(named)
        origin = _module_origin(module)
        return BackendOrigin(named, target, f"entry point {named!r}: {origin}" if entry else origin)
    path = Path(module).resolve()
    if not path.is_relative_to(here):
        raise ReportError(f"the report's backend file {path} is outside this folder ({here}): verify imports a "
                          "backend file only from the folder it runs in (run it where the certification ran)")
    return BackendOrigin(named, target, f"file {path}")

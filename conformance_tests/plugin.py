"""The pytest plugin that turns the generated suite into a certification run (``-p conformance_tests.plugin``;
the ``certify`` command loads it).

It registers the kit's options, and in ``pytest_configure`` makes the run state (:mod:`.startup`: the backend,
the spec and its release, the expectations file) and registers one plugin object per concern, each holding that
state: :class:`~.startup.Startup` (header, the backend's end), :class:`~.smoke.SmokeCheck`,
:class:`~.collection.Collection` (tests generated from the spec, levels, waivers, selection),
:class:`~.phases.TestPhases` (deadlines, outcomes, report rows) and :class:`~.finish.Finish` (report, exit
code, terminal summary). Tests get the run context from the ``run_context`` fixture; no module keeps run state.
"""

from __future__ import annotations

import pytest

from .cli.exitcodes import RunResult
from .cli.options import add_options
from .running import profiles  # noqa: F401 - registers the hypothesis profiles
from .running.context import RunContext
from .running.finish import Finish, restore_signals, terminate_as_interrupt
from .running.phases import TestPhases
from .running.smoke import SmokeCheck
from .running.startup import Startup, start_run
from .running.state import RunState
from .selecting.collection import FAMILY_MARK, Collection, ShardFilter
from .selecting.failed_from import FailedFrom

STATE = pytest.StashKey[RunState]()
#: what running the suite without this plugin says (the suite's conftest.py)
OUTSIDE_THE_PLUGIN = ("the push_cache suite runs through the kit: python -m conformance_tests certify "
                      "(or pytest -p conformance_tests.plugin --pyargs conformance_tests.suite)")


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def _skip_setup(config: pytest.Config) -> bool:
    opt = config.option
    return bool(getattr(opt, "help", False) or getattr(opt, "version", False)
                or getattr(opt, "markers", False) or getattr(opt, "showfixtures", False))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "clause(*ids): the spec clause IDs a test checks")
    config.addinivalue_line("markers", f"{FAMILY_MARK}(family): a suite test function that runs every clause of the "
                                       "family (parametrized by the plugin)")
    if _skip_setup(config):
        return
    # the caller's result object (the certify CLI passes one to pytest.main), else one of the run's own
    result = next((p for p in config.pluginmanager.get_plugins() if isinstance(p, RunResult)), RunResult())
    # SIGTERM and SIGHUP end the run as Ctrl-C does, from the start of the backend's process on
    signals = terminate_as_interrupt()
    failed_from = config.getoption("failed_from")
    try:
        rerun = FailedFrom.read(failed_from) if failed_from else None  # a bad file: before the backend starts
        state = start_run(config, result)
        concerns = [Startup(state), SmokeCheck(state), Collection(state), ShardFilter(state), TestPhases(state)]
        if rerun is not None:
            concerns.append(FailedFrom.for_run(state, failed_from, rerun))
    except BaseException:
        restore_signals(signals)
        raise
    config.stash[STATE] = state
    for concern in concerns:
        config.pluginmanager.register(concern, f"push_cache_{type(concern).__name__.lower()}")
    config.pluginmanager.register(Finish(state, signals), "push_cache_finish")


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """Every input is checked and the session has started: from here an interrupt ends the run with its report,
    so a family's run may start the next operation's and pass a signal on (cli/family_processes.py)."""
    state = session.config.stash.get(STATE, None)
    if state is not None:
        state.result.session_begun()


@pytest.fixture
def run_context(request: pytest.FixtureRequest) -> RunContext:
    """The run's context (backend, spec, release, deadlines, counters) for the suite's tests."""
    state = request.config.stash.get(STATE, None)
    if state is None:
        pytest.fail(OUTSIDE_THE_PLUGIN, pytrace=False)
    return state.run

"""The pytest plugin that turns the generated suite into a certification run.

Loaded with ``-p conformance_tests.plugin`` (the ``certify`` command does this).  It resolves the backend,
loads the spec and selects a release, runs a smoke check, attaches clause levels, applies the vendor's
expectations file (waivers) and capability skips, reports failing ``should`` tests as "incompatible" (through
``pytest_report_teststatus``: reported, not blocking), collects one report row per test, decides whether the
run was full or partial, writes the reports (a partial run beside the full report, never over it) and sets the
exit code (``conformance_tests/exitcodes.py``).
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import hashlib
import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from . import deadlines, exitcodes, profiles, session  # profiles: registers the hypothesis profiles
from . import session as _kit_session  # for hooks whose pytest argument is called ``session``
from .backend import (
    API_NAMES,
    IN_PROCESS_BY_DEFAULT,
    NODE_ATTRS,
    NODE_METHODS,
    BackendError,
    backend_capabilities,
    backend_target,
    missing_members,
    resolve_backend,
)
from .expectations import Expectations, ExpectationsError, load_expectations
from .finish import finish, full_folder, terminal_summary, uncovered
from .harness import HarnessError, World, deep_merge, describe_exception, diff_tensors, missing_capabilities
from .rows import PROPERTY as ROW_PROPERTY
from .rows import Rows, phase_outcome, plain
from .selection import WHY_CLAUSES, selection_problems

LEVEL_ORDER = ("must", "may", "should")  # strictest first
SMOKE_LIMIT_S = 60
#: the overall time budget of a run unless --max-time says otherwise (the reference certifies in about a minute)
DEFAULT_MAX_TIME_S = 3600.0
#: a test's deadline for backend calls, as a share of its pytest-timeout bound (the kit acts first)
DEADLINE_SHARE = 0.9

STATE = pytest.StashKey["State"]()
LEVEL = pytest.StashKey[str]()
CLAUSES = pytest.StashKey[tuple]()
EXPECTED = pytest.StashKey[str]()
WAIVER = pytest.StashKey[dict]()


#: the state of the run in progress, for hooks that get no config (pytest_runtest_logreport)
_ACTIVE: list[State | None] = [None]

#: what the last session decided, for the certify CLI (lives in exitcodes.py, which imports nothing heavy)
LAST_RUN = exitcodes.LAST_RUN


class State:
    """Everything the plugin knows about this run."""

    def __init__(self) -> None:
        self.ctx: session.RunContext | None = None
        self.expectations: Expectations | None = None
        self.strict = False
        self.profile = profiles.DEFAULT
        self.seed: Any = None
        self.started = _dt.datetime.now(_dt.UTC)
        self.t0 = time.monotonic()
        self.rows = Rows()
        self.covered: set[str] = set()
        self.full_selection = True
        self.report: dict[str, Any] | None = None
        self.report_paths: dict[str, str] = {}
        self.report_problem: str | None = None
        #: under pytest-xdist the controller learns the collection from the workers (see _worker_collection)
        self.collection_known = True
        # full or partial
        self.own_deselected: dict[str, str] = {}  # node id -> why (the release filter is not "left out")
        self.release_filtered: set[str] = set()
        self.deselected: list[str] = []  # by pytest's -k/-m/--deselect (or another plugin)
        self.selected: list[str] = []
        self.packaged_sha256: str | None = None
        self.report_dir: Path | None = None
        self.full_dir: Path | None = None
        self.kept_full: Path | None = None
        self.exit_code: int | None = None
        self.is_worker = False
        self.isolation = "off"
        self.max_time = DEFAULT_MAX_TIME_S
        self.out_of_time: str | None = None


# ------------------------------------------------------------------------------------------------ options


#: The kit's options, as (flags, argparse keyword arguments): pytest_addoption registers them and
#: ``certify --help`` shows them first.
OPTIONS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("--backend",), dict(default=None, metavar="SPEC",
                          help="backend to certify: package.module[:attr] or an entry-point name "
                               "(default: $PUSH_CACHE_BACKEND, else 'reference')")),
    (("--spec",), dict(dest="pc_spec", default=None, metavar="PATH",
                       help="spec YAML to certify against (default: the packaged push_cache.yaml; any other "
                            "file makes the run PARTIAL unless its sha256 equals the packaged one's)")),
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
                                 "'auto' (default) isolates every backend except the in-process reference")),
    (("--max-time",), dict(dest="max_time", type=float, default=DEFAULT_MAX_TIME_S, metavar="SECONDS",
                           help=f"overall time budget (default {DEFAULT_MAX_TIME_S:.0f}s): once spent, the tests "
                                "not yet started are recorded as not run and the run is PARTIAL (0: no budget)")),
    (("--clauses",), dict(default="", metavar="GLOBS",
                          help="run only the tests of clauses matching these comma-separated globs "
                               "(e.g. 'push_cache.data.*,push_cache.safety.guard_bytes'); the run is PARTIAL")),
]


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("push_cache", "push_cache conformance (the kit's options)", after="general")
    for flags, kwargs in OPTIONS:
        g.addoption(*flags, **kwargs)


def _skip_setup(config: pytest.Config) -> bool:
    opt = config.option
    return bool(getattr(opt, "help", False) or getattr(opt, "version", False)
                or getattr(opt, "markers", False) or getattr(opt, "showfixtures", False))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "clause(*ids): the spec clause IDs a test checks")
    LAST_RUN.collection_errors.clear()
    LAST_RUN.interrupts.clear()
    if _skip_setup(config):
        return
    state = State()
    config.stash[STATE] = state
    state.is_worker = _is_worker(config)
    _ACTIVE[0] = state

    profile = config.getoption("hypothesis_profile", None)
    if profile:
        try:
            settings.get_profile(profile)
        except Exception:  # noqa: BLE001
            raise pytest.UsageError(
                f"--hypothesis-profile {profile}: unknown profile (use {', '.join(profiles.NAMES[:-1])} or "
                f"{profiles.NAMES[-1]})"
            ) from None
        state.profile = profile
    else:
        settings.load_profile(profiles.DEFAULT)
    state.seed = config.getoption("hypothesis_seed", None)

    try:
        backend, target, state.isolation = _open_backend(config)
        caps = backend_capabilities(backend)
    except BackendError as exc:
        raise pytest.UsageError(str(exc)) from None
    state.max_time = float(config.getoption("max_time") or 0.0)
    if state.max_time < 0:
        raise pytest.UsageError(f"--max-time {state.max_time:g}: a number of seconds, 0 for no budget")

    from .spec import SpecError, load_spec

    try:
        spec = load_spec(config.getoption("pc_spec"))
    except SpecError as exc:
        raise pytest.UsageError(f"spec: {exc}") from None

    declared = caps.get("spec_versions") or []
    release = config.getoption("spec_version")
    if release is not None:
        if release not in spec.releases:
            raise pytest.UsageError(
                f"--spec-version {release}: not a release of the spec; known: {', '.join(spec.releases)}"
            )
        if declared and release not in declared:
            raise pytest.UsageError(
                f"--spec-version {release}: backend {getattr(backend, 'name', target)!r} does not declare it "
                f"(capabilities spec_versions: {', '.join(map(str, declared))})"
            )
    else:
        release = session.newest_release(spec, declared)

    state.strict = bool(config.getoption("strict_expectations"))
    path = config.getoption("expectations")
    if path and state.strict:
        raise pytest.UsageError(
            f"--strict-expectations certifies without waivers; remove --expectations {path}")
    if path:
        try:
            state.expectations = load_expectations(path)
        except ExpectationsError as exc:
            raise pytest.UsageError(str(exc)) from None

    ctx = session.RunContext(
        backend=backend,
        backend_spec=target,
        caps=caps,
        spec=spec,
        release=release,
        selected=spec.for_release(release),
        options={"timeout": config.getoption("timeout", None)},
    )
    state.ctx = ctx
    session.set_current(ctx)
    state.packaged_sha256 = _packaged_sha256()
    if not config.getoption("no_reports") and not config.option.collectonly and not _is_worker(config):
        from .report.folders import check_writable

        full_dir = full_folder(config, backend)
        problem = check_writable(full_dir)
        if problem:
            raise pytest.UsageError(f"reports cannot be written: {problem} (use --report-dir DIR or --no-reports)")
        state.full_dir = full_dir


def _open_backend(config: pytest.Config) -> tuple[Any, str, str]:
    """(backend, target, isolation): the backend in its own process, or imported here (--isolation)."""
    from .isolation import IsolatedBackend, StartError

    target = backend_target(config.getoption("backend"))
    mode = config.getoption("isolation")
    if mode == "auto":
        mode = "off" if target in IN_PROCESS_BY_DEFAULT else "process"
    if mode == "off":
        backend, target = resolve_backend(target)
        return backend, target, mode
    try:
        backend = IsolatedBackend(target)
    except StartError as exc:
        raise BackendError(f"backend '{target}': {exc}") from None
    return backend, backend.target, mode


def pytest_unconfigure(config: pytest.Config) -> None:
    if STATE in config.stash:
        state = config.stash[STATE]
        if state.ctx is not None and callable(getattr(state.ctx.backend, "close", None)) and state.isolation == "process":
            state.ctx.backend.close()
        session.set_current(None)
        _ACTIVE[0] = None


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")  # a pytest-xdist worker: the controller writes the reports


def _packaged_sha256() -> str | None:
    from .spec import default_spec_path

    try:
        return hashlib.sha256(default_spec_path().read_bytes()).hexdigest()
    except OSError:
        return None


def _state(config: pytest.Config) -> State | None:
    return config.stash.get(STATE, None)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = _state(config)
    if state is None or state.ctx is None:
        return None
    ctx = state.ctx
    b = ctx.backend
    exp = state.expectations
    caps = json.dumps(ctx.caps, sort_keys=True, default=str)
    return [
        f"push_cache backend: {getattr(b, 'name', '?')} {getattr(b, 'version', '?')} ({ctx.backend_spec}; "
        + ("in its own process" if state.isolation == "process" else "in this process") + ")",
        f"push_cache capabilities: {caps}",
        f"push_cache spec: release {ctx.release} of {ctx.spec.version} "
        f"(sha256 {ctx.spec.sha256[:12]}, {ctx.spec.path})",
        f"push_cache hypothesis: profile {state.profile}, seed "
        f"{state.seed if state.seed is not None else ('derandomized' if state.profile == 'certify' else 'random')}",
        "push_cache expectations: "
        + (f"{exp.path} (sha256 {(exp.sha256 or '')[:12]}, {len(exp.active)} active, {len(exp.expired)} expired)"
           if exp else ("none (--strict-expectations)" if state.strict else "none")),
    ]


# ------------------------------------------------------------------------------------------------ smoke check


def smoke_check(ctx: session.RunContext, limit: float = SMOKE_LIMIT_S) -> str | None:
    """One valid push on the baseline scenario; returns why the adapter looks broken, or None.

    It tells a broken adapter apart from a non-conforming push_cache: the nodes must have the protocol
    members, ``read_tensor`` must return what ``write_tensor`` wrote, a valid push must return, and the
    destination must read back changed afterwards.  Which bytes landed where is left to the data clauses,
    so a push that is merely wrong is reported against the clause it breaks.
    """
    scenario = deep_merge(ctx.spec.scenario, {})
    placements = ctx.caps.get("placements")
    if placements:
        for side in ("src", "dst"):
            if scenario[side].get("placement") not in placements:
                scenario[side]["placement"] = list(placements)[0]
    world = World(ctx.backend, scenario, backend_spec=ctx.backend_spec, caps=ctx.caps, types=ctx.spec.types,
                  params=ctx.params, title="smoke check")
    # an isolated backend's every call is bounded (deadlines.DEFAULT_BOUND_S outside a test); the push is
    # bounded by ``limit`` in either mode
    try:
        try:
            world.open()
        except HarnessError as exc:
            return str(exc)
        for node_name, node in (("local", world.local), ("remote", world.remote)):
            missing = missing_members(node, NODE_ATTRS, NODE_METHODS)
            if missing:
                return f"node {node_name} lacks protocol members: {', '.join(missing)}"
        missing_api = [n for n in API_NAMES if not hasattr(world.api, n)]
        if missing_api:
            return f"node.api lacks {', '.join(missing_api)}"
        roundtrip = diff_tensors(world.src_data, world.read_src(), "src")
        roundtrip += diff_tensors(world.dst_before, world.read_dst(), "dst")
        if roundtrip:
            return f"read_tensor does not return what write_tensor wrote: {roundtrip[0]}"
        call = world.call({})
        outcome = world.push(call, bound=limit)
        if outcome.hung:
            return f"a valid push did not return within {limit:.0f}s: {call.code}"
        if outcome.exc is not None:
            return f"a valid push raised {describe_exception(outcome.exc)}: {call.code}"
        after = world.read_dst()
        if len(after) == len(world.dst_before) and all(
            a.size == b.size and bool((a == b).all()) for a, b in zip(after, world.dst_before, strict=True)
        ):
            return f"a valid push returned but the destination reads back unchanged: {call.code}"
        return None
    except Exception as exc:  # noqa: BLE001 - anything here is an adapter problem
        return f"{describe_exception(exc)} during the smoke check"
    finally:
        world.close()
        session.RECORDER.reset()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _kit_session.COUNTERS.reset()
    state = _state(session.config)
    if state is None or state.ctx is None or session.config.option.collectonly:
        return
    if session.config.pluginmanager.has_plugin("dsession"):
        state.collection_known = False  # a pytest-xdist controller: the workers collect (pytest_testnodedown)
    why = smoke_check(state.ctx)
    _kit_session.COUNTERS.reset()  # the smoke check is not part of the run's figures
    if not state.collection_known and state.isolation == "process":
        state.ctx.backend.close()  # a pytest-xdist controller calls the backend no more: its workers do
    if why is not None:
        LAST_RUN.code = exitcodes.ADAPTER_ERROR
        pytest.exit(f"adapter error: {why}", returncode=exitcodes.ADAPTER_ERROR)


# ------------------------------------------------------------------------------------------------ collection


def clause_ids(item: pytest.Item) -> tuple[str, ...]:
    ids: list[str] = []
    for mark in item.iter_markers("clause"):
        ids += [str(a) for a in mark.args]
    return tuple(dict.fromkeys(ids))


def strictest(levels: Iterable[str]) -> str:
    present = set(levels)
    for level in LEVEL_ORDER:
        if level in present:
            return level
    return "must"


def _test_names(item: pytest.Item) -> list[str]:
    nodeid = item.nodeid
    names = [nodeid, item.name]
    if "::" in nodeid:
        names.append(nodeid.split("::", 1)[1])
    return names


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = _state(config)
    if state is None or state.ctx is None:
        return
    ctx = state.ctx
    selected = {c.id: c for c in ctx.selected.clauses}
    known = {c.id for c in ctx.spec.clauses}
    globs = [g for g in config.getoption("clauses").split(",") if g]
    keep, drop = [], []
    for item in items:
        ids = clause_ids(item)
        if ids and all(cid in known and cid not in selected for cid in ids):
            drop.append(item)  # every clause it checks is outside the selected release
            state.release_filtered.add(item.nodeid)
            continue
        if globs and not any(fnmatch.fnmatchcase(cid, g) for cid in ids for g in globs):
            drop.append(item)  # not asked for with --clauses
            state.own_deselected[item.nodeid] = WHY_CLAUSES
            continue
        keep.append(item)
        state.covered.update(ids)
        item.stash[CLAUSES] = ids
        level = strictest(selected[c].level for c in ids if c in selected)
        item.stash[LEVEL] = level
        item.user_properties.append(("level", level))
        item.user_properties.append(("clauses", ",".join(ids)))
        expected = "pass"
        requires = [r for c in ids if c in selected for r in selected[c].requires]
        missing = missing_capabilities(ctx.caps, requires)
        if missing:
            item.add_marker(pytest.mark.skip(reason="not supported: " + ", ".join(dict.fromkeys(missing))))
        if state.expectations is not None:
            entry = state.expectations.lookup(ids, _test_names(item), record=None)  # hits are counted where the reports arrive
            if entry is not None:
                reason = f"expectations: {entry.reason}" + (f" ({entry.link})" if entry.link else "")
                item.stash[WAIVER] = entry.waiver()
                if entry.outcome == "skip":
                    item.add_marker(pytest.mark.skip(reason=reason))
                    expected = "skip"
                else:
                    item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
                    expected = "xfail"
        item.stash[EXPECTED] = expected
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_deselected(items: list[pytest.Item]) -> None:
    if not items:
        return
    state = _state(items[0].config)
    if state is None:
        return
    for item in items:
        if item.nodeid not in state.release_filtered and item.nodeid not in state.own_deselected:
            state.deselected.append(item.nodeid)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        LAST_RUN.collection_errors.append(report.nodeid or "<collection>")


def pytest_collection_finish(session: pytest.Session) -> None:
    state = _state(session.config)
    if state is None:
        return
    opt = session.config.option
    if opt.collectonly and state.ctx is not None:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        missing = uncovered(state)
        if tr is not None:
            tr.write_line("uncovered clauses: " + (", ".join(missing) if missing else "none"))
    state.selected = [item.nodeid for item in session.items]
    _judge_selection(session.config, state)


def _judge_selection(config: pytest.Config, state: State) -> None:
    state.full_selection = not (selection_problems(config) or state.deselected
                                or state.own_deselected or LAST_RUN.collection_errors)


def _worker_collection(state: State) -> dict[str, Any]:
    """What a pytest-xdist worker's collection decided, for the controller (which does not collect)."""
    return {"selected": state.selected, "deselected": state.deselected, "own_deselected": state.own_deselected,
            "release_filtered": sorted(state.release_filtered), "covered": sorted(state.covered),
            "collection_errors": list(LAST_RUN.collection_errors)}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    # every worker collects the same tests; the first one to finish tells the controller what was selected
    state = _ACTIVE[0]
    got = getattr(node, "workeroutput", {}).get("push_cache_collection")
    if state is None or got is None or state.collection_known:
        return
    state.selected = list(got["selected"])
    state.deselected = list(got["deselected"])
    state.own_deselected = dict(got["own_deselected"])
    state.release_filtered = set(got["release_filtered"])
    state.covered = set(got["covered"])
    LAST_RUN.collection_errors[:] = list(got["collection_errors"])
    state.collection_known = True
    _judge_selection(node.config, state)


def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    text = str(excinfo.value).strip()
    LAST_RUN.interrupts.append(f"{excinfo.typename}: {text}" if text else excinfo.typename)


def pytest_internalerror(excrepr: Any, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    LAST_RUN.internal_error = True


# ------------------------------------------------------------------------------------------------ outcomes


def pytest_runtest_setup(item: pytest.Item) -> None:
    session.RECORDER.reset()
    session.COUNTERS.reset()  # each test's teardown report carries what it did (rows.py)
    state = _state(item.config)
    if state is None or state.ctx is None:
        return
    deadlines.start_test(test_timeout(item) * DEADLINE_SHARE)
    if state.isolation == "process":
        _revive(state)
    clause_ids: tuple[str, ...] = item.stash.get(CLAUSES, ())
    problem = traceability_problem(clause_ids, {c.id for c in state.ctx.spec.clauses})
    if problem:
        pytest.fail(f"traceability: {item.nodeid} {problem}", pytrace=False)


def test_timeout(item: pytest.Item) -> float:
    """The test's pytest-timeout bound (its ``timeout`` mark, else --timeout), 0 when it has none."""
    mark = item.get_closest_marker("timeout")
    value = mark.args[0] if mark is not None and mark.args else item.config.getoption("timeout", None)
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def _revive(state: State) -> None:
    """A new backend process when the last test lost it (crashed, or killed for hanging)."""
    from .isolation import StartError

    assert state.ctx is not None
    try:
        if state.ctx.backend.revive():
            session.COUNTERS.restarts += 1
    except StartError as exc:
        pytest.fail(f"the backend's process could not be restarted: {exc}", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    yield
    deadlines.end_test()
    state = _state(item.config)
    if state is None or not state.max_time or state.out_of_time:
        return
    spent = time.monotonic() - state.t0
    if spent >= state.max_time:
        # the test that ran out the budget has finished; the ones not started are recorded as not run
        state.out_of_time = f"--max-time {state.max_time:g}s spent ({spent:.0f}s)"
        item.session.shouldstop = state.out_of_time


def traceability_problem(clause_ids: Iterable[str], known: set[str]) -> str | None:
    """Why a test breaks traceability (it names no clause, or a clause the spec lacks), or None."""
    ids = list(clause_ids)
    if not ids:
        return "names no spec clause (mark it with @pytest.mark.clause(<id>))"
    unknown = [c for c in ids if c not in known]
    if unknown:
        return "names clause(s) the spec does not have: " + ", ".join(unknown)
    return None


def _message(call: pytest.CallInfo[Any] | None, rep: pytest.TestReport) -> str:
    if call is not None and call.excinfo is not None:
        exc = call.excinfo.value
        text = str(exc)
        if isinstance(exc, AssertionError) or type(exc).__name__ in ("Failed", "Skipped", "XFailed"):
            text = getattr(exc, "msg", None) or text
        else:
            text = f"{type(exc).__name__}: {text}"
        notes = getattr(exc, "__notes__", None) or []
        if notes:
            text += "\n" + "\n".join(str(n) for n in notes)
        return text[:8000]
    return (rep.longreprtext or "")[:8000]


def _hypothesis_info(item: pytest.Item, message: str, state: State) -> dict[str, Any] | None:
    obj = getattr(item, "obj", None)
    if not getattr(obj, "is_hypothesis_test", False):
        return None
    example = None
    lines = message.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(("Falsifying example", "Failing test case")):
            example = "\n".join(lines[i:]).strip()
            break
    return {"example": example, "seed": state.seed, "profile": state.profile}


def _params(item: pytest.Item) -> dict[str, Any]:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return {}
    out: dict[str, Any] = {}
    for name, value in callspec.params.items():
        if hasattr(value, "id") and hasattr(value, "level") and hasattr(value, "family"):
            out[name] = value.id
        elif hasattr(value, "args") and hasattr(value, "name") and hasattr(value, "scenario"):
            out[name] = {"name": value.name, "args": value.args, "scenario": value.scenario or None}
        elif isinstance(value, (str, int, float, bool, type(None))):
            out[name] = value
        else:
            out[name] = repr(value)
    return out


def _meta(item: pytest.Item) -> dict[str, Any]:
    """What a row knows about its test before it runs (carried in every report, see rows.py)."""
    return plain({
        "clauses": list(item.stash.get(CLAUSES, clause_ids(item))),
        "level": item.stash.get(LEVEL, "must"),
        "params": _params(item),
        "expected": item.stash.get(EXPECTED, "pass"),
        "waiver": item.stash.get(WAIVER, None),
    })


def _report_level(report: pytest.TestReport) -> str | None:
    for name, value in getattr(report, "user_properties", None) or []:
        if name == "level":
            return str(value)
    return None


def is_setup_error(report: pytest.TestReport) -> bool:
    """The scenario could not be built or observed (a HarnessError): an error, never a verdict."""
    return any(name == "setup_error" for name, _ in getattr(report, "user_properties", None) or [])


def is_incompatible(report: pytest.TestReport) -> bool:
    """A should-level test whose check failed: reported as "incompatible", never as a failure."""
    return (report.when == "call" and report.failed and not hasattr(report, "wasxfail")
            and _report_level(report) == "should" and not is_setup_error(report))


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    if isinstance(report, pytest.TestReport) and report.when == "call" and report.failed and is_setup_error(report):
        return "error", "E", ("ERROR", {"red": True})
    if isinstance(report, pytest.TestReport) and is_incompatible(report):
        return "incompatible", "I", ("INCOMPATIBLE", {"yellow": True})
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    outcome = yield
    rep: pytest.TestReport = outcome.get_result()
    state = _state(item.config)
    if state is None or state.ctx is None:
        return
    if rep.failed and rep.when == "call" and call.excinfo is not None and call.excinfo.errisinstance(HarnessError):
        # a new list: the report's list is the item's, shared with the other phases
        rep.user_properties = [*rep.user_properties, ("setup_error", str(getattr(call.excinfo.value, "step", "")))]
    level = item.stash.get(LEVEL, "must")
    message = _message(call, rep) if rep.failed or hasattr(rep, "wasxfail") else None
    result: dict[str, Any] = {}
    result["outcome"], result["message"] = phase_outcome(rep, level, message, is_setup_error(rep))
    if result["outcome"] in ("failed", "incompatible", "xfailed", "error"):
        world = _kit_session.RECORDER.world
        if world is not None:
            checked: tuple[str, ...] = item.stash.get(CLAUSES, ())
            ids = ", ".join(checked)
            result["repro"] = world.repro(f"Reproduce {item.name} ({ids}) on backend {state.ctx.backend_spec}")
        if result["outcome"] != "error":
            result["hypothesis"] = _hypothesis_info(item, result["message"] or "", state)
    data: dict[str, Any] = {"meta": _meta(item), "result": plain(result)}
    if rep.when == "teardown":
        counters = _kit_session.COUNTERS
        data["counts"] = {"push_calls": counters.push_calls, "layouts": sorted(counters.layouts),
                          "restarts": counters.restarts}
    rep.user_properties = [*rep.user_properties, (ROW_PROPERTY, data)]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # where the reports arrive (the serial process, or the pytest-xdist controller): one row per test
    state = _ACTIVE[0]
    if state is None or state.ctx is None or state.is_worker:
        return
    row = state.rows.add(report)
    waiver = row.get("waiver")
    if report.when == "setup" and waiver and state.expectations is not None:
        state.expectations.entries[int(waiver["entry"])].hits.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = _state(config)
    if state is None or state.ctx is None or config.option.collectonly:
        return
    if state.is_worker:
        config.workeroutput["push_cache_collection"] = _worker_collection(state)  # type: ignore[attr-defined]
        return
    try:
        finish(session, state, exitstatus)
    except Exception as exc:  # noqa: BLE001 - never let a kit bug read as a verdict
        import traceback

        traceback.print_exc()
        state.report_problem = f"the kit failed while finishing the run: {type(exc).__name__}: {exc}"
        LAST_RUN.internal_error = True
        state.exit_code = LAST_RUN.code = session.exitstatus = exitcodes.INTERNAL_ERROR




def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    terminal_summary(terminalreporter, config, _state(config))

"""The pytest plugin that turns the generated suite into a certification run.

Loaded with ``-p conformance_tests.plugin`` (the ``certify`` command does this).  It resolves the backend,
loads the spec and selects a release, runs a smoke check, attaches clause levels, applies the vendor's
expectations file and capability skips, turns failing ``should`` tests into "incompatible" (reported, not
blocking), collects one report row per test and writes the reports at the end.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import os
import platform
import signal
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

from . import session
from .backend import (
    API_NAMES,
    NODE_ATTRS,
    NODE_METHODS,
    BackendError,
    backend_capabilities,
    missing_members,
    resolve_backend,
)
from .expectations import Expectations, ExpectationsError, load_expectations
from .harness import HarnessError, World, deep_merge, describe_exception, diff_tensors, missing_capabilities

SUITE_NAME = "push-cache-conformance"
LEVEL_ORDER = ("must", "may", "should")  # strictest first
SMOKE_LIMIT_S = 60

settings.register_profile(
    "certify",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=40,
    print_blob=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "explore",
    derandomize=False,
    deadline=None,
    max_examples=400,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)

STATE = pytest.StashKey["State"]()
LEVEL = pytest.StashKey[str]()
CLAUSES = pytest.StashKey[tuple]()
EXPECTED = pytest.StashKey[str]()


class State:
    """Everything the plugin knows about this run."""

    def __init__(self) -> None:
        self.ctx: session.RunContext | None = None
        self.expectations: Expectations | None = None
        self.strict = False
        self.profile = "certify"
        self.seed: Any = None
        self.started = _dt.datetime.now(_dt.UTC)
        self.t0 = time.monotonic()
        self.rows: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        self.covered: set[str] = set()
        self.full_selection = True
        self.report: dict[str, Any] | None = None
        self.report_paths: dict[str, str] = {}
        self.report_problem: str | None = None
        self.unexpected_passes: list[str] = []


# ------------------------------------------------------------------------------------------------ options


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("push_cache", "push_cache conformance")
    g.addoption("--backend", default=None, metavar="SPEC",
                help="backend to certify: package.module[:attr] or an entry-point name "
                     "(default: $PUSH_CACHE_BACKEND, else 'reference')")
    g.addoption("--spec", dest="pc_spec", default=None, metavar="PATH",
                help="spec YAML to certify against (default: the packaged push_cache.yaml)")
    g.addoption("--spec-version", default=None, metavar="NAME",
                help="spec release to certify against (default: the newest release the backend declares)")
    g.addoption("--expectations", default=None, metavar="FILE",
                help="vendor expectations file (YAML: known failures as xfail/skip entries)")
    g.addoption("--report-dir", default=None, metavar="DIR",
                help="where reports are written (default: reports/<backend-name>/)")
    g.addoption("--no-reports", action="store_true", default=False, help="do not write report files")
    g.addoption("--clauses", default="", metavar="GLOBS",
                help="run only the tests of clauses matching these comma-separated globs "
                     "(e.g. 'push_cache.data.*,push_cache.safety.guard_bytes')")


def _skip_setup(config: pytest.Config) -> bool:
    opt = config.option
    return bool(getattr(opt, "help", False) or getattr(opt, "version", False)
                or getattr(opt, "markers", False) or getattr(opt, "showfixtures", False))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "clause(*ids): the spec clause IDs a test checks")
    if _skip_setup(config):
        return
    state = State()
    config.stash[STATE] = state

    profile = config.getoption("hypothesis_profile", None)
    if profile:
        try:
            settings.get_profile(profile)
        except Exception:  # noqa: BLE001
            raise pytest.UsageError(
                f"--hypothesis-profile {profile}: unknown profile (use certify or explore)"
            ) from None
        state.profile = profile
    else:
        settings.load_profile("certify")
    state.seed = config.getoption("hypothesis_seed", None)

    try:
        backend, target = resolve_backend(config.getoption("backend"))
        caps = backend_capabilities(backend)
    except BackendError as exc:
        raise pytest.UsageError(str(exc)) from None

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

    # pytest's own --strict (ini "strict") doubles as "certify without an expectations file"
    state.strict = _strict(config)
    path = config.getoption("expectations")
    if path and state.strict:
        raise pytest.UsageError(f"--strict certifies without expectations; remove --expectations {path}")
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


def pytest_unconfigure(config: pytest.Config) -> None:
    if STATE in config.stash:
        session.set_current(None)


def _strict(config: pytest.Config) -> bool:
    try:
        return bool(config.getini("strict"))
    except ValueError:  # pytest without the strict ini option
        return bool(getattr(config.option, "strict", False))


def summary_line(message: str | None) -> str:
    """The line of a failure message that says what went wrong (not the clause or the call)."""
    lines = [ln.strip() for ln in (message or "").splitlines() if ln.strip()]
    for ln in lines:
        if not ln.startswith(("clause ", "call:", "AssertionError: clause ")):
            return ln
    return lines[0] if lines else ""


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
        f"push_cache backend: {getattr(b, 'name', '?')} {getattr(b, 'version', '?')} ({ctx.backend_spec})",
        f"push_cache capabilities: {caps}",
        f"push_cache spec: release {ctx.release} of {ctx.spec.version} "
        f"(sha256 {ctx.spec.sha256[:12]}, {ctx.spec.path})",
        f"push_cache hypothesis: profile {state.profile}, seed "
        f"{state.seed if state.seed is not None else ('derandomized' if state.profile == 'certify' else 'random')}",
        "push_cache expectations: "
        + (f"{exp.path} (sha256 {(exp.sha256 or '')[:12]}, {len(exp.active)} active, {len(exp.expired)} expired)"
           if exp else ("none (--strict)" if state.strict else "none")),
    ]


# ------------------------------------------------------------------------------------------------ smoke check


class _SmokeTimeout(Exception):
    pass


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
    use_alarm = hasattr(signal, "SIGALRM") and _main_thread()
    old = None
    if use_alarm:
        def _alarm(signum: int, frame: Any) -> None:
            raise _SmokeTimeout()

        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(int(limit))
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
    except _SmokeTimeout:
        return f"the smoke check did not finish within {limit:.0f}s"
    except Exception as exc:  # noqa: BLE001 - anything here is an adapter problem
        return f"{describe_exception(exc)} during the smoke check"
    finally:
        if use_alarm:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        world.close()
        session.RECORDER.reset()


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    state = _state(session.config)
    if state is None or state.ctx is None or session.config.option.collectonly:
        return
    why = smoke_check(state.ctx)
    if why is not None:
        pytest.exit(f"adapter error: {why}", returncode=3)


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
            continue
        if globs and not any(fnmatch.fnmatchcase(cid, g) for cid in ids for g in globs):
            drop.append(item)  # not asked for with --clauses
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
            entry = state.expectations.lookup(ids, _test_names(item), record=item.nodeid)
            if entry is not None:
                reason = f"expectations: {entry.reason}" + (f" ({entry.link})" if entry.link else "")
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
    state.full_selection = not (getattr(opt, "clauses", "") or getattr(opt, "keyword", "") or getattr(opt, "markexpr", "") or getattr(opt, "lf", False)
                                or any("::" in a for a in session.config.args))


# ------------------------------------------------------------------------------------------------ outcomes


def pytest_runtest_setup(item: pytest.Item) -> None:
    session.RECORDER.reset()
    state = _state(item.config)
    if state is None or state.ctx is None:
        return
    clause_ids: tuple[str, ...] = item.stash.get(CLAUSES, ())
    problem = traceability_problem(clause_ids, {c.id for c in state.ctx.spec.clauses})
    if problem:
        pytest.fail(f"traceability: {item.nodeid} {problem}", pytrace=False)


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


def _row(state: State, item: pytest.Item) -> dict[str, Any]:
    row = state.rows.get(item.nodeid)
    if row is None:
        row = {
            "id": item.nodeid,
            "clauses": list(item.stash.get(CLAUSES, clause_ids(item))),
            "level": item.stash.get(LEVEL, "must"),
            "params": _params(item),
            "outcome": None,
            "expected": item.stash.get(EXPECTED, "pass"),
            "message": None,
            "repro": None,
            "hypothesis": None,
            "duration_s": 0.0,
        }
        state.rows[item.nodeid] = row
        state.order.append(item.nodeid)
    return row


def _skip_outcome(reason: str) -> str:
    return "not_supported" if reason.startswith("not supported") else "skipped"


def _skip_reason(rep: pytest.TestReport) -> str:
    if isinstance(rep.longrepr, tuple) and len(rep.longrepr) == 3:
        reason = str(rep.longrepr[2])
        return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
    return str(rep.longrepr or "")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    outcome = yield
    rep: pytest.TestReport = outcome.get_result()
    state = _state(item.config)
    if state is None or state.ctx is None:
        return
    row = _row(state, item)
    row["duration_s"] += float(rep.duration or 0.0)
    level = item.stash.get(LEVEL, "must")
    failed_message = _message(call, rep) if rep.failed or hasattr(rep, "wasxfail") else None

    if rep.failed and rep.when == "call" and level == "should" and not hasattr(rep, "wasxfail"):
        rep.outcome = "skipped"
        rep.wasxfail = "incompatible: " + (summary_line(failed_message) or "should-level check failed")
        row["outcome"] = "incompatible"
        row["message"] = failed_message
    elif rep.when == "setup":
        if rep.failed:
            row["outcome"], row["message"] = "error", failed_message
        elif rep.skipped:
            if hasattr(rep, "wasxfail"):
                row["outcome"], row["message"] = "xfailed", rep.wasxfail
            else:
                reason = _skip_reason(rep)
                row["outcome"], row["message"] = _skip_outcome(reason), reason
    elif rep.when == "call":
        if rep.passed:
            if hasattr(rep, "wasxfail"):
                row["outcome"], row["message"] = "xpassed", f"unexpected pass ({rep.wasxfail})"
                state.unexpected_passes.append(item.nodeid)
            else:
                row["outcome"] = "passed"
        elif rep.failed:
            row["outcome"], row["message"] = "failed", failed_message
        elif rep.skipped:
            if hasattr(rep, "wasxfail"):
                row["outcome"] = "xfailed"
                row["message"] = f"{rep.wasxfail}\n{failed_message or ''}".strip()
            else:
                reason = _skip_reason(rep)
                row["outcome"], row["message"] = _skip_outcome(reason), reason
    elif rep.when == "teardown" and rep.failed and row["outcome"] in (None, "passed"):
        row["outcome"], row["message"] = "error", failed_message

    if row["outcome"] in ("failed", "incompatible", "xfailed", "error") and row["repro"] is None:
        world = session.RECORDER.world
        if world is not None:
            ids = ", ".join(row["clauses"])
            row["repro"] = world.repro(f"Reproduce {item.name} ({ids}) on backend {state.ctx.backend_spec}")
            item.user_properties.append(("repro", row["repro"]))
    if row["outcome"] in ("failed", "incompatible", "xfailed") and row["hypothesis"] is None:
        row["hypothesis"] = _hypothesis_info(item, row["message"] or "", state)
    if row["outcome"] == "incompatible" and rep.when == "call":
        # keep the failure text visible in the terminal summary line
        rep.longrepr = None


# ------------------------------------------------------------------------------------------------ reports


def _header(state: State, config: pytest.Config) -> dict[str, Any]:
    ctx = state.ctx
    assert ctx is not None
    b = ctx.backend
    try:
        import numpy

        numpy_version = numpy.__version__
    except Exception:  # noqa: BLE001  # pragma: no cover
        numpy_version = None
    try:
        from importlib.metadata import version

        suite_version = version("push-cache-conformance")
    except Exception:  # noqa: BLE001
        suite_version = "0.0.0"
    exp = state.expectations
    return {
        "suite": {"name": SUITE_NAME, "version": suite_version},
        "spec": {"version": ctx.release, "sha256": ctx.spec.sha256, "path": str(ctx.spec.path)},
        "backend": {"name": str(getattr(b, "name", "?")), "version": str(getattr(b, "version", "?")),
                    "spec": ctx.backend_spec, "capabilities": ctx.caps},
        "environment": {"python": platform.python_version(), "numpy": numpy_version,
                        "platform": platform.platform(), "hostname": socket.gethostname()},
        "run": {
            "started": state.started.isoformat(timespec="seconds"),
            "duration_s": round(time.monotonic() - state.t0, 3),
            "hypothesis_profile": state.profile,
            "hypothesis_seed": state.seed,
            "expectations": {"path": exp.path if exp else None, "sha256": exp.sha256 if exp else None,
                             "strict": state.strict},
            "argv": list(config.invocation_params.args),
        },
    }


def _clause_rows(state: State) -> list[dict[str, Any]]:
    assert state.ctx is not None
    return [{"id": c.id, "level": c.level, "family": c.family, "title": c.title}
            for c in state.ctx.selected.clauses]


def uncovered(state: State) -> list[str]:
    assert state.ctx is not None
    return [c.id for c in state.ctx.selected.clauses if c.id not in state.covered]


def _fallback_verdict(rows: list[dict[str, Any]], clauses: list[dict[str, Any]]) -> dict[str, Any]:
    blocking = sorted({c for r in rows if r["level"] in ("must", "may") and r["outcome"] in ("failed", "error")
                       for c in r["clauses"]})
    return {"certified": not blocking, "label": "CERTIFIED" if not blocking else "NOT CERTIFIED",
            "blocking": blocking}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = _state(session.config)
    if state is None or state.ctx is None or session.config.option.collectonly:
        return
    rows = [state.rows[n] for n in state.order if state.rows[n]["outcome"] is not None]
    clauses = _clause_rows(state)
    exp = state.expectations
    expectations = {
        "path": exp.path if exp else None,
        "sha256": exp.sha256 if exp else None,
        "strict": state.strict,
        "unmatched": exp.unmatched() if exp else [],
        "unexpected_passes": list(state.unexpected_passes),
    }
    header = _header(state, session.config)
    try:
        from .report import build_report, write_reports
    except ImportError as exc:
        state.report_problem = f"reports not written: conformance_tests.report is not available ({exc})"
        state.report = {"verdict": _fallback_verdict(rows, clauses)}
        return
    try:
        state.report = build_report(header, rows, clauses, expectations)
    except Exception as exc:  # noqa: BLE001 - a report bug must not hide the run's outcome
        state.report_problem = f"report not built: {type(exc).__name__}: {exc}"
        state.report = {"verdict": _fallback_verdict(rows, clauses)}
        return
    verdict = state.report.get("verdict", {})
    if not verdict.get("certified", True) and state.full_selection and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if session.config.getoption("no_reports"):
        return
    out_dir = session.config.getoption("report_dir") or os.path.join(
        str(session.config.invocation_params.dir), "reports", _safe(str(getattr(state.ctx.backend, "name", "backend")))
    )
    try:
        paths = write_reports(state.report, Path(out_dir))
        state.report_paths = {k: str(v) for k, v in (paths or {}).items()}
    except Exception as exc:  # noqa: BLE001
        state.report_problem = f"reports not written to {out_dir}: {type(exc).__name__}: {exc}"


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "backend"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = _state(config)
    if state is None or state.ctx is None or config.option.collectonly or state.report is None:
        return
    tr = terminalreporter
    tr.section("push_cache conformance")
    if state.full_selection:
        missing = uncovered(state)
        tr.write_line("uncovered clauses: " + (", ".join(missing) if missing else "none"))
    else:
        tr.write_line("uncovered clauses: not computed (this run selects a subset of the suite)")
    incompatible = [n for n in state.order if state.rows[n]["outcome"] == "incompatible"]
    if incompatible:
        tr.write_line(f"incompatible (should-level, not blocking): {len(incompatible)} test(s)")
        for n in incompatible[:50]:
            tr.write_line(f"  {n}: {summary_line(state.rows[n]['message'])}"[:300])
    exp = state.expectations
    if exp is not None:
        unmatched = exp.unmatched()
        tr.write_line("expectations entries that matched nothing: " + (", ".join(unmatched) if unmatched else "none"))
        for e in exp.expired:
            tr.write_line(f"expired expectations entry ignored: {e.describe()}")
    tr.write_line("unexpected passes: " + (", ".join(state.unexpected_passes) if state.unexpected_passes else "none"))
    if state.report_problem:
        tr.write_line(state.report_problem, yellow=True)
    for name, path in sorted(state.report_paths.items()):
        tr.write_line(f"report {name}: {path}")
    verdict = state.report.get("verdict", {})
    b = state.ctx.backend
    who = f"backend {getattr(b, 'name', '?')} {getattr(b, 'version', '?')} against spec {state.ctx.release}"
    if state.full_selection:
        blocking = verdict.get("blocking") or []
        line = f"verdict: {verdict.get('label', '?')} — {who}" + (
            f"; blocking clauses: {', '.join(blocking)}" if blocking else "")
        certified = bool(verdict.get("certified"))
    else:
        failing = sorted({c for n in state.order for c in state.rows[n]["clauses"]
                          if state.rows[n]["level"] in ("must", "may")
                          and state.rows[n]["outcome"] in ("failed", "error")})
        line = (f"verdict: partial run (a selection of the suite is no certification) — {who}; "
                + (f"failing blocking clauses: {', '.join(failing)}" if failing else "no blocking failures"))
        certified = not failing
    tr.write_line(line, bold=True, green=certified, red=not certified)

"""The end of a run: the report's header and completeness, the verdict's exit code, the report folders and
files, and the terminal summary (the :class:`Finish` plugin), and what an interrupt or an internal error
leaves for them."""

from __future__ import annotations

import platform
import signal
import socket
import sys
import threading
import time
from collections.abc import Generator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import pytest
from hypothesis import settings

from ..cli import exitcodes
from ..cli.invocation import certify_args
from ..coverage import tally, universe
from ..coverage.tally import line as coverage_line
from ..report.builder import unreached_coverage
from ..report.model import CERTIFIED_WITH_WAIVERS, NOT_CERTIFIED, PARTIAL, VerdictKind
from ..selecting.selection import WHY_DESELECTED, WHY_NOT_RUN, selection_problems
from ..selecting.shards import shard_reason
from ..spec.levels import BLOCKING_LEVELS
from ..spec.paths import DEFAULT_OPERATION
from .profiles import CERTIFY_EXAMPLES
from .reproducible import layouts_sha256, run_versions
from .rows import plain, printable

if TYPE_CHECKING:
    from ..report.parts import Report
    from ..spec import Spec
    from .state import RunState as State

SUITE_NAME = "push-cache-conformance"
#: signals that end a run as Ctrl-C does (what CI, ``timeout`` and a closed terminal send): a partial report,
#: exit code 5, the backend stopped
TERMINATING = (signal.SIGTERM, signal.SIGHUP)
#: likely causes and blocking clauses the terminal summary names after the verdict (the reports have them all)
CAUSES_SHOWN = 3
BLOCKING_SHOWN = 10


def backend_display_name(backend: Any) -> str:
    """The backend's name as reports show it (never empty)."""
    name = printable(str(getattr(backend, "name", "") or ""))
    return name if name.strip() else "(unnamed backend)"


def folder_release(spec: Spec, release: str) -> str | None:
    """What a report folder's name adds after ``@``: the operation unless it is the default one (push_cache), and
    the release unless it is the spec's newest, so that a run of another operation or an older release never
    writes over the default run's report (``reports/reference@push_blocks/``)."""
    parts = ([spec.api] if spec.api != DEFAULT_OPERATION else []) + ([release] if release != spec.releases[-1] else [])
    return "@".join(parts) or None


def full_folder(config: pytest.Config, backend: Any, release: str | None = None) -> Path:
    """Where a full run of this backend writes: --report-dir, else reports/<safe backend name>/ (with
    ``@<release>`` for a release other than the spec's newest)."""
    from ..report.folders import default_folder

    explicit = config.getoption("report_dir")
    if explicit:
        return Path(config.invocation_params.dir) / explicit
    base = Path(config.invocation_params.dir) / "reports"
    return default_folder(base, str(getattr(backend, "name", "") or ""), partial=False, release=release)


def partial_folder(config: pytest.Config, backend: Any, full_dir: Path, release: str | None = None) -> Path:
    """Where a partial run writes: reports/<name>.partial/ by default (with ``@<release>`` as for a full run);
    with --report-dir DIR, DIR itself unless DIR holds a full report, then DIR.partial/ beside it."""
    from ..report.folders import default_folder, holds_full_report, partial_sibling

    if config.getoption("report_dir"):
        return partial_sibling(full_dir) if holds_full_report(full_dir) else full_dir
    base = Path(config.invocation_params.dir) / "reports"
    return default_folder(base, str(getattr(backend, "name", "") or ""), partial=True, release=release)


def clause_list(clauses: list[str], shown: int = 4) -> str:
    """Clause IDs on one line: the first ``shown``, then how many more."""
    more = len(clauses) - shown
    return ", ".join(clauses[:shown]) + (f" and {more} more" if more > 0 else "")


def summary_line(message: str | None) -> str:
    """The line of a failure message that says what went wrong (not the clause or the call)."""
    lines = [ln.strip() for ln in (message or "").splitlines() if ln.strip()]
    for ln in lines:
        if not ln.startswith(("clause ", "call:", "AssertionError: clause ")):
            return ln
    return lines[0] if lines else ""



def run_header(state: State, config: pytest.Config) -> dict[str, Any]:
    ctx = state.run
    b = ctx.backend
    try:
        from importlib.metadata import version

        suite_version = version("push-cache-conformance")
    except Exception:  # noqa: BLE001
        suite_version = "0.0.0"
    exp = state.expectations
    rows = state.rows
    return plain({
        "suite": {"name": SUITE_NAME, "version": suite_version},
        "spec": {"version": ctx.release, "sha256": ctx.spec.sha256, "path": str(ctx.spec.path),
                 "operation": ctx.spec.api},
        "backend": {"name": backend_display_name(b), "version": str(getattr(b, "version", "?")),
                    "spec": ctx.target, "capabilities": dict(ctx.caps)},
        "environment": {"python": platform.python_version(), **run_versions(),
                        "platform": platform.platform(), "hostname": socket.gethostname()},
        "run": {
            "started": state.started.isoformat(timespec="seconds"),
            "duration_s": round(time.monotonic() - state.t0, 3),
            "hypothesis_profile": state.profile,
            "hypothesis_seed": state.seed,
            "expectations": {"path": exp.path if exp else None, "sha256": exp.sha256 if exp else None,
                             "strict": state.strict},
            "argv": list(config.invocation_params.args),
            "certify_args": certify_args(config.invocation_params.args),
            "push_calls": rows.push_calls,
            "distinct_layouts": len(rows.layouts),
            "domain_coverage": tally(universe(ctx.spec, ctx.signature, ctx.caps, ctx.release), rows.coverage),
            **rows.history_counts,
            "layouts_sha256": layouts_sha256(rows.layouts),
            "passing_push_features": rows.passing_push_features,
            "isolation": state.isolation,
            # one per process that ran tests (the serial process, or each pytest-xdist worker), then one per loss
            "backend_processes": max(1, len(rows.workers)) + rows.restarts if state.isolation == "process" else None,
            "max_time_s": state.max_time or None,
            "out_of_time": state.out_of_time,
            # a count of distinct layouts cannot be added up over shards: a shard report carries the layouts
            # themselves, so that `report merge` counts their union (report/merge.py)
            **({"layout_keys": sorted(rows.layouts)} if state.shard is not None else {}),
            "reruns": state.reruns,
        },
    })


def clause_rows(state: State) -> list[dict[str, Any]]:
    return [{"id": c.id, "level": c.level.value, "family": c.family, "title": c.title,
             **({"deviation": c.deviation} if c.deviation else {})}
            for c in state.run.selected.clauses]


def fallback_verdict(rows: list[dict[str, Any]], clauses: list[dict[str, Any]]) -> dict[str, Any]:
    blocking = sorted({c for r in rows if r["level"] in BLOCKING_LEVELS and r["outcome"] in ("failed", "error", "flaky")
                       for c in r["clauses"]})
    return {"certified": False, "label": NOT_CERTIFIED if blocking else PARTIAL,
            "kind": VerdictKind.NOT_CERTIFIED if blocking else VerdictKind.PARTIAL, "blocking": blocking}


def completeness(state: State, session: pytest.Session, exitstatus: int) -> dict[str, Any]:
    """Whether the run was full, and if not, why not and which tests were left out (see reports/README.md)."""
    config = session.config
    reasons = selection_problems(config)
    spec = state.run.spec
    custom = state.packaged_sha256 is None or spec.sha256 != state.packaged_sha256
    if custom:
        reasons.append(f"custom spec {spec.path} (sha256 {spec.sha256[:12]}, the packaged spec's is "
                       f"{(state.packaged_sha256 or 'unknown')[:12]})")
    left_out = [{"id": n, "why": WHY_DESELECTED} for n in state.deselected]
    left_out += [{"id": n, "why": why} for n, why in state.own_deselected.items()]
    examples = settings().max_examples  # the loaded profile's
    if examples < CERTIFY_EXAMPLES:
        reasons.append(f"hypothesis profile {state.profile}: {examples} examples per stream unit, "
                       f"fewer than certification's {CERTIFY_EXAMPLES}")
    if state.deselected and not any(r.startswith(("-k ", "-m ", "--lf", "--deselect")) for r in reasons):
        reasons.append(f"{len(state.deselected)} test(s) deselected by a plugin")
    if state.collection_errors:
        reasons.append("collection errors in " + ", ".join(state.collection_errors))
    interrupted = None
    if state.out_of_time:
        interrupted = state.out_of_time
        reasons.append(f"stopped early: {state.out_of_time}")
    elif state.interrupts or exitstatus == pytest.ExitCode.INTERRUPTED:
        interrupted = "; ".join(state.interrupts) or str(session.shouldstop or "interrupted")
        reasons.append(f"interrupted: {interrupted}")
    elif exitstatus == pytest.ExitCode.INTERNAL_ERROR:
        interrupted = "internal error"
        reasons.append("stopped by an internal error")
    elif session.shouldfail or session.shouldstop:
        interrupted = str(session.shouldfail or session.shouldstop)
        reasons.append(f"stopped early: {interrupted}")
    if not state.collection_known:
        reasons.append("no pytest-xdist worker reported its collection (every worker died?)")
    if state.rows.without_clauses:
        reasons.append(f"{len(state.rows.without_clauses)} test(s) whose process died before they named their "
                       "clauses: " + ", ".join(state.rows.without_clauses[:5]))
    finished = {r["id"] for r in state.rows.finished()}
    not_run = [n for n in state.selected if n not in finished]
    if not_run:
        reasons.append(f"{len(not_run)} selected test(s) not run")
        left_out += [{"id": n, "why": WHY_NOT_RUN} for n in not_run]
    shard = shard_section(state)
    if shard is not None:
        reasons.append(shard["reason"])
    return {
        "full": not reasons and not left_out,
        "reasons": reasons,
        "selected": len(state.selected),
        "left_out": left_out,
        "interrupted": interrupted,
        "spec": {"path": str(spec.path), "sha256": spec.sha256, "packaged_sha256": state.packaged_sha256,
                 "packaged": not custom},
        **({"shard": shard} if shard is not None else {}),
    }


def shard_section(state: State) -> dict[str, Any] | None:
    """``completeness.shard`` of a shard run (None for any other run): which part it ran, the whole selection
    in collection order and the shard of each of its tests, and the reason it added (report/merge.py takes the
    reason out again)."""
    shard = state.shard
    if shard is None:
        return None
    mine = sum(1 for k in state.shard_assigned if k == shard.index)
    return {"index": shard.index, "count": shard.count, "selection": list(state.shard_selection),
            "assigned": list(state.shard_assigned),
            "reason": shard_reason(shard, mine, len(state.shard_selection))}


def exit_code_for(verdict: dict[str, Any], report_problem: str | None) -> int:
    """The kit's exit code for a finished session (see conformance_tests/cli/exitcodes.py)."""
    if report_problem:
        return exitcodes.INTERNAL_ERROR
    return exitcodes.for_verdict(verdict)


def expectations_input(state: State) -> dict[str, Any]:
    exp = state.expectations
    base = exp.report_section() if exp else {"path": None, "sha256": None, "entries": [], "expired": [],
                                             "unmatched": []}
    return {**base, "strict": state.strict, "unexpected_passes": list(state.rows.unexpected_passes)}


def finish(session: pytest.Session, state: State, exitstatus: int) -> None:
    config = session.config
    if exitstatus == pytest.ExitCode.USAGE_ERROR:
        state.exit_code = state.result.code = session.exitstatus = exitcodes.USAGE_ERROR
        return
    # in collection order, however the tests were scheduled (pytest-xdist finishes them in any order)
    position = {n: i for i, n in enumerate(state.selected)}
    rows = sorted(state.rows.finished(), key=lambda r: position.get(r["id"], len(position)))
    clauses = clause_rows(state)
    header = run_header(state, config)
    run_info = completeness(state, session, exitstatus)
    try:
        from ..report import build_report, write_reports
        from ..report.folders import holds_full_report
    except ImportError as exc:
        state.report_problem = f"reports not written: conformance_tests.report is not available ({exc})"
        state.report = {"verdict": fallback_verdict(rows, clauses)}
    else:
        try:
            report = build_report(header, rows, clauses, expectations_input(state), run_info)
            # the run state holds a report, or (when none could be built) only a fallback verdict: a plain dict
            state.report = cast(dict[str, Any], report)
        except Exception as exc:  # noqa: BLE001 - a report bug must not hide the run's outcome
            state.report_problem = f"report not built: {type(exc).__name__}: {exc}"
            state.report = {"verdict": fallback_verdict(rows, clauses)}
        else:
            if not config.getoption("no_reports"):
                release = folder_release(state.run.spec, state.run.release)
                full_dir = state.full_dir or full_folder(config, state.run.backend, release)
                partial = bool(report["verdict"].get("partial"))
                out_dir = partial_folder(config, state.run.backend, full_dir, release) if partial else full_dir
                state.report_dir = out_dir
                try:
                    paths = write_reports(report, out_dir)
                    state.report_paths = {k: str(v) for k, v in (paths or {}).items()}
                except Exception as exc:  # noqa: BLE001
                    state.report_problem = f"reports not written to {out_dir}: {type(exc).__name__}: {exc}"
                if partial and out_dir != full_dir and holds_full_report(full_dir):
                    state.kept_full = full_dir
    code = exit_code_for(state.report.get("verdict", {}), state.report_problem)
    if exitstatus == pytest.ExitCode.INTERNAL_ERROR or state.result.internal_error:
        code = exitcodes.INTERNAL_ERROR
    state.exit_code = code
    state.result.code = code
    state.result.report_dir = str(state.report_dir) if state.report_dir is not None else None
    state.result.backend_name = str(getattr(state.run.backend, "name", "") or "")
    session.exitstatus = code


def terminal_summary(terminalreporter: Any, config: pytest.Config, state: State) -> None:
    if config.option.collectonly or state.report is None:
        return
    tr = terminalreporter
    report = state.report
    tr.section(f"{state.run.spec.api} conformance")
    if state.full_selection:
        missing = state.uncovered()
        tr.write_line("uncovered clauses: " + (", ".join(missing) if missing else "none"))
    else:
        tr.write_line("uncovered clauses: not computed (this run selects a subset of the suite)")
    finished = state.rows.finished()
    incompatible = [r for r in finished if r["outcome"] == "incompatible"]
    if incompatible:
        tr.write_line(f"incompatible (should-level, not blocking): {len(incompatible)} test(s)")
        for r in incompatible[:50]:
            tr.write_line(f"  {r['id']}: {summary_line(r['message'])}"[:300])
    flaky = [r for r in finished if r["outcome"] == "flaky"]
    if flaky:
        tr.write_line(f"flaky (failed, then passed when run again; blocking at must and may level): {len(flaky)} "
                      "test(s)", yellow=True)
        for r in flaky[:50]:
            tries = " -> ".join(a["outcome"] for a in r.get("attempts") or []) or "hypothesis replayed it"
            tr.write_line(f"  {r['id']} ({r['level']}; {tries}): {summary_line(r['message'])}"[:300])
    exp = state.expectations
    if exp is not None:
        unmatched = exp.unmatched()
        tr.write_line(f"expectations file: {exp.path} (sha256 {exp.sha256})")
        waived = (report.get("expectations") or {}).get("waived") or []
        must = len(report.get("verdict", {}).get("waived_must_tests") or [])
        tr.write_line(f"waived tests: {len(waived)} ({must} must test(s) whose failure or run was waived)")
        tr.write_line("expectations entries that matched nothing: " + (", ".join(unmatched) if unmatched else "none"))
        for e in exp.expired:
            tr.write_line(f"expired expectations entry ignored: {e.describe()}")
    tr.write_line("unexpected passes: " + (", ".join(state.rows.unexpected_passes) or "none"))
    tr.write_line(f"{state.run.spec.api} calls: {state.rows.push_calls}, distinct layouts: {len(state.rows.layouts)}")
    cov = (report.get("run") or {}).get("domain_coverage")
    tr.write_line(coverage_line(cov))
    for k in unreached_coverage(cov)[:20]:
        tr.write_line(f"  unreached: {k}", yellow=True)
    hc = state.rows.history_counts
    tr.write_line(f"histories: {hc['histories']}, steps: {hc['history_steps']}, "
                  f"pushes in histories: {hc['history_pushes']}")
    comp = report.get("completeness") or {}
    if comp and not comp.get("full", True):
        counts = comp.get("left_out_counts") or {}
        tr.write_line("partial run: " + "; ".join(comp.get("reasons") or []), yellow=True)
        tr.write_line(f"left out: {comp.get('left_out_count', 0)} test(s)"
                      + (" (" + ", ".join(f"{n} {why}" for why, n in sorted(counts.items())) + ")" if counts else ""))
    if state.report_problem:
        tr.write_line(state.report_problem, red=True)
    for name, path in sorted(state.report_paths.items()):
        tr.write_line(f"report {name}: {path}")
    kept = state.kept_full
    if kept is not None:
        tr.write_line(f"the last full report in {kept} is kept (a partial run never overwrites it)")
    verdict = report.get("verdict", {})
    b = state.run.backend
    who = f"backend {backend_display_name(b)} {getattr(b, 'version', '?')} against spec {state.run.release}"
    blocking = verdict.get("blocking") or []
    line = f"verdict: {verdict.get('label', '?')} — {who}"
    if verdict.get("label") == CERTIFIED_WITH_WAIVERS:
        line += f"; {len(verdict.get('waived_must_tests') or [])} must test(s) waived"
    if blocking:
        line += f"; blocking clauses: {', '.join(blocking)}"
    kind = verdict.get("kind")
    tr.write_line(line, bold=True, green=kind == VerdictKind.CERTIFIED, red=kind == VerdictKind.NOT_CERTIFIED,
                  yellow=kind in (VerdictKind.PARTIAL, VerdictKind.CERTIFIED_WITH_WAIVERS))
    for cause in (report.get("likely_causes") or [])[:CAUSES_SHOWN]:
        tr.write_line(f"likely cause: {cause['statement']} ({clause_list(cause['clauses'])})", red=True)
    rerun = rerun_line(state, config)
    if rerun:
        tr.write_line(f"re-run the failing tests: {rerun}", bold=True)
    for detail in (report.get("blocking_details") or [])[:BLOCKING_SHOWN]:
        first = summary_line(detail.get("first_message"))
        tr.write_line(f"  {detail['id']} ({detail.get('failing_tests', 0)} failing): {first}"[:300])
    if state.exit_code is not None:
        meaning = exitcodes.BY_CODE.get(state.exit_code)
        tr.write_line(f"exit code: {state.exit_code} ({meaning.name if meaning else '?'})")


def rerun_line(state: State, config: pytest.Config) -> str | None:
    """The command that runs again only this run's failing tests, its report.json as typed from where certify
    ran (None without failures or without a written report)."""
    written = state.report_paths.get("report.json")
    if state.report is None or written is None:
        return None
    from ..report.rerun import rerun_command, shown_path

    # a report.json was written: the run state holds the report it was written from, not a fallback verdict
    return rerun_command(cast("Report", state.report), shown_path(written, config.invocation_params.dir))


def _without_unnumbered_frames(tb: TracebackType | None) -> None:
    """Unlink the entries of ``tb`` after its first whose frame has no line number (what a signal can leave on
    Python 3.11, at an instruction without a location)."""
    while tb is not None:
        nxt = tb.tb_next
        while nxt is not None and nxt.tb_lineno is None:
            nxt = nxt.tb_next
        tb.tb_next = nxt
        tb = nxt


#: the signal that began the run's end, once received: Python may run the handler inside a finalizer (gc.collect,
#: which hypothesis calls before each example, runs them), where the KeyboardInterrupt it raises is printed and
#: dropped; the next test's start raises it again (:meth:`Finish.pytest_runtest_setup`)
_received: list[str] = []


def _terminated(signum: int, _frame: Any) -> None:
    for sig in TERMINATING:  # the first one starts the orderly end; a second would break the report it writes
        signal.signal(sig, signal.SIG_IGN)
    text = f"{signal.Signals(signum).name} received"
    _received.append(text)
    raise KeyboardInterrupt(text)


def terminate_as_interrupt() -> dict[int, Any]:
    """From now on SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread, as SIGINT does; returns the
    handlers they replace (nothing outside the main thread, where Python cannot set them)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    for sig in TERMINATING:
        try:
            previous[sig] = signal.signal(sig, _terminated)
        except (ValueError, OSError):
            pass
    return previous


def restore_signals(previous: dict[int, Any]) -> None:
    _received.clear()
    for sig, handler in previous.items():
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError, TypeError):
            pass


class Finish:
    """The end of a run: the report and the exit code, the terminal summary; interrupts (Ctrl-C, SIGTERM,
    SIGHUP) and internal errors."""

    def __init__(self, state: State, signals: dict[int, Any] | None = None) -> None:
        self.state = state
        #: the handlers SIGTERM and SIGHUP had before the run (restored at its end)
        self.signals = signals or {}

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        restore_signals(self.signals)

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """A SIGTERM or SIGHUP whose KeyboardInterrupt was dropped (raised in a finalizer) ends the run here."""
        if _received:
            raise KeyboardInterrupt(_received[0])

    @pytest.hookimpl(wrapper=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Generator[None, None, None]:
        """The interrupt recorded before any other plugin sees it; and shown by them without ending the run as an
        internal error: a signal raises at whatever instruction the main thread is at, and on Python 3.11 a frame
        may then have no line number, which pytest's own traceback display fails on (TypeError)."""
        text = str(excinfo.value).strip()
        self.state.interrupts.append(f"{excinfo.typename}: {text}" if text else excinfo.typename)
        _without_unnumbered_frames(excinfo.tb)
        try:
            return (yield)
        except Exception as exc:  # noqa: BLE001 - the interrupt is the run's end; its display is not
            sys.stderr.write(f"push-cache-kit: the interrupt's traceback could not be shown ({type(exc).__name__}: "
                             f"{exc})\n")
            return None

    def pytest_internalerror(self, excrepr: Any, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.state.result.internal_error = True

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state = self.state
        if session.config.option.collectonly or state.is_worker:
            return
        try:
            finish(session, state, exitstatus)
        except Exception as exc:  # noqa: BLE001 - never let a kit bug read as a verdict
            import traceback

            traceback.print_exc()
            state.report_problem = f"the kit failed while finishing the run: {type(exc).__name__}: {exc}"
            state.result.internal_error = True
            state.exit_code = state.result.code = session.exitstatus = exitcodes.INTERNAL_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        terminal_summary(terminalreporter, config, self.state)

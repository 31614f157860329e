"""The start of a run: from the command line to a run state (the hypothesis profile, the backend in its own
process or in this one, the spec and its release, the expectations file, the report folder), the session
header, and the backend's end."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import hypothesis
import pytest
from hypothesis import settings

from ..cli.exitcodes import RunResult
from ..resolution import (
    IN_PROCESS_BY_DEFAULT,
    BackendError,
    backend_capabilities,
    backend_target,
    resolve_backend,
)
from ..selecting.expectations import ExpectationsError, load_expectations
from ..selecting.shards import parse_shard
from ..spec import SpecError, load_spec, operation_spec_path, specified_operations
from . import profiles
from .context import RunContext
from .deadlines import Deadlines
from .finish import backend_display_name, folder_release, full_folder
from .reproducible import GenerationNotPinned, pin_generation
from .rows import printable
from .state import RunState


def start_run(config: pytest.Config, result: RunResult) -> RunState:
    """The run state for ``config``: every input checked, or a pytest.UsageError of one line."""
    state = RunState(config, result)
    try:
        pin_generation()
    except GenerationNotPinned as exc:
        raise pytest.UsageError(str(exc)) from None
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

    # the cheap inputs first: a bad option or file is one line before any backend process starts
    state.until_failed = frozenset(c for c in str(config.getoption("until_failed") or "").split(",") if c)
    state.max_time = float(config.getoption("max_time") or 0.0)
    if state.max_time < 0:
        raise pytest.UsageError(f"--max-time {state.max_time:g}: a number of seconds, 0 for no budget")
    shard = config.getoption("shard")
    if shard is not None:
        try:
            state.shard = parse_shard(shard)
        except ValueError as exc:
            raise pytest.UsageError(f"--shard {shard}: {exc}") from None
    state.reruns = reruns(config)
    try:
        spec = load_spec(spec_path(config))
    except SpecError as exc:
        raise pytest.UsageError(f"spec: {exc}") from None
    unknown = sorted(state.until_failed - {c.id for c in spec.clauses})
    if unknown:
        raise pytest.UsageError(f"--until-failed: no clause {', '.join(unknown)} in {spec.api}'s spec")
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

    deadlines = Deadlines()
    try:
        backend, target, state.isolation = open_backend(config, deadlines)
        caps = backend_capabilities(backend)
    except BackendError as exc:
        raise pytest.UsageError(str(exc)) from None

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
        release = spec.newest_release(declared)

    shrink_s = float(config.getoption("shrink_time"))
    if shrink_s < 0:
        raise pytest.UsageError(f"--shrink-time {shrink_s:g}: a number of seconds, 0 for no shrinking")
    state.ctx = RunContext(backend, target, caps, spec, release, timeout=config.getoption("timeout", None),
                           shrink_s=shrink_s, deadlines=deadlines)
    state.packaged_sha256 = packaged_sha256(spec.api)
    if not config.getoption("no_reports") and not config.option.collectonly and not state.is_worker:
        from ..report.folders import check_writable

        full_dir = full_folder(config, backend, folder_release(spec, release))
        problem = check_writable(full_dir)
        if problem:
            raise pytest.UsageError(f"reports cannot be written: {problem} (use --report-dir DIR or --no-reports)")
        state.full_dir = full_dir
    return state


#: pytest-rerunfailures' options that say how often a failed test runs again (it checks only that they are ints)
RERUN_OPTIONS = (("reruns", "--reruns"), ("force_reruns", "--force-reruns"))


def reruns(config: pytest.Config) -> int | None:
    """How many times a failed test runs again (certify --reruns N; pytest-rerunfailures runs them), None when
    failed tests are not re-run. A negative count would silently mean "never": it is refused."""
    values = {dest: config.getoption(dest, None) for dest, _ in RERUN_OPTIONS}
    for dest, flag in RERUN_OPTIONS:
        if values[dest] is not None and values[dest] < 0:
            raise pytest.UsageError(f"{flag} {values[dest]}: how many times a failed test runs again (0 or more)")
    # as the plugin reads them: --force-reruns over --reruns
    return values["force_reruns"] if values["force_reruns"] is not None else values["reruns"]


def open_backend(config: pytest.Config, deadlines: Deadlines) -> tuple[Any, str, str]:
    """(backend, target, isolation): the backend in its own process, or imported here (--isolation)."""
    from ..isolation import IsolatedBackend, StartError

    target = backend_target(config.getoption("backend"))
    mode = config.getoption("isolation")
    if mode == "auto":
        mode = "off" if target in IN_PROCESS_BY_DEFAULT else "process"
    if mode == "off":
        backend, target = resolve_backend(target)
        return backend, target, mode
    try:
        backend = IsolatedBackend(target, deadlines)
    except StartError as exc:  # its message names the backend already
        raise BackendError(str(exc)) from None
    return backend, backend.target, mode


def spec_path(config: pytest.Config) -> pathlib.Path | str | None:
    """The spec the run certifies against: ``--spec``, or the packaged spec of ``--operation`` (one of the two),
    else the packaged push_cache spec (None)."""
    path, operation = config.getoption("pc_spec"), config.getoption("pc_operation")
    if operation is None:
        return path  # type: ignore[no-any-return]
    if path is not None:
        raise pytest.UsageError(f"--operation {operation} certifies against its packaged spec; give it or --spec "
                                f"{path}, not both")
    known = specified_operations()
    if operation not in known:
        raise pytest.UsageError(f"--operation {operation!r}: no packaged spec; the operations with one: "
                                f"{', '.join(known)}")
    return operation_spec_path(operation)


def packaged_sha256(api: str) -> str | None:
    """The sha256 of the packaged spec of operation ``api``, as the loader computes it (a spec's own bytes and
    those it shares): a run against another file is PARTIAL."""
    try:
        return load_spec(operation_spec_path(api)).sha256
    except SpecError:
        return None


class Startup:
    """The session header and the backend's end."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        state = self.state
        run = state.run
        b = run.backend
        exp = state.expectations
        caps = json.dumps(run.caps, sort_keys=True, default=str)
        seed = state.seed if state.seed is not None else ("derandomized" if state.profile == "certify" else "random")
        # capabilities an isolated backend declared that are not data: left out, as if not declared
        left_out = [f"push_cache capability left out (not data): {line}"
                    for line in (b.caps_left_out if state.isolation == "process" else [])]
        return [*left_out,
            f"push_cache backend: {backend_display_name(b)} {printable(str(getattr(b, 'version', '?')))} ({run.target}; "
            + ("in its own process" if state.isolation == "process" else "in this process") + ")",
            f"push_cache capabilities: {caps}",
            f"push_cache spec: release {run.release} of {run.spec.version} "
            f"(sha256 {run.spec.sha256[:12]}, {run.spec.path})",
            f"push_cache hypothesis: {hypothesis.__version__}, profile {state.profile}, seed {seed}",
            "push_cache expectations: "
            + (f"{exp.path} (sha256 {(exp.sha256 or '')[:12]}, {len(exp.active)} active, {len(exp.expired)} expired)"
               if exp else ("none (--strict-expectations)" if state.strict else "none")),
        ]

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        backend = self.state.run.backend
        if self.state.isolation == "process" and callable(getattr(backend, "close", None)):
            backend.close()

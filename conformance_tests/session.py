"""The run context shared by the plugin and the generated test modules.

The plugin fills it in ``pytest_configure`` (backend, spec, selected release, capabilities).  When the suite
is imported without the plugin (e.g. ``pytest --pyargs conformance_tests.suite``), :func:`current` builds a
default context: the backend from ``$PUSH_CACHE_BACKEND`` or "reference", the packaged spec, the newest
release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .spec import signature_parameters


@dataclass
class RunContext:
    backend: Any
    backend_spec: str
    caps: dict[str, Any]
    spec: Any  # the whole spec (every release); tests are generated from it and deselected by release
    release: str
    selected: Any  # spec.for_release(release)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def signature(self) -> dict[str, Any]:
        return self.spec.signature_for(self.release)

    @property
    def params(self) -> list[str]:
        """The parameter names push_cache takes in the selected release (keyword-only ones included)."""
        declared, through_kwargs = signature_parameters(self.signature)
        return declared + through_kwargs


@dataclass
class Recorder:
    """What the running test did last (the plugin turns it into a reproduction when the test fails)."""

    world: Any = None
    label: str = ""

    def reset(self) -> None:
        self.world, self.label = None, ""


@dataclass
class Counters:
    """What the suite did to the backend in this run (the report and the terminal summary show it)."""

    push_calls: int = 0  # push_cache calls made by the harness
    restarts: int = 0  # new backend processes started for this test (the last one was lost)
    layouts: set[str] = field(default_factory=set)  # distinct cache layouts (src/dst descs and placements) drawn

    def reset(self) -> None:
        self.push_calls = 0
        self.restarts = 0
        self.layouts.clear()


CURRENT: RunContext | None = None
RECORDER = Recorder()
COUNTERS = Counters()


def newest_release(spec: Any, declared: Any = None) -> str:
    """The newest spec release the backend declares (capabilities["spec_versions"]), else the spec's newest."""
    releases = list(spec.releases)
    if declared:
        known = [r for r in releases if r in set(declared)]
        if known:
            return known[-1]
    return releases[-1]


def current() -> RunContext:
    global CURRENT
    if CURRENT is None:
        from .backend import backend_capabilities, resolve_backend
        from .spec import load_spec

        backend, target = resolve_backend(None)
        caps = backend_capabilities(backend)
        spec = load_spec()
        release = newest_release(spec, caps.get("spec_versions"))
        CURRENT = RunContext(backend, target, caps, spec, release, spec.for_release(release))
    return CURRENT


def set_current(ctx: RunContext | None) -> None:
    global CURRENT
    CURRENT = ctx

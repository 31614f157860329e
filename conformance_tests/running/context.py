"""The run context: what every procedure of one certification run works with, created by the plugin and passed
to each test (the ``run_context`` fixture); no module keeps run state of its own.

It holds the backend and its capabilities, the spec (every release: tests are generated from it) and the
selected release, the per-test time bound, the run's deadlines, what the running test did to the backend
(:class:`Counters`) and the testbed it opened last (whose call log is the test's reproduction).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..spec import Signature, Spec, load_spec
from .deadlines import Deadlines

#: how long hypothesis may shrink a failing history unless --shrink-time says otherwise: a replay costs from a
#: tenth of a second to seconds, and hypothesis's own bound is five minutes
DEFAULT_SHRINK_S = 30.0


@dataclass
class Counters:
    """What the running test did to the backend (the report and the terminal summary add them up)."""

    push_calls: int = 0  # push_cache calls made by the harness
    restarts: int = 0  # new backend processes started for this test (the last one was lost)
    layouts: set[str] = field(default_factory=set)  # distinct cache layouts (src/dst descs and placements)
    coverage: set[str] = field(default_factory=set)  # the domain partitions and pairs its pushes reached
    histories: int = 0  # histories the stateful suite ran (each hypothesis example, shrinking included)
    history_steps: int = 0  # their steps (rules run)
    history_pushes: int = 0  # push_cache calls made in them
    #: the features of this test's pushes (push_features.merge) and of its last push (the one a failure judged)
    push_features: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_push: dict[str, Any] | None = None

    def reset(self) -> None:
        self.push_calls = 0
        self.restarts = 0
        self.layouts.clear()
        self.coverage.clear()
        self.histories = self.history_steps = self.history_pushes = 0
        self.push_features = {}
        self.last_push = None


@dataclass
class RunContext:
    backend: Any
    target: str  # the backend's module:attr
    caps: Mapping[str, Any]
    spec: Spec  # every release
    release: str
    timeout: float | None = None  # the per-test pytest-timeout bound (--timeout), if any
    shrink_s: float = DEFAULT_SHRINK_S  # how long a failing stream may shrink (--shrink-time)
    deadlines: Deadlines = field(default_factory=Deadlines)
    counters: Counters = field(default_factory=Counters)
    #: the testbed the running test opened last: its call log is the test's reproduction
    last_testbed: Any = None

    @classmethod
    def for_backend(cls, backend: Any, target: str = "", *, spec: Spec | None = None, release: str | None = None,
                    timeout: float | None = None) -> RunContext:
        """A context outside a pytest run (tools, self-tests): the packaged spec, the newest release the backend
        declares."""
        spec = spec or load_spec()
        caps = dict(backend.capabilities())
        return cls(backend, target or type(backend).__module__, caps, spec,
                   release or spec.newest_release(caps.get("spec_versions")), timeout)

    @cached_property
    def selected(self) -> Spec:
        """The spec's clauses that hold in the selected release."""
        return self.spec.for_release(self.release)

    @property
    def signature(self) -> Signature:
        return self.spec.signature_for(self.release)

    @property
    def params(self) -> tuple[str, ...]:
        """The parameter names push_cache takes in the selected release (those through **kwargs included)."""
        return self.signature.names

    @property
    def default_tnpl(self) -> int:
        """tensor_num_per_layer when a call leaves it out: the signature's default; releases without the
        parameter count two tensors per layer (facts §8)."""
        default = self.signature.default("tensor_num_per_layer")
        return default if isinstance(default, int) else 2

    def begin_test(self) -> None:
        self.counters.reset()
        self.last_testbed = None

"""What every procedure does around its call: skip what the backend does not declare, bound a push, open a
scenario as a testbed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from ..running.context import RunContext
from ..spec import Scenario
from ..testbed.testbed import Testbed, missing_capabilities

#: how long one push may take before it counts as a hang, unless the per-test bound is shorter
PUSH_BOUND_S = 30.0
#: sync_kv_timeout when a scenario's local node sets no llm.SyncKvCacheWaitTime (the documented default, ms)
DEFAULT_SYNC_TIMEOUT_MS = 1000


def require(run: RunContext, requires: Sequence[str]) -> None:
    """Skip with "not supported: <capability>" when the backend does not declare what a test needs."""
    missing = missing_capabilities(run.caps, requires)
    if missing:
        pytest.skip("not supported: " + ", ".join(missing))


def per_call_bound(run: RunContext, extra: float = 0.0) -> float:
    """How long one push may take before it counts as a hang (below the per-test timeout)."""
    bound = PUSH_BOUND_S + extra
    if run.timeout:
        bound = min(bound, max(1.0, float(run.timeout) * 0.8))
    return bound


def sync_timeout_s(scenario: Scenario) -> float:
    """The local node's sync_kv_timeout in seconds."""
    ms = scenario.local.option_int("llm.SyncKvCacheWaitTime")
    return (ms if ms is not None else DEFAULT_SYNC_TIMEOUT_MS) / 1000.0


@contextlib.contextmanager
def opened(run: RunContext, scenario: Scenario, **kw: Any) -> Iterator[Testbed]:
    """A testbed for ``scenario``; a failure while building it is a setup error, not a verdict."""
    tb = Testbed(run, scenario, **kw)
    try:
        tb.open()
        yield tb
    finally:
        tb.close()

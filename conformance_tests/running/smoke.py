"""The smoke check: one valid push on the baseline scenario before any test, so that a broken adapter reads as
"adapter error" (exit 3) and not as hundreds of non-conformances."""

from __future__ import annotations

import pytest

from datawire.vocabulary import API_NAMES

from ..backend import NODE_ATTRS, NODE_METHODS, missing_members
from ..cli import exitcodes
from ..judging.oracle import diff
from ..testbed.errors import HarnessError
from ..testbed.testbed import Testbed, describe_exception
from .context import RunContext
from .state import RunState

#: how long the smoke check's push may take
SMOKE_LIMIT_S = 60


def smoke_check(run: RunContext, limit: float = SMOKE_LIMIT_S) -> str | None:
    """One valid push on the baseline scenario; returns why the adapter looks broken, or None.

    It tells a broken adapter apart from a non-conforming push_cache: the nodes must have the protocol
    members, ``read_tensor`` must return what ``write_tensor`` wrote, a valid push must return, and the
    destination must read back changed afterwards.  Which bytes landed where is left to the data clauses,
    so a push that is merely wrong is reported against the clause it breaks.
    """
    scenario = run.spec.scenario
    placements = list(run.caps.get("placements") or [])
    if placements:  # the baseline's caches where the backend declares it has memory
        scenario = scenario.with_(**{side: getattr(scenario, side).with_(placement=placements[0])
                                     for side in ("src", "dst") if getattr(scenario, side).placement not in placements})
    tb = Testbed(run, scenario, title="smoke check")
    # an isolated backend's every call is bounded (deadlines.DEFAULT_BOUND_S outside a test); the push is
    # bounded by ``limit`` in either mode
    try:
        try:
            tb.open()
        except HarnessError as exc:
            return str(exc)
        for node_name, node in (("local", tb.local), ("remote", tb.remote)):
            missing = missing_members(node, NODE_ATTRS, NODE_METHODS)
            if missing:
                return f"node {node_name} lacks protocol members: {', '.join(missing)}"
        missing_api = [n for n in API_NAMES if not hasattr(tb.api, n)]
        if missing_api:
            return f"node.api lacks {', '.join(missing_api)}"
        assert tb.src is not None
        src_data, dst_before = tb.before["src"], tb.before["dst"]  # what the testbed wrote into them
        roundtrip = diff(src_data, tb.read(tb.src), "src") + diff(dst_before, tb.read_dst(), "dst")
        if roundtrip:
            return f"read_tensor does not return what write_tensor wrote: {roundtrip[0]}"
        push = tb.call({})
        outcome = tb.push(push, bound=limit)
        if outcome.hung:
            return f"a valid push did not return within {limit:.0f}s: {push.code}"
        if outcome.exc is not None:
            return f"a valid push raised {describe_exception(outcome.exc)}: {push.code}"
        after = tb.read_dst()
        if len(after) == len(dst_before) and all(
            a.size == b.size and bool((a == b).all()) for a, b in zip(after, dst_before, strict=True)
        ):
            return f"a valid push returned but the destination reads back unchanged: {push.code}"
        return None
    except Exception as exc:  # noqa: BLE001 - anything here is an adapter problem
        return f"{describe_exception(exc)} during the smoke check"
    finally:
        tb.close()
        run.begin_test()  # the smoke check is not part of the run's figures


class SmokeCheck:
    def __init__(self, state: RunState) -> None:
        self.state = state

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        state = self.state
        if session.config.option.collectonly:
            return
        if session.config.pluginmanager.has_plugin("dsession"):
            state.collection_known = False  # a pytest-xdist controller: the workers collect (selecting/collection.py)
        why = smoke_check(state.run)
        if not state.collection_known and state.isolation == "process":
            state.run.backend.close()  # a pytest-xdist controller calls the backend no more: its workers do
        if why is not None:
            state.result.code = exitcodes.ADAPTER_ERROR
            pytest.exit(f"adapter error: {why}", returncode=exitcodes.ADAPTER_ERROR)

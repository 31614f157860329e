"""The ``history`` procedure: the stateful suite.  One test per stream of ``generation.histories.streams``; each
runs histories of the backend's operations (hypothesis stateful testing, :mod:`.machine`) drawn from the spec's
domains, judges every push by the clause of its situation and every other step by the history clause, and
shrinks a failure to a minimal history whose call log is the reproduction.

Modules: ``world`` (the model), ``bed`` (the testbed of many nodes), ``draws`` (what a history draws),
``pushes`` (a push: its call and its judgement), ``pulls`` (a pull, in a run whose operation pulls: its plan,
call and judgement), ``blocks`` (a move of block lists), ``movers`` (what a pull and a move of blocks share, and the
companion), ``mover_transfers`` (a pull's or a move's own transfer: planned, judged, followed), ``mover_situations``
(its situations), ``mover_delays`` (its delays within and past the budget), ``machine`` (the rules and
push_cache's situations).

A test is marked with every clause its histories judge (those the backend's capabilities allow), so the
clauses are covered by it; a failure names the one clause whose promise broke (``failed_clauses``).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.errors import FlakyStrategyDefinition
from hypothesis.stateful import run_state_machine_as_test

from ...inputs import strategies
from ...running.context import RunContext
from ...running.profiles import CERTIFY_EXAMPLES
from ...spec import Clause, Level
from ...spec.model import HISTORY_PROCEDURE, Histories
from ...spec.paths import schema_enum
from ...testbed.testbed import missing_capabilities
from ..common import require
from ..registry import Item, procedure
from ..streams import examples, shrinking_within, stream_seed
from .draws import fits
from .machine import SITUATIONS, machine_for
from .pushes import HistoryRun

__all__ = ["SITUATIONS"]

#: a history's time bound (the pytest-timeout of its test grows by this much per history), and what each push
#: of its stream's long run adds: a thousand pushes, each judged on its destination and every cache read every 16,
#: may take a minute through node processes on other hosts under load (in process, seconds); a hang is caught per
#: call long before
SECONDS_PER_HISTORY = 30
SECONDS_PER_LONG_RUN_PUSH = 0.3
#: the situation whose clause says what a push that took longer than sync_kv_timeout may do
OVERTIME = "delay_over_layers"
#: the levels whose promises histories judge (a should clause's exact status is a compatibility matter)
JUDGED = (Level.MUST, Level.MAY)


def _supported(run: RunContext, clause: Clause) -> bool:
    return not missing_capabilities(run.caps, clause.requires)


def situations(run: RunContext) -> dict[str, Clause]:
    """The situations a history can judge on this backend: declared by a clause of the release whose
    capabilities the backend has."""
    return {name: c for name, c in run.selected.situations().items() if _supported(run, c)}


def invalid_rules(run: RunContext) -> tuple[tuple[Clause, str], ...]:
    """(clause, generate rule) pairs a push may be broken by: must and may clauses of the release."""
    return tuple((c, r) for c in run.selected.clauses if c.generate is not None and c.level in JUDGED
                 and _supported(run, c) for r in c.generate.rules)


def judged_clauses(run: RunContext, clause: Clause) -> tuple[str, ...]:
    """The other clauses a history test judges (its marks)."""
    ids = [c.id for c in situations(run).values()] + [c.id for c, _ in invalid_rules(run)]
    return tuple(i for i in dict.fromkeys(ids) if i != clause.id)


def history_items(run: RunContext, clause: Clause) -> list[Item]:
    gen = run.spec.generation
    hist = gen.histories if gen is not None else None
    if hist is None:
        return []
    also = judged_clauses(run, clause)
    return [Item(name, stream, examples(run, f"history_{name}"), also=also,
                 seconds_per_example=SECONDS_PER_HISTORY + math.ceil(stream.pushes * SECONDS_PER_LONG_RUN_PUSH))
            for name, stream in hist.streams.items()]


def _overtime(run: RunContext, hist: Histories) -> Clause | None:
    """The clause that says what a transfer that took longer than its node's budget may do: the spec's
    ``histories.overtime`` where it names one (of this release), else the clause of the situation OVERTIME."""
    if hist.overtime is None:
        return run.selected.situations().get(OVERTIME)
    return next((c for c in run.selected.clauses if c.id == hist.overtime), None)


def _profile() -> settings:
    current = settings.default
    assert current is not None
    return current


@procedure(HISTORY_PROCEDURE, history_items)
def run_history(run: RunContext, clause: Clause, item: Item) -> None:
    __tracebackhide__ = True
    require(run, clause.requires)
    gen = run.spec.generation
    hist = gen.histories if gen is not None else None
    assert hist is not None
    stream = item.data
    dom = strategies.domain(run.spec, Level.MUST, run.caps, run.params)
    max_bytes = run.caps.get("max_cache_bytes")
    if stream.layouts == "models" and not any(m.data_type in dom.itemsize and fits(m, dom.itemsize[m.data_type],
                                                                                   max_bytes)
                                              for m in hist.model_layouts):
        pytest.skip(f"not supported: max_cache_bytes ({max_bytes}) holds no model layout of the spec")
    profile = _profile()
    scale = min(1.0, profile.max_examples / CERTIFY_EXAMPLES)
    judged = {n: c for n, c in situations(run).items() if stream.situations is None or n in stream.situations}
    h = HistoryRun(run, clause, stream, hist, dom, judged, invalid_rules(run) if stream.situations is None else (),
                   tuple(schema_enum("node", "role")), int(stream.pushes * scale), max_bytes,
                   _overtime(run, hist))
    machine: Any = machine_for(h)
    if profile.derandomize:
        machine = seed(stream_seed(clause.id, item.key))(machine)
    phases = [p for p in profile.phases if (stream.shrink and run.shrink_s > 0) or p is not Phase.shrink]
    with shrinking_within(run.shrink_s):
        run_machine(machine, settings(
            profile, max_examples=item.examples, stateful_step_count=stream.steps, report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck), phases=phases))


def run_machine(machine: Any, config: settings) -> None:
    """Run a stream's histories; where hypothesis's replay of a failed history drew differently
    (FlakyStrategyDefinition), what the first run failed with is added to what it raises."""
    __tracebackhide__ = True
    try:
        run_state_machine_as_test(machine, settings=config)
    except FlakyStrategyDefinition as exc:
        machine.turns.name_failure(exc)
        raise

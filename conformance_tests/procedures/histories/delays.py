"""Durations as a domain of the stateful suite: how long an injected delay is, as a fraction of its node's
llm.SyncKvCacheWaitTime, drawn over the whole interval below the budget in the spec's classes
(``generation.histories.delays``), and what budget a configuration history's first node has so that its first
delay can take the class its turn gives it within what the history may wait."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.errors import FlakyStrategyDefinition, HypothesisException

from ...coverage.durations import delay_keys, fraction_class
from ...spec.model import Bounds, DelayClass, Delays
from ..calls import SETTLE_S

if TYPE_CHECKING:
    from .machine import HistoryMachine
    from .world import NodeState


@dataclass(frozen=True)
class Delay:
    """A delay drawn within the budget: its class, and what all its layers wait together (ms)."""

    within: DelayClass
    total_ms: float

    def per_layer_ms(self, layers: int) -> float:
        return self.total_ms / layers


@dataclass
class Turns:
    """The turns of a stream run's histories.  Each history takes the next, until one fails: from then on hypothesis
    only replays and shrinks that one, so every later history keeps its turn (a replay that drew another class
    would pass, and the failure would read as flaky)."""

    next: int = 0
    held: int | None = None
    #: what the first history that failed raised: hypothesis then replays it, and a replay that draws differently
    #: (its failure came from timing, or from a backend's state) ends in FlakyStrategyDefinition alone
    failure: BaseException | None = None

    def take(self) -> int:
        if self.held is not None:
            return self.held
        self.next += 1
        return self.next - 1

    def ended(self, turn: int, exc: BaseException | None) -> None:
        """A history of ``turn`` ended (``exc``: what it raised; hypothesis's own signals are no failure)."""
        if self.held is None and isinstance(exc, Exception) and not isinstance(exc, HypothesisException):
            self.held, self.failure = turn, exc

    def name_failure(self, exc: FlakyStrategyDefinition) -> None:
        """Add to ``exc``, from a replay, what the history's first run failed with: the failure the reader needs,
        which hypothesis's own text leaves out."""
        if self.failure is not None:
            exc.add_note(f"the first run of this history failed, raising {type(self.failure).__name__}: "
                         f"{self.failure}"[:4000])


def edge_class(delays: Delays, index: int) -> DelayClass:
    """The class of the first delay of a stream's history ``index``: the nearest the budget first, then down, in
    turn (so that every class occurs in any run of as many histories, and a run of one reaches the edge)."""
    return delays.within[-1 - index % len(delays.within)]


def top_fraction(delays: Delays, within: DelayClass) -> float:
    """The highest fraction of the budget a delay of ``within`` is drawn below."""
    return min(within.below, delays.draw_below)


def beyond_per_layer_ms(delays: Delays, budget_ms: int) -> float:
    """Each layer's delay of a transfer that times out at its first layer: ``delays.beyond`` of the budget, and
    20 ms past it at least (a budget of a few ms leaves a native transfer's own time no room to be told from it)."""
    return max(budget_ms * delays.beyond, budget_ms + 20)


def exceeded_ms(delays: Delays, budget_ms: int) -> int:
    """What a transfer timed out by a delay of :func:`beyond_per_layer_ms` may wait: its budget, then the layer's
    delay (a backend may finish waiting for it)."""
    return math.ceil(budget_ms + beyond_per_layer_ms(delays, budget_ms))


def within_ms(delays: Delays, budget_ms: int) -> int:
    """The most a delay within ``budget_ms`` waits: the top fraction of the nearest class (what a history charges
    for one whatever class it draws, so that what it draws next does not turn on the class)."""
    return math.ceil(top_fraction(delays, delays.within[-1]) * budget_ms)


def edge_timeout(delays: Delays, within: DelayClass, wait_ms: int, top_ms: int, bounds: Bounds) -> int:
    """The budget of the node whose delay is a history's first: as high as ``top_ms`` (the ladder's top) while a
    delay up to the class's top fraction of it still fits ``wait_ms``; in the domain."""
    return min(bounds.max, max(bounds.min, min(top_ms, math.floor(wait_ms / top_fraction(delays, within)))))


def totals_us(delays: Delays, within: DelayClass, budget_ms: int, left_ms: float) -> tuple[int, int] | None:
    """The delays (µs, all layers together) of class ``within`` on a budget of ``budget_ms`` that fit ``left_ms``:
    the class's whole interval, up to its top fraction; None when none fits."""
    top = top_fraction(delays, within)
    low = max(1, math.ceil(within.start * budget_ms * 1000))
    high = min(math.ceil(top * budget_ms * 1000) - 1, math.floor(left_ms * 1000))
    # the products above are rounded floats: step to the bounds the classes' own test (fraction) puts them in,
    # so a delay at the interval's edge is of its class (0.333 * 11097 ms rounds up to the next class's start)
    while low <= high and fraction(low / 1000, budget_ms) < within.start:
        low += 1
    while high >= low and fraction(high / 1000, budget_ms) >= top:
        high -= 1
    return (low, high) if low <= high else None


def draw_within(draw: Any, delays: Delays, budget_ms: int, left_ms: float,
                within: DelayClass | None = None) -> Delay | None:
    """A delay within ``budget_ms`` that fits ``left_ms``: of class ``within``, or of a class drawn among those that
    fit; its length drawn over the class's interval.  None: none fits."""
    classes = [within] if within is not None else list(delays.within)
    fits = [(c, r) for c in classes if (r := totals_us(delays, c, budget_ms, left_ms)) is not None]
    if not fits:
        return None
    cls, (low, high) = fits[0] if len(fits) == 1 else draw(st.sampled_from(fits), label="delay class")
    # a seed mapped onto the interval: its choice's bounds do not turn on the class (hypothesis replays a
    # history's choices in another turn) and its values spread over the whole interval
    seed = draw(st.integers(0, 2**16), label=f"{cls.name} delay")
    total = low + (high - low) * seed // 2**16
    return Delay(cls, total / 1000)


def fraction(total_ms: float, budget_ms: int) -> float:
    return total_ms / budget_ms


def roomiest_link(m: HistoryMachine, links: list[tuple[int, int]], left_ms: int) -> tuple[int, int]:
    """The link whose client's budget leaves a delay the most room within what the history may still wait
    (``left_ms``; ties: the lowest nodes)."""
    return max(links, key=lambda p: (min(m.world.nodes[p[0]].timeout_ms, 2 * left_ms), -p[0], -p[1]))


def inject_delay(m: HistoryMachine, client: NodeState, name: str, per_layer_ms: float, layers: int,
                 budget_ms: int) -> tuple[float, float, str]:
    """Inject on ``client`` a delay of ``per_layer_ms`` for each of the ``layers`` of a transfer under a budget of
    ``budget_ms``, and record its class as reached (coverage kind budget_fractions).  Returns what the transfer
    may wait in all (s: the delay, then the budget), how long after its start a delayed layer a timeout did not
    stop may still write (s), and its label (situation ``name``, the class and the share of the budget)."""
    m.bed.inject_fault(client, {"kind": "delay", "seconds": per_layer_ms / 1000})
    delay_s = per_layer_ms * layers / 1000
    share = fraction(per_layer_ms * layers, budget_ms)
    m.h.run.counters.coverage |= delay_keys(m.h.run.spec, share)
    what = f"{name}: a {fraction_class(m.h.run.spec, share)} delay, {share:.3f} of {budget_ms} ms"
    return delay_s + budget_ms / 1000, min(delay_s, (budget_ms + per_layer_ms) / 1000) + SETTLE_S, what

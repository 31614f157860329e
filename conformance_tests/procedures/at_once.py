"""Several pushes at once: threads released together, then each push judged on its own, exactly as if it had been
the only one, over the bytes the others wrote.

Both the ``concurrent`` procedure (one test per relation) and a history's concurrent step make their pushes here;
they differ only in what each push's judgement takes the other destinations to hold (the procedure excuses them:
each is judged by its own push; a history models them) and in how a failure is named.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..judging import oracle
from ..judging.differences import Difference
from ..judging.judge import effect_problems, outcome_problem
from ..judging.judged_push import Push
from ..judging.observation import Observation
from ..spec import Expectation
from ..testbed.testbed import Outcome, Testbed

#: how long the threads wait for each other at the start line
BARRIER_S = 10

Model = Mapping[str, list[np.ndarray]]


def push_at_once(bed: Testbed, pushes: Sequence[Push], bound: float) -> tuple[list[Outcome], list[int]]:
    """Make ``pushes`` from threads released at once, each waited for up to ``bound`` seconds; the script says
    them in turn.  Returns every push's outcome and the pushes that had not returned (hung)."""
    n = len(pushes)
    results: list[BaseException | None] = [None] * n
    seconds = [0.0] * n
    barrier = threading.Barrier(n)
    fns = [getattr(push.local.cache_manager, push.operation) for push in pushes]

    def run(i: int) -> None:
        call = pushes[i].call
        assert call is not None
        args, kwargs = call.build()
        barrier.wait(timeout=BARRIER_S)
        start = time.monotonic()
        try:
            fns[i](*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            results[i] = exc
        seconds[i] = time.monotonic() - start

    bed.rec.comment(f"{n} threads at once (the script makes them in turn):")
    for push in pushes:
        bed.rec.lines += [f"local = {push.local_name}", push.code]
    workers = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(bound)
    hung = [i for i, t in enumerate(workers) if t.is_alive()]
    return [Outcome(results[i], seconds[i]) for i in range(n)], hung


def landed(bed: Testbed, pushes: Sequence[Push], base: Model) -> dict[str, list[np.ndarray]]:
    """The destinations of ``pushes`` once they all landed, by the oracle, each from its bytes in ``base`` (the
    pushes write disjoint targets, so in any order)."""
    state: dict[str, list[np.ndarray]] = {}
    for push in pushes:
        src, dst, call = push.src, push.dst, push.call
        assert src is not None and dst is not None and call is not None
        out = state.get(dst.name, base[dst.name])
        transfer = oracle.plan(call.raw(), src.layout, bed.default_tnpl,
                               push.operation_or(bed.run.spec.operation))
        if transfer is not None:
            out = oracle.expected_destination(base[src.name], out, transfer, src.layout, dst.layout)
        state[dst.name] = out
    return state


def others_into_own(bed: Testbed, pushes: Sequence[Push], returned: Sequence[int], i: int,
                    base: Model) -> dict[str, list[np.ndarray]]:
    """Push ``i``'s destination as the other pushes into it that returned left it (from ``base``)."""
    dst = pushes[i].dst
    assert dst is not None
    same = [pushes[j] for j in returned if j != i and (other := pushes[j].dst) is not None and other.name == dst.name]
    return {dst.name: landed(bed, same, base).get(dst.name, base[dst.name])}


@dataclass(frozen=True)
class Judged:
    """One push's judgement: why its outcome is wrong (None: allowed), what its side effects got wrong."""

    index: int
    obs: Observation
    problem: str | None
    problems: list[Difference]


def judge_each(bed: Testbed, pushes: Sequence[Push], outcomes: Sequence[Outcome],
               expectations: Sequence[Expectation], models: Sequence[Model],
               excused: Sequence[frozenset[str]]) -> Iterator[Judged]:
    """Each push judged on its own: by its expectation, over the testbed's bytes with ``models[i]`` in place of
    the caches it names (what the other pushes wrote), differences in the caches ``excused[i]`` left out (judged
    by their own pushes).  The testbed's bytes are as they were again before each judgement is yielded; a side
    effect is judged only where the outcome is allowed."""
    for i, push in enumerate(pushes):
        kept = dict(bed.before)
        bed.before.update(models[i])
        obs = Observation(bed, push, outcomes[i])
        try:
            problem = outcome_problem(expectations[i], obs)
            problems = [] if problem else [d for d in effect_problems(expectations[i], obs)
                                           if d.cache not in excused[i]]
        finally:
            bed.before.clear()
            bed.before.update(kept)
        yield Judged(i, obs, problem, problems)

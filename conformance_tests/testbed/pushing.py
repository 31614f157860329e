"""A testbed's push: push_cache called once under a deadline, counted, measured for coverage, and its outcome."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..coverage import push_keys
from ..isolation.executor import BackendLost
from ..judging.push_features import features
from ..running.deadlines import Hung
from .errors import HarnessError

if TYPE_CHECKING:
    from ..judging.judged_push import Push
    from .testbed import CacheInfo, Outcome, Testbed


def layout_key(*infos: CacheInfo | None) -> str:
    """A push's layout as the run's distinct-layouts count keys it: its caches' descriptions and memory."""
    return "->".join(f"{i.num_tensors}x{i.shape}:{i.data_type}:{i.placement}:{'reg' if i.guarded else 'alloc'}"
                     for i in infos if i is not None)


class Pusher:
    """The pushes of ``bed``.  ``outcome`` is testbed.py's Outcome record, given rather than imported: the testbed
    imports this module, and the kit's imports form no circle."""

    def __init__(self, bed: Testbed, outcome: type[Outcome]) -> None:
        self.bed = bed
        self.outcome = outcome

    def push(self, push: Push, *, bound: float | None = 30.0) -> Outcome:
        """Run push_cache once as ``push`` aims it (logged as the call under test); with ``bound`` a hang becomes
        an Outcome."""
        bed, call = self.bed, push.call
        assert call is not None, "a push is made with its arguments"
        bed.rec.lines += ["try:", f"    result = {call.code}", "except Exception as exc:  # noqa: BLE001",
                          "    outcome = exc", "else:", "    outcome = None"]
        counters = bed.run.counters
        # the run's operation's calls, layouts and coverage (a history's companion of another operation is not one)
        if push.operation_or(bed.run.spec.operation) == bed.run.spec.operation:
            counters.push_calls += 1
            counters.layouts.add(layout_key(push.src, push.dst))
            counters.coverage |= push_keys(bed.run.spec, bed.run.signature, call, push.src, push.dst)
        start = time.monotonic()
        try:
            posargs, kwargs = call.build()
        except Exception as exc:  # noqa: BLE001 - building a key may raise; that is part of the outcome
            return self.outcome(exc, time.monotonic() - start, phase="args", started=start)
        outcome = self.call_push(getattr(push.local.cache_manager, push.operation), posargs, kwargs, bound, start)
        self.record(push, outcome)
        return outcome

    def call_push(self, fn: Any, posargs: list[Any], kwargs: dict[str, Any], bound: float | None,
                  start: float) -> Outcome:
        made = self.outcome
        try:
            if bound is None:
                result = fn(*posargs, **kwargs)
            else:
                result = self.bed.run.deadlines.call(fn, *posargs, bound=bound, **kwargs)
        except Hung:
            return made(None, time.monotonic() - start, hung=True, started=start)
        except BackendLost as exc:
            if exc.hung:
                return made(None, time.monotonic() - start, hung=True, started=start, detail=str(exc))
            raise  # the backend's process died: an error row, not a verdict on push_cache
        except HarnessError:
            raise  # e.g. an answer that is not data: an error row, never an outcome to judge
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            return made(exc, time.monotonic() - start, started=start)
        return made(None, time.monotonic() - start, result=result, started=start)

    def record(self, push: Push, outcome: Outcome) -> None:
        """The push's features, for the likely-cause analysis (the judge says which class they count in)."""
        bed = self.bed
        assert push.call is not None
        op = push.operation_or(bed.run.spec.operation)
        noted = features(push.call.raw(), push.src, push.dst, bed.default_tnpl, (op.src_entries, op.dst_entries))
        noted["returned"] = outcome.exc is None and not outcome.hung
        bed.run.counters.last_push = noted

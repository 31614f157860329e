"""The steps a case may run after its scenario is built and before the call under test, each bound to its name
in the schema's ``steps`` enum."""

from __future__ import annotations

from collections.abc import Callable

from ..testbed.errors import HarnessError
from ..testbed.testbed import Testbed
from .common import per_call_bound

Step = Callable[[Testbed], None]
STEPS: dict[str, Step] = {}


def step(name: str) -> Callable[[Step], Step]:
    def deco(fn: Step) -> Step:
        STEPS[name] = fn
        return fn
    return deco


@step("push")
def _push(tb: Testbed) -> None:
    push = tb.call({})
    outcome = tb.push(push, bound=per_call_bound(tb.run))
    if outcome.exc is not None or outcome.hung:
        raise HarnessError("the first (valid) push", f"{outcome.describe()}: {push.code}")
    tb.before["dst"] = tb.read_dst()  # what the first push wrote is the new "before"


@step("unlink")
def _unlink(tb: Testbed) -> None:
    tb.unlink()


@step("deallocate_dst")
def _deallocate(tb: Testbed) -> None:
    tb.deallocate("dst")


@step("deallocate_src")
def _deallocate_src(tb: Testbed) -> None:
    tb.deallocate("src")


@step("allocate_dst")
def _allocate_dst(tb: Testbed) -> None:
    tb.renew_dst("late")


@step("allocate_bystander")
def _bystander(tb: Testbed) -> None:
    # bound to no key: a blocks cache bound to the destination's model_id would be what the call's key names, and
    # the bystander is there to take memory a freed cache gave back, not to be the transfer's target
    tb.fill_sentinel(tb.make_cache("bystander", "remote", tb.scenario.dst.with_(cache_keys=(), model_id=None)))

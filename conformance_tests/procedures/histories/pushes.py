"""One push of a history: what it is (a :class:`Plan` over the model), the call that makes it (in a calling form
the signature allows), and its judgement by the clause of its situation, exactly as a clause test judges its
call; what the judgement read becomes the model's bytes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...inputs import strategies
from ...inputs.values import Value
from ...judging.judge import fail, judge
from ...judging.judged_push import Push
from ...judging.observation import Observation
from ...running.context import RunContext
from ...spec import Clause, Expectation, Signature
from ...spec.expect import allows_success, envelope
from ...spec.model import Histories, HistoryStream, Operation
from ...testbed.testbed import Call, Outcome
from ..calls import raised_in_time
from ..common import per_call_bound
from ..transfer_keys import batch_key
from .bed import HistoryBed
from .world import CacheState, NodeState, World

#: the calling forms a history draws: every argument by keyword, every argument positionally (in the
#: prototype's order), or only the arguments that differ from the signature's defaults (by keyword)
STYLES = ("keywords", "positional", "defaults")


@dataclass(frozen=True)
class HistoryRun:
    """What every history of one stream works with."""

    run: RunContext
    clause: Clause  # the history clause: a valid push, and every check outside a push, are its promises
    stream: HistoryStream
    hist: Histories
    dom: strategies.Domain
    situations: Mapping[str, Clause]  # the situations this run can judge (declared, and supported)
    invalid: tuple[tuple[Clause, str], ...]  # (clause, generate rule) pairs a push may break
    roles: tuple[str, ...]
    long_run: int  # pushes over one link at the start of each history
    max_bytes: int | None  # the backend's max_cache_bytes
    #: the clause saying what a push whose execution time exceeds sync_kv_timeout may do (the situation
    #: delay_over_layers's, whatever the backend's faults): a push that took that long may have done it
    overtime: Clause | None = None

    @property
    def has_tnpl(self) -> bool:
        return "tensor_num_per_layer" in self.run.params


@dataclass(frozen=True)
class Plan:
    """A push: from ``src`` on ``client`` into the cache ``cache_id`` of ``server`` (``dst`` when the history
    knows it), its batch entries, layers and calling form."""

    client: NodeState
    server: NodeState
    src: CacheState
    dst: CacheState | None
    cache_id: int
    tnpl: int
    src_range: tuple[int, ...] | None
    dst_range: tuple[int, ...] | None
    src_batch: int
    dst_batch: int
    style: str = "keywords"
    size: int = -1
    notes: tuple[str, ...] = field(default=())

    @property
    def link(self) -> tuple[int, int]:
        return (self.client.index, self.server.index)

    @property
    def layers(self) -> int:
        if self.src_range is not None:
            return len(range(*self.src_range))
        return self.src.num_tensors // self.tnpl if self.tnpl > 0 else 0

    def describe(self) -> str:
        rng = "" if self.src_range is None and self.dst_range is None else f" ranges {self.src_range}->{self.dst_range}"
        dst = self.dst.name if self.dst is not None else f"cache id {self.cache_id}"
        return (f"{self.client.name}:{self.src.name}[{self.src_batch}] -> {self.server.name}:{dst}[{self.dst_batch}], "
                f"tnpl {self.tnpl}{rng}, size {self.size}, {self.style}" + (f" ({'; '.join(self.notes)})"
                                                                          if self.notes else ""))


def call_for(h: HistoryRun, bed: HistoryBed, plan: Plan, *, batch_code: tuple[str, str] | None = None) -> Call:
    """The push_cache call of ``plan`` in its calling form; ``batch_code``: the source text of the two batch
    indices (a loop's), in place of their values."""
    sig = h.run.signature
    dst_name = plan.dst.name if plan.dst is not None else None
    key_id = Value(plan.cache_id, f"{dst_name}.cache_id" if dst_name else repr(plan.cache_id))
    src_b, dst_b = batch_code or (repr(plan.src_batch), repr(plan.dst_batch))
    key = batch_key(bed.api, plan.server.cluster_id, plan.cache_id, plan.dst_batch, key_id.code, dst_b)

    def rng(r: tuple[int, ...] | None) -> Value:
        return Value(None if r is None else range(*r), "None" if r is None else f"range{r!r}".replace(",)", ")"))

    given: dict[str, Value] = {
        "dst_cache_key": key,
        "src_cache": Value(plan.src.info.cache, plan.src.name),
        "src_batch_index": Value(plan.src_batch, src_b),
        "src_layer_range": rng(plan.src_range),
        "dst_layer_range": rng(plan.dst_range),
        "size": Value(plan.size, repr(plan.size)),
        "tensor_num_per_layer": Value(plan.tnpl, repr(plan.tnpl)),
    }
    return in_style(sig, given, plan.style, bed.run.spec.api)


def in_style(sig: Signature, given: Mapping[str, Value], style: str, api: str, **fields: Any) -> Call:
    """The call of ``api`` passing ``given`` (those its signature ``sig`` takes) in calling form ``style``
    (:data:`STYLES`): by keyword; positionally in the prototype's order (where every declared parameter is given;
    a name taken through ``**kwargs`` by keyword still); or only what differs from the signature's defaults (a
    keyword of ``**kwargs`` whose default the spec does not state: left out where None).  ``fields``: the rest of
    the :class:`Call`."""
    defaulted = set(sig.defaulted)
    values: dict[str, Value] = {}
    for p in sig.declared:
        if p.name not in given:
            continue
        if style == "defaults" and p.name in defaulted and given[p.name].obj == p.default:
            continue
        values[p.name] = given[p.name]
    for name in sig.through_kwargs:
        default = sig.default(name)  # None where the spec states none
        if name not in values and name in given and not (style == "defaults" and given[name].obj == default):
            values[name] = given[name]
    positional = style == "positional" and all(n in values for n in (p.name for p in sig.declared))
    return Call(values, api, positional=positional, by_keyword=frozenset(sig.through_kwargs), **fields)


def observed(bed: HistoryBed, obs: Observation) -> None:
    """The bytes a passed judgement read are the model's from now on (a large cache whose windows matched no
    state the model knew, a partial push allowed, is read in full)."""
    for name, got in obs.read_back().items():
        if name in bed.caches:
            bed.before[name] = bed.full_read(name) if name in bed.inexact else got
    bed.inexact.clear()
    bed.candidates.clear()


def expect_success(bed: HistoryBed, push: Push, dst: CacheState | None) -> None:
    """What a push that succeeds leaves in its destination: the oracle's bytes (a large cache read in windows
    recognises them)."""
    if dst is not None and dst.name in bed.caches:
        bed.candidates[dst.name] = [Observation(bed, push, Outcome(None, 0.0)).expected_dst()]


def push_for(h: HistoryRun, bed: HistoryBed, plan: Plan) -> Push:
    """The push of ``plan``, with its call (the script does not name its nodes and caches: :meth:`HistoryBed.aim`
    does)."""
    return bed.aimed(plan.client.name, plan.server.name, plan.src.info,
                     plan.dst.info if plan.dst is not None else None, call_for(h, bed, plan))


def judge_push(h: HistoryRun, bed: HistoryBed, world: World, plan: Plan, clause: Clause,
               expectation: Expectation | None, label: str, *, settle_s: float = 0.0,
               bound_extra: float = 0.0) -> Outcome:
    """Make the push of ``plan`` and judge it by ``expectation`` (default: every outcome ``clause`` or one of its
    cases allows) in the clause's name; a failure names that clause.  A push that raised under a fault, or raised
    a timeout its own time explains, leaves its link ``faulted``."""
    __tracebackhide__ = True
    dst_info = plan.dst.info if plan.dst is not None else None
    push = bed.aim(plan.client, plan.server, plan.src.info, dst_info,
                   dst_readable=plan.dst is not None and not plan.dst.freed and plan.server.alive)
    push = push.with_call(call_for(h, bed, plan))
    expect_success(bed, push, plan.dst)
    outcome = bed.push_call(push, per_call_bound(h.run, extra=bound_extra))
    world.pushed_over(plan.link)
    given = expectation if expectation is not None else clause_envelope(clause)
    expect = overtime(h, plan, outcome, given)
    obs = judge(bed, push, outcome, expect, clause.id, f"{label}: {plan.describe()}",
                settle_until=outcome.started + settle_s if settle_s else 0.0)
    left(world, plan.link, plan.client, plan.src, outcome, given, expect)
    observed(bed, obs)
    bed.rec.verdict = []
    return outcome


def judge_transfer(h: HistoryRun, bed: HistoryBed, world: World, client: NodeState, server: NodeState,
                   src: CacheState, dst: CacheState | None, call: Call, op: Operation, label: str, *,
                   clause: Clause | None = None, bound_extra: float = 0.0, in_time: bool = False,
                   settle_s: float = 0.0) -> Outcome:
    """Make a transfer of the run's own operation or its companion (a pull, a move of blocks: ``call``, which
    ``client`` makes over its link to ``server``, from ``src`` into ``dst``; None: a cache the key names and the
    server does not have) and judge it by ``clause`` (default: the history clause, a valid transfer's), every
    outcome it or one of its cases allows, or, past a budget its bytes may need or under a fault, what the overtime
    clause allows too; one that raised there leaves its link ``faulted`` (made again before the next valid one).
    ``in_time``: under a fault, a refusal must come within one timeout of the client per layer; ``settle_s``: how
    long after its start a write may still land (a delayed layer a timeout did not stop)."""
    __tracebackhide__ = True
    clause = clause if clause is not None else h.clause
    dst_node = client if op.pulls else server
    push = bed.aim(client, server, src.info, dst.info if dst is not None else None,
                   dst_readable=dst is not None and not dst.freed and dst_node.alive, pulls=op.pulls)
    push = replace(push, call=call, kind=op, operation=call.api)  # a companion calls its own method
    expect_success(bed, push, dst)
    outcome = bed.push_call(push, per_call_bound(h.run, extra=bound_extra))
    link = (client.index, server.index)
    world.pushed_over(link)
    given = clause_envelope(clause)
    expect = overtime_of(h, client, src, outcome, given)
    obs = judge(bed, push, outcome, expect, clause.id, label,
                settle_until=outcome.started + settle_s if settle_s else 0.0)
    left(world, link, client, src, outcome, given, expect)
    if outcome.exc is not None and in_time:
        raised_in_time(bed, push, outcome, client.timeout_ms / 1000, clause.id, label)
    observed(bed, obs)
    bed.rec.verdict = []
    return outcome


def left(world: World, link: tuple[int, int], client: NodeState, src: CacheState, outcome: Outcome,
         given: Expectation, expect: Expectation) -> None:
    """What a transfer over ``link`` left it: ``faulted`` where it raised under a fault, or timed out (its clause,
    ``given``, lets it succeed, and it raised past a budget its bytes may need, which the overtime envelope excused:
    ``expect`` is not ``given``; one its clause expects refused is a refusal however long it took), not where it
    succeeded (which clause judges the next transfer over the link as it is); ``at_risk`` where it could have timed
    out, whatever it did (whether the link is made again before the next valid transfer: timing must not decide
    that)."""
    state = world.links.get(link)
    if state is None:
        return
    if could_time_out(client, src):
        state.at_risk = True
        state.undecided = state.undecided or allows_success(given)
    timed_out = expect is not given and allows_success(given)
    if outcome.exc is not None and (client.faulty or timed_out):
        state.faulted = True
    elif outcome.exc is None:
        state.faulted = False


def clause_envelope(clause: Clause) -> Expectation:
    """Every outcome the clause or one of its cases allows."""
    return envelope([clause.expect, *(c.expect for c in clause.cases)])


def overtime(h: HistoryRun, plan: Plan, outcome: Outcome, expect: Expectation) -> Expectation:
    """A push that raised after its node's sync_kv_timeout or longer may have done what the documentation says
    then (LLMException, the layers before pushed), but only where the situation can cause that: a delay or a
    dropped link injected on its node, or a budget its own bytes may need (1 ms is in the domain).  Under a
    budget far above what its bytes can take, and no fault, nothing excuses its exception: a link a backend left
    broken by an earlier timeout raises there as late as it likes, and is still judged."""
    return overtime_of(h, plan.client, plan.src, outcome, expect)


def overtime_of(h: HistoryRun, client: NodeState, src: CacheState, outcome: Outcome,
                expect: Expectation) -> Expectation:
    """:func:`overtime` of any transfer ``client`` makes from ``src`` (a push's, a pull's, a move of blocks)."""
    if h.overtime is None or outcome.exc is None or outcome.seconds * 1000 < client.timeout_ms:
        return expect
    if could_time_out(client, src):
        return envelope([expect, h.overtime.expect])
    return expect


def could_time_out(client: NodeState, src: CacheState) -> bool:
    """Whether a transfer ``client`` makes from ``src`` may time out with nothing wrong: under a fault injected on
    it, or a budget below what its bytes may take (:func:`natural_ms_of`)."""
    return client.faulty or client.timeout_ms < natural_ms_of(src)


#: what a push with no fault may take on a loaded machine before its bytes count (scheduling, a collection, a
#: node process's round trips): a budget below this plus its bytes' time can be what a push runs into
NATURAL_MS = 100
#: the slowest rate a push's bytes move at on a loaded machine, in bytes per millisecond (50 MB/s)
SLOW_BYTES_PER_MS = 50_000


def natural_ms(plan: Plan) -> float:
    """How long ``plan``'s push may take with no fault: :data:`NATURAL_MS` plus its source cache's bytes (an
    upper bound of what it moves) at :data:`SLOW_BYTES_PER_MS`."""
    return natural_ms_of(plan.src)


def natural_ms_of(src: CacheState) -> float:
    return NATURAL_MS + src.num_tensors * src.info.nbytes / SLOW_BYTES_PER_MS


def still(h: HistoryRun, bed: HistoryBed, label: str) -> None:
    """After a step that pushed nothing: every live cache, guard band and freed region as the model has it."""
    __tracebackhide__ = True
    problems = Observation(bed, None, Outcome(None, 0.0)).unchanged()
    if problems:
        bed.rec.comment(f"{label}: bytes changed where no push wrote")
        fail(h.clause.id, label, None, "bytes changed where no push wrote (every live cache, guard band and freed "
             "region must keep what the history wrote)", problems)


def loop_line(h: HistoryRun, bed: HistoryBed, plan: Plan, count: int, batches: Sequence[int]) -> list[str]:
    """A repro script's lines for ``count`` pushes of ``plan`` whose batch entries step with ``i``."""
    src_b, dst_b = batches
    code = call_for(h, bed, replace(plan, src_batch=0, dst_batch=0),
                    batch_code=(f"i % {src_b}", f"(i + 1) % {dst_b}")).code
    dst = plan.dst.name if plan.dst is not None else "None"
    return [f"local, remote, src, dst = {plan.client.name}, {plan.server.name}, {plan.src.name}, {dst}",
            f"for i in range({count}): {code}"]

"""Judging one call against an expectation form: its outcome, then every side effect, then the failure message
and the reproduction's own check.

The forms are the spec's (:mod:`conformance_tests.spec.expect`); their postconditions and side-effect rules
are the registered checks of :mod:`conformance_tests.judging.observation`. Every failure is an AssertionError whose
message shows the clause ID, the label of the example, the call and what differs.
"""

from __future__ import annotations

import builtins
import time
import traceback
from collections.abc import Sequence
from functools import singledispatch
from typing import Any

from ..spec.expect import AnyOf, Expectation, Raises, Succeeds, check_names
from ..testbed.errors import HarnessError
from ..testbed.testbed import Call, Outcome, Testbed, describe_exception
from . import oracle
from .differences import Difference, Where
from .judged_push import Push
from .observation import POSTCONDITIONS, WRITES, Observation
from .push_features import classes, failure_class, merge

#: failure details shown in a message before "… N more"
DETAIL_LINES = 12


class ExpectationError(Exception):
    """An expectation the judge cannot apply (the schema should have refused it)."""


def exception_class(name: str, api: Any) -> type[BaseException]:
    """The exception class ``name`` as the backend's api has it (LLMException), else the builtin."""
    cls = getattr(api, name, None)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        if name == "LLMException" and (issubclass(TypeError, cls) or issubclass(ValueError, cls)):
            # otherwise "raises LLMException" would accept a TypeError or ValueError
            raise HarnessError("node.api.LLMException", f"{cls.__name__} is a base class of TypeError/ValueError; "
                                                        "the adapter must expose the backend's own LLMException")
        return cls
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        return cls
    raise ExpectationError(f"unknown exception class {name!r}")


def raised_as(expectation: Raises, exc: BaseException | None, api: Any) -> bool:
    """Whether ``exc`` is one of the kinds ``expectation`` names."""
    return exc is not None and isinstance(exc, tuple(exception_class(n, api) for n in expectation.kinds))


# ------------------------------------------------------------------------------------------------ outcome


def _called(obs: Observation) -> str:
    """The method the judged call made (a companion's own, in a history), else the run's operation's."""
    return obs.push.operation if obs.push is not None else obs.tb.run.spec.api


@singledispatch
def outcome_problem(expectation: Expectation, obs: Observation) -> str | None:
    """Why the call's outcome (returned or raised, which exception, which status) is not the expected one."""
    raise ExpectationError(f"no judge for {expectation!r}")


@outcome_problem.register
def _(expectation: Raises, obs: Observation) -> str | None:
    out, api = obs.outcome, obs.tb.api
    if out.hung or not raised_as(expectation, out.exc, api):
        return f"{_called(obs)} {out.describe()}, but the clause expects: {expectation.describe()}"
    got = getattr(out.exc, "status_code", None)
    if expectation.status:
        want = getattr(api.LLMStatusCode, expectation.status, None)
        if want is None:
            return f"node.api.LLMStatusCode has no member {expectation.status}"
        if got != want:
            assert out.exc is not None
            return (f"expected LLMException with {expectation.status} (= {int(want)}), but got status_code {got}: "
                    f"{describe_exception(out.exc)}")
    if expectation.status_is_member and (got is None or got not in list(api.LLMStatusCode)
                                         or got == api.LLMStatusCode.LLM_SUCCESS):
        return f"LLMException.status_code is {got!r}: not a member of node.api.LLMStatusCode other than LLM_SUCCESS"
    return None


@outcome_problem.register
def _(expectation: Succeeds, obs: Observation) -> str | None:
    if obs.outcome.hung or obs.outcome.exc is not None:
        return f"{_called(obs)} {obs.outcome.describe()}, but the clause expects: {expectation.describe()}"
    return None


@outcome_problem.register
def _(expectation: AnyOf, obs: Observation) -> str | None:
    if all(outcome_problem(a, obs) for a in expectation.allowed):
        return (f"outcome not in the allowed envelope ({expectation.describe()}): {_called(obs)} "
                f"{obs.outcome.describe()}")
    return None


# ------------------------------------------------------------------------------------------------ side effects


@singledispatch
def effect_problems(expectation: Expectation, obs: Observation) -> list[Difference]:
    """Bytes the call changed where the expectation does not allow it (or left unwritten where it must write)."""
    raise ExpectationError(f"no judge for {expectation!r}")


@effect_problems.register
def _(expectation: Raises, obs: Observation) -> list[Difference]:
    return WRITES[expectation.writes](obs)


@effect_problems.register
def _(expectation: Succeeds, obs: Observation) -> list[Difference]:
    return POSTCONDITIONS[expectation.post](obs)


@effect_problems.register
def _(expectation: AnyOf, obs: Observation) -> list[Difference]:
    """The side effects of the first alternative whose outcome matches and whose effects hold."""
    problems: list[Difference] = []
    for alt in expectation.allowed:
        if outcome_problem(alt, obs) is None:
            problems = effect_problems(alt, obs)
            if not problems:
                return []
    return problems


# ------------------------------------------------------------------------------------------------ reproduction


@singledispatch
def repro_lines(expectation: Expectation, clause_id: str, obs: Observation) -> list[str]:
    """The reproduction script's own check of the outcome (after the call under test)."""
    raise ExpectationError(f"no judge for {expectation!r}")


@repro_lines.register
def _(expectation: Raises, clause_id: str, obs: Observation) -> list[str]:
    kinds = expectation.kinds
    classes = ", ".join("api.LLMException" if n == "LLMException" else n for n in kinds) + ","
    out = [f"assert isinstance(outcome, ({classes})), f\"{clause_id}: expected {' or '.join(kinds)}, "
           "got {outcome!r}\""]
    if expectation.status:
        out.append(f"assert outcome.status_code == api.LLMStatusCode.{expectation.status}, "
                   f"f\"{clause_id}: expected {expectation.status}, got {{outcome.status_code}}\"")
    if expectation.writes == "none":
        out += ["for t, want in enumerate(dst_data):",
                f"    got = np.asarray({_holder(obs, 'dst')}.read_tensor(dst, t)).ravel()",
                f"    assert (got == want).all(), f\"{clause_id}: dst tensor {{t}} changed by a refused call\""]
    return out


def _holder(obs: Observation, side: str) -> str:
    """The script's name of the node holding the call's ``side`` cache (src or dst): a push's destination is on
    the node it calls, a pull's source is."""
    push = obs.push
    if push is None:
        return "remote" if side == "dst" else "local"
    remote = push.operation_or(obs.tb.run.spec.operation).remote_side == side
    return push.remote_name if remote else push.local_name


#: postconditions whose reproduction checks the destination byte for byte
_BYTE_CHECKED = ("exact", "returns_none", "targeted", "prefix")


@repro_lines.register
def _(expectation: Succeeds, clause_id: str, obs: Observation) -> list[str]:
    out = [f"assert outcome is None, f\"{clause_id}: expected success, got {{outcome!r}}\""]
    src, dst, transfer = obs.src, obs.dst, obs.transfer
    if expectation.post not in _BYTE_CHECKED or transfer is None or dst is None or src is None:
        return out
    n, offsets = oracle.entry_spans(transfer, src.layout, dst.layout, prefix=expectation.post == "prefix")
    return out + [
        "expected = [d.copy() for d in dst_data]",
        f"for s, d in {transfer.tensor_pairs()!r}:  # (source tensor, destination tensor) the spec's data rule moves",
        f"    for so, do in {offsets!r}:  # (source offset, destination offset) of each entry moved",
        f"        expected[d][do:do + {n}] = src_data[s][so:so + {n}]",
        "for t, want in enumerate(expected):",
        f"    got = np.asarray({_holder(obs, 'dst')}.read_tensor(dst, t)).ravel()",
        "    bad = np.flatnonzero(got != want)",
        f"    assert bad.size == 0, f\"{clause_id}: dst tensor {{t}}: {{bad.size}} bytes differ, first at offset "
        "{bad[0]}\"",
        "for t, want in enumerate(src_data):",
        f"    assert (np.asarray({_holder(obs, 'src')}.read_tensor(src, t)).ravel() == want).all(), "
        f"f\"{clause_id}: src tensor {{t}} "
        "changed\"",
    ]


@repro_lines.register
def _(expectation: AnyOf, clause_id: str, obs: Observation) -> list[str]:
    return [f"print('outcome:', repr(outcome))  # {clause_id} allows: {expectation.describe()}"]


# ------------------------------------------------------------------------------------------------ the verdict


class ClauseFailure(AssertionError):
    """A check failed: the promise of clause ``clause_id`` broke.  A test that checks several clauses (a history)
    fails only the clause its failing check names; the report attributes the failure to it."""

    def __init__(self, message: str, clause_id: str) -> None:
        super().__init__(message)
        self.clause_id = clause_id


def fail(clause_id: str, label: str, call: Push | Call | None, what: str, details: Sequence[object] = ()) -> None:
    """Fail the test with a message that shows the clause, the example, the call (or the push making it) and what
    differs (each detail as its text)."""
    __tracebackhide__ = True
    lines = [f"clause {clause_id} [{label}]\n  call: {call.code if call is not None else '-'}\n  {what}"]
    lines += [f"    {d}" for d in details[:DETAIL_LINES]]
    if len(details) > DETAIL_LINES:
        lines.append(f"    … {len(details) - DETAIL_LINES} more")
    raise ClauseFailure("\n".join(lines), clause_id)


def judge(tb: Testbed, push: Push, outcome: Outcome, expectation: Expectation, clause_id: str, label: str,
          *, settle_until: float = 0.0) -> Observation:
    """Check the ``outcome`` of ``push`` on ``tb`` and every side effect against ``expectation``; ``settle_until``
    (monotonic time) is when injected delays have fully passed, so a late write is seen.  Returns the
    observation (what it read)."""
    __tracebackhide__ = True
    call = push.call
    obs = Observation(tb, push, outcome)
    tb.rec.verdict = repro_lines(expectation, clause_id, obs)
    if outcome.phase == "args":
        raise HarnessError("building the call's arguments through node.api", outcome.describe())
    if outcome.hung:
        fail(clause_id, label, call, f"{push.operation} {outcome.describe()}, but the clause expects: "
             f"{expectation.describe()}")
    wait = settle_until - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    problem = outcome_problem(expectation, obs)
    noted = tb.run.counters.last_push
    if problem:
        _note_push(tb, noted, failed_as=failure_class(noted["returned"], False) if noted else None)
        fail(clause_id, label, call, problem, traceback_hint(outcome))
    problems = effect_problems(expectation, obs)
    if noted is not None:
        wrong_slice = any(p.where is Where.TARGETED for p in problems)
        _note_push(tb, noted, failed_as=failure_class(noted["returned"], wrong_slice) if problems else None,
                   slice_checked=bool(check_names(expectation) & SLICE_CHECKS))
    if problems:
        fail(clause_id, label, call, f"{push.operation} {outcome.describe()} as allowed ({expectation.describe()}), but "
             f"{where_memory_is_wrong(problems)}", problems)
    return obs


#: the postconditions that compare the targeted slice byte for byte
SLICE_CHECKS = frozenset({"exact", "returns_none", "targeted", "prefix"})


def _note_push(tb: Testbed, push: dict[str, Any] | None, *, failed_as: str | None, slice_checked: bool = False) -> None:
    """Count a judged push in the likely-cause analysis: a failing one under the class it is compared within, a
    passing one in the classes it belongs to."""
    if push is None:
        return
    if failed_as is not None:
        push["class"] = failed_as
        return
    for cls in classes(bool(push["returned"]), slice_checked):
        merge(tb.run.counters.push_features.setdefault(cls, {}), push)


#: what a failure message says of differences where nothing may be written, by where they are (in this order)
ELSEWHERE = ((Where.OUTSIDE, "bytes were written outside the targeted slices"),
             (Where.GUARD, "guard bytes around a tensor changed"),
             (Where.FREED, "freed memory changed"),
             (Where.UNCHANGED, "memory that must stay unchanged changed"),
             (Where.ENVELOPE, "destination bytes are neither their old value nor the pushed one"))


def where_memory_is_wrong(problems: Sequence[Difference]) -> str:
    """What the differences say, in a few words: the targeted slice holds wrong bytes, and/or bytes changed
    where nothing may be written (elsewhere in the destination, another cache, a guard band, freed memory, the
    source)."""
    # a destination read with other tensors or sizes than expected is no byte of the envelope: it is memory not
    # as the clause requires
    places = {Where.DESTINATION if p.where is Where.ENVELOPE and p.shape else p.where for p in problems}
    parts = ["the targeted slice holds wrong bytes"] if Where.TARGETED in places else []
    parts += [words for where, words in ELSEWHERE if where in places]
    if places - {Where.TARGETED, *(where for where, _ in ELSEWHERE)}:
        parts.append("memory is not as the clause requires")
    return "; ".join(parts)


def traceback_hint(outcome: Outcome) -> list[str]:
    """Where the backend raised (its last three frames), for a message."""
    if outcome.exc is None:
        return []
    return [f"at {f.filename}:{f.lineno} in {f.name}" for f in traceback.extract_tb(outcome.exc.__traceback__)[-3:]]

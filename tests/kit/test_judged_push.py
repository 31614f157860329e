"""The push being judged is a value (conformance_tests/judging/judged_push.py), not four testbed fields callers re-point:
the value is immutable, the judge takes it (and judges the caches it names, whatever the testbed's baseline), no
code aims a push by assigning a testbed's local/remote/src/dst, differences are typed records the judge sorts by
their fields, and the concurrent push is made and judged in one module."""

from __future__ import annotations

import ast
import dataclasses

import numpy as np
import pytest

from conformance_tests.judging.differences import Difference, Where
from conformance_tests.judging.judge import ClauseFailure, judge, where_memory_is_wrong
from conformance_tests.judging.judged_push import Push
from conformance_tests.judging.observation import Observation
from conformance_tests.judging.oracle import diff, outside_envelope
from conformance_tests.running.context import RunContext
from conformance_tests.spec.expect import parse_expect
from conformance_tests.testbed.testbed import Call, Outcome, Testbed
from reference_impl.backend import backend as reference
from tests.helpers import ROOT

EXACT = parse_expect({"outcome": "success", "post": "exact"})
CLAUSE = "push_cache.meta.judged_push"

#: the testbed fields that say which push is judged, and the methods that may still assign them: where a testbed
#: opens its objects, renews its baseline destination, or drops everything it holds
AIM_FIELDS = frozenset({"local", "remote", "src", "dst"})
ALLOWED = frozenset({("Testbed", "__init__"), ("Testbed", "open"), ("Testbed", "renew_dst"),
                     ("HistoryBed", "forget")})


@pytest.fixture
def tb():
    run = RunContext.for_backend(reference, "reference_impl.backend:backend")
    with Testbed(run, run.spec.scenario) as bed:
        yield bed


def test_a_push_is_an_immutable_value(tb):
    push = tb.call({})
    assert isinstance(push, Push) and isinstance(push.call, Call)
    assert (push.local, push.remote, push.src, push.dst) == (tb.local, tb.remote, tb.src, tb.dst)
    with pytest.raises(dataclasses.FrozenInstanceError):
        push.dst = None  # type: ignore[misc]
    bare = tb.baseline()
    assert bare.call is None and bare.code == "-"
    again = bare.with_call(push.call)
    assert again == push and again is not push and bare.call is None, "with_call makes a new value"


def test_the_judge_judges_the_caches_its_push_names_not_the_testbeds_baseline(tb):
    """A push into a second destination is judged there: its bytes pass as pushed, a byte flipped in its targeted
    slice fails, and the testbed's baseline destination is never re-pointed."""
    other = tb.make_cache("other", "remote", tb.scenario.dst, guard=True)
    tb.fill_sentinel(other)
    aimed = tb.aimed("local", "remote", tb.src, other)
    push = aimed.with_call(Call(tb.calls.values(aimed, {}), aimed.operation))
    outcome = tb.push(push)
    assert outcome.exc is None, outcome.describe()
    obs = judge(tb, push, outcome, EXACT, CLAUSE, "into other")
    assert obs.dst is other and tb.dst is not None and tb.dst.name == "dst", "the baseline is left as it was"
    assert obs.read_back()["other"] is not None
    tensor = obs.transfer.tensor_pairs()[0][1]
    stride = other.stride
    ((_, dst_entry),) = obs.transfer.entries
    at = dst_entry * stride
    byte = np.asarray(tb.remote.read_tensor(other.cache, tensor), dtype=np.uint8).ravel().copy()
    byte[at] ^= 0xFF
    tb.remote.write_tensor(other.cache, tensor, byte)
    with pytest.raises(ClauseFailure, match="the targeted slice holds wrong bytes"):
        judge(tb, push, outcome, EXACT, CLAUSE, "into other, a byte flipped")


def test_an_observation_without_a_push_only_checks_nothing_changed(tb):
    obs = Observation(tb, None, Outcome(None, 0.0))
    assert obs.call is None and obs.transfer is None and obs.unchanged() == []


class _Aiming(ast.NodeVisitor):
    """Assignments to an attribute named local/remote/src/dst (on any object), each with its class and method."""

    def __init__(self, path: str) -> None:
        self.path, self.owner, self.method, self.found = path, "", "", []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        outer, self.owner = self.owner, node.name
        self.generic_visit(node)
        self.owner = outer

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self.method = self.method, node.name
        self.generic_visit(node)
        self.method = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def _targets(self, targets: list[ast.expr]) -> None:
        for target in targets:
            for leaf in ast.walk(target):
                if (isinstance(leaf, ast.Attribute) and leaf.attr in AIM_FIELDS and isinstance(leaf.ctx, ast.Store)
                        and (self.owner, self.method) not in ALLOWED):
                    self.found.append(f"{self.path}:{leaf.lineno} {self.owner}.{self.method}: {ast.unparse(leaf)} =")

    def visit_Assign(self, node: ast.Assign) -> None:
        self._targets(list(node.targets))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._targets([node.target])

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._targets([node.target])


def _assignments_aiming_a_push() -> list[str]:
    """``path:line Class.method: target =`` of every assignment to an attribute named local/remote/src/dst in the
    kit, outside :data:`ALLOWED`."""
    found: list[str] = []
    for path in sorted((ROOT / "conformance_tests").rglob("*.py")):
        scan = _Aiming(path.relative_to(ROOT).as_posix())
        scan.visit(ast.parse(path.read_text(encoding="utf-8")))
        found += scan.found
    return found


def test_no_code_aims_a_push_by_re_pointing_a_testbed():
    """The judged push is handed over as a value: no assignment to a testbed's local/remote/src/dst remains but
    where the testbed opens, renews or drops its objects."""
    assert _assignments_aiming_a_push() == []


def test_the_scan_finds_an_assignment_that_aims_a_push(tmp_path, monkeypatch):
    pkg = tmp_path / "conformance_tests"
    pkg.mkdir()
    (pkg / "aiming.py").write_text("def aim(bed, a, b):\n    bed.local, bed.remote = a, b\n    bed.dst = b\n")
    (pkg / "allowed.py").write_text("class HistoryBed:\n    def forget(self):\n        self.src = self.dst = None\n")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert _assignments_aiming_a_push() == ["conformance_tests/aiming.py:2 .aim: bed.local =",
                                            "conformance_tests/aiming.py:2 .aim: bed.remote =",
                                            "conformance_tests/aiming.py:3 .aim: bed.dst ="]


def test_differences_are_records_whose_text_is_the_message_line():
    want = [np.zeros(8, dtype=np.uint8), np.zeros(8, dtype=np.uint8)]
    got = [want[0].copy(), np.zeros(4, dtype=np.uint8)]
    got[0][3] = 7
    changed, resized = diff(want, got, "c3 (must be unchanged)", where=Where.UNCHANGED, cache="c3")
    assert (changed.where, changed.cache, changed.shape) == (Where.UNCHANGED, "c3", False)
    assert str(changed) == changed.text and changed.text.startswith("c3 (must be unchanged) tensor 0: 1 of 8 bytes")
    assert resized.shape and "expected 8 bytes, read 4" in resized.text
    (neither,) = outside_envelope(want[:1], want[:1], got[:1], "dst", cache="dst")
    assert (neither.where, neither.cache) == (Where.ENVELOPE, "dst")
    rebuilt = Difference(**{f.name: getattr(changed, f.name) for f in dataclasses.fields(Difference)})
    assert rebuilt == changed and hash(rebuilt) == hash(changed), "a difference is a plain value"


@pytest.mark.parametrize(("where", "words"), [
    (Where.TARGETED, "the targeted slice holds wrong bytes"),
    (Where.OUTSIDE, "bytes were written outside the targeted slices"),
    (Where.GUARD, "guard bytes around a tensor changed"),
    (Where.FREED, "freed memory changed"),
    (Where.UNCHANGED, "memory that must stay unchanged changed"),
    (Where.ENVELOPE, "destination bytes are neither their old value nor the pushed one"),
    (Where.DESTINATION, "memory is not as the clause requires"),
    (Where.CALL, "memory is not as the clause requires"),
])
def test_the_judge_sorts_differences_by_where_they_are_not_by_their_words(where, words):
    """The text says one place, the record another: the record decides."""
    misleading = Difference(where, "guard bytes (must be unchanged) dst targeted slice are neither the previous")
    assert where_memory_is_wrong([misleading]) == words


def test_a_resized_destination_is_not_an_envelope_byte():
    resized = Difference(Where.ENVELOPE, "dst tensor 0: read 4 bytes, expected 8", "dst", shape=True)
    assert where_memory_is_wrong([resized]) == "memory is not as the clause requires"


def test_the_concurrent_push_is_written_once():
    """Threads released at once (a barrier) are made in one module, for the concurrent procedure and a history's
    concurrent step alike."""
    makers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "conformance_tests").rglob("*.py")
                    if "threading.Barrier(" in p.read_text(encoding="utf-8"))
    assert makers == ["conformance_tests/procedures/at_once.py"]

"""Durations as a domain (issue 29, point 2): an injected delay's classes over its node's budget come from the
spec, every drawn delay lands in the class it was drawn for, every certify run reaches each class by
construction, and a backend correct only on delays far below the budget is NOT CERTIFIED by the near class."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import Frozen

from conformance_tests.coverage import universe
from conformance_tests.coverage.durations import delay_keys, fraction_class
from conformance_tests.procedures.histories.delays import (
    Turns,
    draw_within,
    edge_class,
    edge_timeout,
    fraction,
    top_fraction,
)
from conformance_tests.spec import SpecError, default_spec_path, load_spec
from tests.helpers.certify import certify

SPEC = load_spec()
SIG = SPEC.signature_for(SPEC.releases[-1])
assert SPEC.generation is not None and SPEC.generation.histories is not None
HIST = SPEC.generation.histories
DELAYS = HIST.delays
DIM = next(n for n, d in SPEC.coverage.dimensions.items() if d.kind == "budget_fractions") if SPEC.coverage else ""
HISTORY = "push_cache.history.valid_pushes"
WITHIN = "push_cache.timeout.within_budget"


def test_the_classes_are_the_specs_and_past_follows_them():
    raw = yaml.safe_load(default_spec_path().read_text(encoding="utf-8"))["generation"]["histories"]["delays"]
    uni = universe(SPEC, SIG)
    assert uni is not None
    assert list(uni.partitions[DIM]) == [c["name"] for c in raw["within"]] + ["past"], uni.partitions[DIM]
    starts = [c.start for c in DELAYS.within]
    assert starts == [0.0] + [c["below"] for c in raw["within"][:-1]], starts


@pytest.mark.parametrize(("share", "want"), [
    (0.0, "short"), (0.332, "short"), (0.333, "interior"), (0.799, "interior"), (0.8, "near"), (0.999, "near"),
    (1.0, "past"), (1.5, "past")])
def test_a_fraction_of_the_budget_falls_in_its_class(share, want):
    assert fraction_class(SPEC, share) == want, f"fraction_class({share}): expected {want}"
    assert delay_keys(SPEC, share) == {f"{DIM}={want}"}, f"delay_keys({share})"


@settings(max_examples=200, deadline=None)
@given(data=st.data(), budget=st.integers(HIST.sync_kv_timeout_ms.min, 10**7), left=st.integers(0, 10**5),
       which=st.sampled_from([None, *DELAYS.within]))
def test_a_drawn_delay_lands_in_its_class_within_what_may_be_waited(data, budget, left, which):
    got = draw_within(data.draw, DELAYS, budget, left, which)
    if got is None:
        return
    share = fraction(got.total_ms, budget)
    assert fraction_class(SPEC, share) == got.within.name, (f"draw_within(budget {budget}, left {left}): "
                                                           f"{got.total_ms} ms is {share}, not {got.within.name}")
    assert share < top_fraction(DELAYS, got.within) and got.total_ms <= left, (budget, left, got)
    assert which is None or got.within == which, (which, got)


def test_the_near_class_is_drawable_on_the_configuration_streams_first_node():
    stream = HIST.streams["configuration"]
    near = DELAYS.within[-1]
    t = edge_timeout(DELAYS, near, stream.wait_ms // 2, 2 * stream.wait_ms, HIST.sync_kv_timeout_ms)
    low = near.start * t
    # above the option's default: a backend clamping it to 1000 ms times the near delay out
    assert low > 1000 and top_fraction(DELAYS, near) * t <= stream.wait_ms // 2, (t, low)


def test_the_first_histories_take_every_class_the_nearest_first():
    n = len(DELAYS.within)
    turns = [edge_class(DELAYS, i).name for i in range(n)]
    assert turns[0] == DELAYS.within[-1].name, turns
    assert sorted(turns) == sorted(c.name for c in DELAYS.within), turns


def test_a_failing_history_keeps_its_turn_and_hypothesis_signals_do_not():
    turns = Turns()
    assert [turns.take(), turns.take()] == [0, 1]
    turns.ended(1, Frozen("data overrun"))
    assert turns.take() == 2, "hypothesis's own signal is no failure"
    turns.ended(2, AssertionError("clause failed"))
    assert [turns.take(), turns.take()] == [2, 2], "the failing history's replays keep its class"


@pytest.mark.parametrize(("edit", "where"), [
    (lambda d: d["within"].reverse(), "within[1].below"),
    (lambda d: d["within"][-1].update(below=0.95), "within[2].below"),
    (lambda d: d.update(draw_below=0.5), "draw_below"),
    (lambda d: d.update(beyond=0.9), "beyond"),
])
def test_broken_delay_classes_are_refused_saying_where(tmp_path, edit, where):
    raw = yaml.safe_load(default_spec_path().read_text(encoding="utf-8"))
    edit(raw["generation"]["histories"]["delays"])
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert where in str(err.value), f"load_spec(delays edited): {err.value}"


def _history_run(tmp_path, *backend: str) -> tuple[str, dict]:
    proc = certify(*backend, "--clauses", HISTORY, "--shrink-time", "2", "--report-dir", str(tmp_path))
    return proc.stdout, json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))


def test_the_histories_reach_every_delay_class_and_relation_on_the_reference(tmp_path):
    out, report = _history_run(tmp_path)
    unreached = [k for k in report["run"]["domain_coverage"]["unreached_partitions"]
                 if k.startswith((f"{DIM}=", "concurrency="))]
    assert unreached == [], f"certify --clauses {HISTORY}: {unreached}\n{out[-2000:]}"
    assert all(r["outcome"] == "passed" for r in report["tests"]), out[-3000:]


def test_a_backend_waiting_sixty_percent_of_its_budget_is_caught_by_the_near_class(tmp_path):
    out, report = _history_run(tmp_path, "--backend", "short_timeout_backend:backend")
    assert "verdict: NOT CERTIFIED" in out, out[-3000:]
    failed = {r["params"]["item"]: r for r in report["tests"] if r["outcome"] == "failed"}
    # the configuration stream's first delay is near the budget by construction (other streams may draw one)
    assert "configuration" in failed, list(failed)
    message = failed["configuration"]["message"]
    assert message.startswith(f"clause {WITHIN} ") and "a near delay" in message, message[:600]

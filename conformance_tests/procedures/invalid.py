"""Generated invalid inputs: valid layouts broken by one rule of a clause's ``generate`` section (on the side
named), or by that rule and a rule of another parameter; the call must raise as the clause says (either
clause, for a pair) and write nothing it may not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import strategies as st

from ..coverage.measure import rule_keys
from ..inputs import strategies, violations
from ..running.context import RunContext
from ..spec import Clause, Expectation, Level
from ..spec.expect import union
from .common import require
from .registry import GENERATED, Item, procedure
from .streams import examples, push_layout, run_stream


@dataclass(frozen=True)
class InvalidStream:
    rule: str
    side: str
    pairs: bool


def invalid_items(run: RunContext, clause: Clause) -> list[Item]:
    gen = clause.generate
    assert gen is not None
    out = []
    for rule in gen.rules:
        for side in violations.applicable_sides(rule, list(gen.sides) if gen.sides else None):
            suffix = "" if side == "-" else f"-{side}"
            out.append(Item(f"invalid-{rule}{suffix}", InvalidStream(rule, side, False),
                            examples(run, "invalid_inputs"), generated="invalid_inputs"))
        if gen.pairs:
            out.append(Item(f"invalid-{rule}-paired", InvalidStream(rule, "both", True),
                            examples(run, "invalid_pairs"), generated="invalid_inputs"))
    return out


def partners(run: RunContext, clause: Clause, rule: str) -> list[tuple[Clause, str]]:
    """Rules of other parameters, from every must clause of the release that generates invalid inputs and that
    the vendor does not depart from (a partner with a recorded deviation would pin its departure on this
    clause: the vendor's silent no-op for a too large tensor_num_per_layer also skips every later check)."""
    group = violations.RULES[rule].group
    out = []
    for other in run.selected.clauses:
        if other.level is not Level.MUST or other.generate is None or other.id == clause.id or other.deviation:
            continue
        out += [(other, r) for r in other.generate.rules if violations.RULES[r].group != group]
    return out


@procedure("invalid_inputs", invalid_items, table=GENERATED)
def run_invalid(run: RunContext, clause: Clause, item: Item) -> None:
    __tracebackhide__ = True
    stream: InvalidStream = item.data
    require(run, clause.requires)
    dom = strategies.domain(run.spec, Level.MUST, run.caps, run.params)
    base = clause.expect
    paired = partners(run, clause, stream.rule) if stream.pairs else []
    if stream.pairs and not paired:
        pytest.skip(f"not supported: no other parameter's rule to pair {stream.rule} with in this release")
    need = max([violations.RULES[stream.rule].min_tensors] + [violations.RULES[r].min_tensors for _, r in paired])

    @st.composite
    def broken(draw: Any) -> tuple[strategies.Layout, Expectation]:
        lay = draw(strategies.layouts(dom, same_tensors=True, min_tensors=need))
        rules = [(stream.rule, stream.side, base)]
        if paired:
            other, rule = draw(st.sampled_from(paired), label="paired rule")
            rules.append((rule, "both", other.expect))
        expectation: Expectation = base
        for rule, side, exp in sorted(rules, key=lambda r: violations.RULES[r[0]].order):
            lay = violations.RULES[rule].apply(draw, lay, side)
            if exp != base:  # the same refusal twice stays that refusal (its status included)
                expectation = union(expectation, exp)
        return lay, expectation

    def body(example: tuple[strategies.Layout, Expectation]) -> None:
        layout, expectation = example
        # the rule's partition is reached by the push, whatever it answers (coverage/rules.py)
        run.counters.coverage |= rule_keys(run.spec, [stream.rule])
        push_layout(run, clause, layout, expectation, str(layout))

    run_stream(run, clause.id, item.key, item.examples, broken(), body)

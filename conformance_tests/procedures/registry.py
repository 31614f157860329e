"""The procedure registry: each name of the schema's ``procedure`` enum bound to how it lists a clause's test
items and how it runs one; and the generated inputs every clause with a ``generate`` section gets on top.

Nothing here looks at a clause's title, its ID or a case's name: what to do comes from the clause's
``procedure``, ``generate``, ``requires``, ``scenario`` and ``expect``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..running.context import RunContext
from ..spec import Clause


@dataclass(frozen=True)
class Item:
    """One test of a clause: ``key`` names it in the test ID and seeds its example stream."""

    key: str
    data: Any = None
    examples: int = 0  # examples of its stream (0: not a stream); its time bound grows with them
    generated: str = ""  # the generator whose items these are ("" : the clause's own procedure runs it)
    also: tuple[str, ...] = ()  # other clauses the test checks (a history judges pushes by their clauses)
    seconds_per_example: int = 0  # time bound per example, when an example costs more than a stream's

    def __repr__(self) -> str:
        return f"Item({self.key})"


Lister = Callable[[RunContext, Clause], list[Item]]
Runner = Callable[[RunContext, Clause, Item], None]


@dataclass(frozen=True)
class Procedure:
    items: Lister
    run: Runner


#: the schema's procedure names -> their functions (a self-test compares the two sets)
PROCEDURES: dict[str, Procedure] = {}
#: the generators of extra items: "invalid_inputs" for a clause with a ``generate`` section
GENERATED: dict[str, Procedure] = {}


def procedure(name: str, items: Lister, table: dict[str, Procedure] = PROCEDURES) -> Callable[[Runner], Runner]:
    def deco(fn: Runner) -> Runner:
        table[name] = Procedure(items, fn)
        return fn
    return deco


def items_for(run: RunContext, clause: Clause) -> list[Item]:
    """Every test item of ``clause``: its procedure's, plus its generated invalid inputs."""
    out = PROCEDURES[clause.procedure.name].items(run, clause)
    if clause.generate is not None:
        out += GENERATED["invalid_inputs"].items(run, clause)
    out += GENERATED["counts"].items(run, clause)  # the coverage's counts, by construction (counts.py)
    return out + GENERATED["omitted_defaults"].items(run, clause)  # coverage by construction (covering.py)


def run_item(run: RunContext, clause: Clause, item: Item) -> None:
    __tracebackhide__ = True
    table = GENERATED if item.generated else PROCEDURES
    table[item.generated or clause.procedure.name].run(run, clause, item)


def case_items(run: RunContext, clause: Clause) -> list[Item]:
    """One item per case of the clause."""
    return [Item(case.name, case) for case in clause.cases]


def single(run: RunContext, clause: Clause) -> list[Item]:
    """One item that checks the whole clause."""
    return [Item("check")]

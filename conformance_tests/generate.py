"""Test generation from the spec: (clause, case) parameters with clause markers and readable IDs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from . import session


def clauses(family: str, where: Callable[[Any], bool] | None = None) -> list[Any]:
    """Clauses of ``family`` in the whole spec (the plugin deselects those outside the selected release)."""
    spec = session.current().spec
    return [c for c in spec.clauses if c.family == family and (where is None or where(c))]


def inherited_cases(clause: Any) -> tuple[Any, ...]:
    """The clause's cases; a refining clause without cases takes the refined clause's (spec convention)."""
    if clause.cases:
        return tuple(clause.cases)
    spec = session.current().spec
    seen = set()
    current = clause
    while current.refines and current.refines not in seen:
        seen.add(current.refines)
        try:
            current = spec.clause(current.refines)
        except KeyError:
            break
        if current.cases:
            return tuple(current.cases)
    return ()


def data_name(clause: Any, case: Any = None) -> str | None:
    expect = clause.expect_for(case) if case is not None else clause.expect
    return expect.get("data") if isinstance(expect, dict) else None


def case_params(
    family: str,
    *,
    exclude: Iterable[str] = (),
    where: Callable[[Any], bool] | None = None,
    implicit: Any = None,
) -> list[Any]:
    """``pytest.param(clause, case)`` for every case of every clause of ``family``.

    ``exclude``: clause IDs with bespoke tests.  ``implicit``: a case used for clauses that have none
    (otherwise such clauses yield nothing here and need a bespoke test, or they stay uncovered).
    """
    skip = set(exclude)
    out = []
    for clause in clauses(family, where):
        if clause.id in skip:
            continue
        cases = inherited_cases(clause) or ((implicit,) if implicit is not None else ())
        for case in cases:
            out.append(
                pytest.param(clause, case, id=f"{clause.id}-{case.name}", marks=pytest.mark.clause(clause.id))
            )
    return out


def clause_params(family: str, where: Callable[[Any], bool]) -> list[Any]:
    """``pytest.param(clause)`` for bespoke tests (one test per clause)."""
    return [pytest.param(c, id=c.id, marks=pytest.mark.clause(c.id)) for c in clauses(family, where)]


def by_id(*ids: str) -> Callable[[Any], bool]:
    wanted = set(ids)
    return lambda c: c.id in wanted


def by_data(*names: str) -> Callable[[Any], bool]:
    wanted = set(names)
    return lambda c: data_name(c) in wanted and not inherited_cases(c)


def clause_id_params(family: str, where: Callable[[Any], bool]) -> list[Any]:
    """Like :func:`clause_params` but passes the clause ID (short hypothesis examples and report params)."""
    return [pytest.param(c.id, id=c.id, marks=pytest.mark.clause(c.id)) for c in clauses(family, where)]


def clause_by_id(clause_id: str) -> Any:
    return session.current().spec.clause(clause_id)

"""Test generation from the spec: one pytest parameter per test item of every clause of a family, marked with
the clause ID.  What the items are is the clause's procedure's business (:mod:`conformance_tests.procedures`)."""

from __future__ import annotations

from typing import Any

import pytest

from . import procedures, session


def params(family: str) -> list[Any]:
    """``pytest.param(clause, item)`` for every item of every clause of ``family`` in the whole spec (the plugin
    deselects those outside the selected release)."""
    out = []
    for clause in session.current().spec.clauses:
        if clause.family != family:
            continue
        for item in procedures.items_for(clause):
            marks = [pytest.mark.clause(clause.id)]
            if item.examples:  # a stream: the per-test bound covers all of its examples
                base = int(session.current().options.get("timeout") or 60)
                marks.append(pytest.mark.timeout(base + item.examples * procedures.SECONDS_PER_EXAMPLE))
            out.append(pytest.param(clause, item, id=f"{clause.id}-{item.key}", marks=marks))
    return out


def family_test(family: str) -> Any:
    """The one test function of a family module: every item of every clause of ``family``."""

    @pytest.mark.parametrize(("clause", "item"), params(family))
    def test_clause(clause: Any, item: procedures.Item) -> None:
        procedures.run_item(clause, item)

    return test_clause

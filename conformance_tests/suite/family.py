"""The one test function of a family module: every item of every clause of the family, parametrized by the
kit's plugin from the spec (``conformance_tests.selecting.collection``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ..procedures import Item, run_item
from ..running.context import RunContext
from ..selecting.collection import FAMILY_MARK
from ..spec import Clause


def family_test(family: str) -> Callable[..., None]:
    @getattr(pytest.mark, FAMILY_MARK)(family)
    def test_clause(run_context: RunContext, clause: Clause, item: Item) -> None:
        __tracebackhide__ = True
        run_item(run_context, clause, item)

    return test_clause

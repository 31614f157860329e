"""Family `order`: which error wins when several arguments are bad (vendor order) (data-driven from the spec's cases)."""

from __future__ import annotations

import pytest

from conformance_tests.cases import run_case
from conformance_tests.generate import case_params


@pytest.mark.parametrize(("clause", "case"), case_params("order"))
def test_case(clause, case):
    run_case(clause, case)

"""Family `config`: engine options that change what push_cache does (llm.SyncKvCacheWaitTime units and default)."""

from __future__ import annotations

import pytest

from conformance_tests.cases import run_case
from conformance_tests.generate import case_params


@pytest.mark.parametrize(("clause", "case"), case_params("config"))
def test_case(clause, case):
    run_case(clause, case)

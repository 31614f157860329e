"""Family `timeout`: sync_kv_timeout, slow transfers, dropped links and dead peers (fault injection).

A push runs in a watchdog thread: a call that does not return within a bound fails as a hang instead of
blocking the run.
"""

from __future__ import annotations

import pytest

from conformance_tests.cases import BASELINE_CASE, run_case
from conformance_tests.generate import case_params


@pytest.mark.parametrize(("clause", "case"), case_params("timeout", implicit=BASELINE_CASE))
def test_case(clause, case):
    run_case(clause, case)

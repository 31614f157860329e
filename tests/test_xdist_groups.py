"""The self-tests' scheduler (tests/conftest.py) finds every module that asks to stay on one worker."""

from __future__ import annotations

from tests.conftest import grouped_modules
from tests.helpers import ROOT


def test_the_modules_with_full_runs_in_a_module_fixture_are_grouped() -> None:
    groups = grouped_modules(ROOT / "tests", ROOT)
    assert groups == {
        "tests/kit/test_family_run.py": "test_family_run",
        "tests/kit/test_hostile_reports.py": "test_hostile_reports",
        "tests/kit/test_readme_commands.py": "test_readme_commands",
        "tests/kit/test_repro_and_diff.py": "test_repro_and_diff",
        "tests/kit/test_reruns.py": "test_reruns",
        "tests/kit/test_shards.py": "test_shards",
        "tests/kit/test_vendor_deviations.py": "test_vendor_deviations",
        "tests/kit/test_verdicts.py": "test_verdicts",
        "tests/kit/test_verify.py": "test_verify",
    }

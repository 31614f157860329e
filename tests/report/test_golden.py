"""The formats derived from a report, byte for byte as the code before the typed report model wrote them (the
golden files: tests/report/golden/make_golden.py says how they were made): the typed parts change types, not
bytes. The site's pages are held to the bytes they have had since the site grouped reports by operation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance_tests.report.render import derived_texts, dumps
from tests.report.conftest import every_outcome_rows, make_report
from tests.report.golden.make_golden import FORMATS, LOCATION, site_hashes

GOLDEN = Path(__file__).with_name("golden")


def _golden(name: str) -> str:
    return (GOLDEN / name).read_text(encoding="utf-8")


def test_the_builder_writes_the_golden_report() -> None:
    every = make_report(every_outcome_rows(), unmatched=["conformance_tests/suite/test_gone.py::test_x"])
    assert dumps(every) == _golden("every.report.json")


@pytest.mark.parametrize("name", ["reference", "every"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_is_the_golden_one(name: str, fmt: str) -> None:
    report = json.loads(_golden(f"{name}.report.json"))
    assert derived_texts(report, LOCATION)[fmt] == _golden(f"{name}.{fmt}"), f"{name}.{fmt} differs"


def test_the_site_is_the_golden_one() -> None:
    reports = {f"{name}/report.json": json.loads(_golden(f"{name}.report.json")) for name in ("reference", "every")}
    got, want = site_hashes(reports), json.loads(_golden("site.sha256.json"))
    assert sorted(got) == sorted(want)
    assert [page for page in want if got[page] != want[page]] == []


"""The report schema: packaged copy == published copy, validity, round trips, error paths."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from conformance_tests.report import SCHEMA_PATH, ReportError, load_report, validate_report, write_reports
from tests.helpers import ROOT


def test_published_schema_is_identical_to_packaged():
    published = ROOT / "reports" / "report.schema.json"
    assert published.read_bytes() == SCHEMA_PATH.read_bytes(), (
        "reports/report.schema.json and conformance_tests/report/report.schema.json differ; copy one onto the other"
    )


def test_schema_is_a_valid_versioned_draft_2020_12_schema():
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["schema_version"] == {
        "const": 1,
        "description": schema["properties"]["schema_version"]["description"],
    }


@pytest.mark.parametrize("name", ["every_report", "empty_report", "passing_report"])
def test_round_trip(name, request, tmp_path):
    report = request.getfixturevalue(name)
    validate_report(report)
    paths = write_reports(report, tmp_path / "out")
    assert sorted(paths) == ["badge.json", "index.html", "junit.xml", "report.json", "summary.md"]
    assert all(p.is_file() and p.parent == tmp_path / "out" for p in paths.values())
    assert load_report(paths["report.json"]) == report


def test_report_keeps_the_architecture_fields(every_report):
    assert list(every_report)[:1] == ["schema_version"]
    for key in (
        "suite",
        "spec",
        "backend",
        "environment",
        "run",
        "tests",
        "clauses",
        "expectations",
        "summary",
        "verdict",
    ):
        assert key in every_report
    assert set(every_report["tests"][0]) >= {
        "id",
        "clauses",
        "level",
        "params",
        "outcome",
        "expected",
        "message",
        "repro",
        "hypothesis",
        "duration_s",
    }
    assert set(every_report["clauses"][0]) >= {
        "id",
        "level",
        "family",
        "title",
        "tests",
        "outcome",
        "covered",
    }
    assert set(every_report["verdict"]) >= {"certified", "label", "blocking", "compatibility"}


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda r: r.update(schema_version=2), "$.schema_version"),
        (lambda r: r.pop("verdict"), "$: 'verdict' is a required property"),
        (lambda r: r["tests"][3].update(outcome="maybe"), "$.tests[3].outcome"),
        (lambda r: r["clauses"][1].update(outcome="error"), "$.clauses[1].outcome"),
        (lambda r: r["summary"].update(passed=-1), "$.summary.passed"),
        (lambda r: r["verdict"].update(compatibility=1.5), "$.verdict.compatibility"),
        (lambda r: r["spec"].update(sha256="xyz"), "$.spec.sha256"),
    ],
)
def test_validation_error_names_the_json_path(every_report, edit, path):
    report = copy.deepcopy(every_report)
    edit(report)
    with pytest.raises(ReportError) as info:
        validate_report(report)
    assert str(info.value).startswith(path)
    assert "\n" not in str(info.value)


def test_load_report_errors(tmp_path, every_report):
    with pytest.raises(ReportError, match="no such file"):
        load_report(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1,\n  oops}', encoding="utf-8")
    with pytest.raises(ReportError, match=r"bad\.json: not valid JSON: line 2 column 3"):
        load_report(bad)
    broken = copy.deepcopy(every_report)
    broken["tests"][0]["outcome"] = "nope"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(ReportError, match=r"broken\.json: not a valid report: \$\.tests\[0\]\.outcome"):
        load_report(path)
    with pytest.raises(ReportError, match=r"^\$: a report must be a JSON object"):
        validate_report([])

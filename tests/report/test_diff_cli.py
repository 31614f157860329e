"""diff_reports and the `report` CLI (render, summary, diff, error lines)."""

from __future__ import annotations

import json

import pytest

from conformance_tests.report import diff_reports, write_reports
from conformance_tests.report.cli import main
from conformance_tests.report.diff import format_diff

P = "push_cache."


def _ids(items):
    return [item["id"] for item in items]


def _pair(kit, tmp_path, edit_b, edit_clauses_b=None):
    rows_a = [kit.row(c["id"], "ok", "passed", c["level"]) for c in kit.CLAUSES]
    rows_b = [dict(r) for r in rows_a]
    clauses_b = [dict(c) for c in kit.CLAUSES]
    edit_b(rows_b)
    if edit_clauses_b:
        edit_clauses_b(clauses_b)
    a = kit.make_report(rows_a)
    b = kit.make_report(rows_b, clauses=clauses_b)
    pa = write_reports(a, tmp_path / "a")["report.json"]
    pb = write_reports(b, tmp_path / "b")["report.json"]
    return a, b, pa, pb


def _regress(rows):
    rows[0]["outcome"] = "failed"  # param.src_batch_index.type: passed -> failed (must)
    rows[3]["outcome"] = "incompatible"  # data.layer_range: passed -> incompatible (should)
    rows[4]["outcome"] = "not_supported"  # timeout.delay: passed -> not_supported
    rows.append({**rows[1], "id": rows[1]["id"] + "-extra"})  # a new test on a clause that still passes


def test_diff_names_exactly_the_changed_clauses(kit, tmp_path):
    a, b, *_ = _pair(kit, tmp_path, _regress)
    diff = diff_reports(a, b)
    clauses = diff["clauses"]
    assert _ids(clauses["newly_failing"]) == [P + "param.src_batch_index.type", P + "data.layer_range"]
    assert _ids(clauses["changed"]) == [P + "timeout.delay"]
    assert clauses["fixed"] == clauses["added"] == clauses["removed"] == []
    tests = diff["tests"]
    assert len(tests["changed"]) == 1 and len(tests["newly_failing"]) == 2
    assert _ids(tests["added"]) == [b["tests"][-1]["id"]]
    assert diff["regression"] is True


def test_each_change_is_listed_once(kit, tmp_path):
    """A change belongs to one kind: the JSON's lists are disjoint and the text names each ID on one line."""
    for edit in (_regress, lambda rows: (_regress(rows), rows.append(kit.row("push_cache.extra", "x", "failed",
                                                                            "must")))):
        a, b, pa, pb = _pair(kit, tmp_path, edit)
        for diff in (diff_reports(a, b), diff_reports(b, a)):
            for kind in ("clauses", "tests"):
                ids = [c["id"] for bucket in diff[kind].values() for c in bucket]
                assert len(ids) == len(set(ids)), (kind, diff[kind])
        lines = format_diff(diff_reports(a, b)).splitlines()
        for row in a["tests"] + b["tests"] + a["clauses"] + b["clauses"]:
            named = [ln for ln in lines if row["id"] in ln.split()]
            assert len(named) <= 1, named


def test_diff_the_other_way_is_fixes(kit, tmp_path):
    a, b, *_ = _pair(kit, tmp_path, _regress)
    diff = diff_reports(b, a)
    assert _ids(diff["clauses"]["fixed"]) == [P + "param.src_batch_index.type", P + "data.layer_range"]
    assert diff["clauses"]["newly_failing"] == []
    assert _ids(diff["tests"]["removed"]) == [b["tests"][-1]["id"]]
    assert diff["regression"] is False


def test_diff_added_and_removed_clauses(kit, tmp_path):
    def edit_clauses(clauses):
        clauses[:] = [c for c in clauses if c["id"] != P + "types.dtype_sizes"]  # removed
        clauses.append(kit.clause("push_cache.restriction.new_rule", "must"))

    def edit_rows(rows):
        rows[:] = [r for r in rows if r["clauses"] != [P + "types.dtype_sizes"]]
        rows.append(kit.row("push_cache.restriction.new_rule", "x", "failed", "must"))

    a, b, *_ = _pair(kit, tmp_path, edit_rows, edit_clauses)
    diff = diff_reports(a, b)
    assert _ids(diff["clauses"]["removed"]) == [P + "types.dtype_sizes"]
    # a new clause that fails is a new failure, listed there alone
    assert _ids(diff["clauses"]["newly_failing"]) == [P + "restriction.new_rule"]
    assert diff["clauses"]["added"] == []
    assert diff["clauses"]["changed"] == []
    assert diff["regression"] is True


def test_cli_diff_exit_codes_and_output(kit, tmp_path, capsys):
    _, _, pa, pb = _pair(kit, tmp_path, _regress)
    assert main(["diff", str(pa), str(pb)]) == 1
    out = capsys.readouterr().out
    assert "verdict: CERTIFIED -> NOT CERTIFIED" in out
    rows = [line.split() for line in out.splitlines()]
    assert ["newly", "failing", P + "param.src_batch_index.type", "passed", "->", "failed"] in rows
    assert ["other", "change", P + "timeout.delay", "passed", "->", "not_supported"] in rows
    assert "result: REGRESSION" in out
    assert main(["diff", str(pb), str(pa)]) == 0
    assert "result: no regression" in capsys.readouterr().out
    assert main(["diff", str(pa), str(pa)]) == 0
    out = capsys.readouterr().out
    assert "clauses: 0 newly failing, 0 fixed, 0 added, 0 removed, 0 other change" in out
    assert main(["diff", "--json", str(pa), str(pb)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert _ids(data["clauses"]["newly_failing"]) == [P + "param.src_batch_index.type", P + "data.layer_range"]
    assert _ids(data["clauses"]["changed"]) == [P + "timeout.delay"]


def test_cli_render(every_report, tmp_path, capsys):
    src = write_reports(every_report, tmp_path / "src")["report.json"]
    assert main(["render", str(src), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out.split()
    names = sorted(p.rsplit("/", 1)[-1] for p in printed)
    assert names == ["badge.json", "index.html", "junit.xml", "summary.md"]
    assert (tmp_path / "out" / "index.html").read_bytes() == (tmp_path / "src" / "index.html").read_bytes()
    (tmp_path / "src" / "index.html").unlink()
    assert main(["render", str(src)]) == 0  # default: next to the report
    assert (tmp_path / "src" / "index.html").is_file()


def test_cli_summary(every_report, tmp_path, capsys):
    src = write_reports(every_report, tmp_path)["report.json"]
    assert main(["summary", str(src)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("push_cache conformance: NOT CERTIFIED")
    lines = out.splitlines()
    header = lines.index("tests: 13") + 1
    assert lines[header].split() == [
        "passed",
        "failed",
        "flaky",
        "incompatible",
        "xfailed",
        "xpassed",
        "skipped",
        "not_supported",
        "error",
    ]
    assert lines[header + 1].split() == ["4", "2", "1", "1", "1", "1", "1", "1", "1"]
    assert "compatibility: 50.0%" in out
    failing = out.split("failing clauses: ", 1)[1]
    for cid in every_report["verdict"]["blocking"]:
        assert cid in failing
    assert f"{P}data.layer_range" in failing  # incompatible, listed as not blocking


def _error_line(capsys):
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


@pytest.mark.parametrize("command", ["summary", "render"])
def test_cli_missing_file(command, tmp_path, capsys):
    assert main([command, str(tmp_path / "nope.json")]) == 2
    assert _error_line(capsys) == f"error: {tmp_path / 'nope.json'}: no such file"


def test_cli_invalid_json(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "schema_version": 1,\n}', encoding="utf-8")
    assert main(["summary", str(bad)]) == 2
    line = _error_line(capsys)
    assert line.startswith(f"error: {bad}: not valid JSON: line 3 column 1")


def test_cli_schema_invalid(every_report, tmp_path, capsys):
    broken = json.loads(json.dumps(every_report))
    broken["clauses"][2]["covered"] = "yes"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    good = write_reports(every_report, tmp_path / "good")["report.json"]
    assert main(["diff", str(good), str(path)]) == 2
    line = _error_line(capsys)
    assert line.startswith(f"error: {path}: not a valid report: $.clauses[2].covered: 'yes' is not of type")


def test_cli_usage_errors_exit_2(capsys):
    assert main([]) == 2
    assert main(["frobnicate"]) == 2
    assert main(["diff", "only-one.json"]) == 2
    said = capsys.readouterr().err.splitlines()  # one line per error, never argparse's usage block
    assert len(said) == 3 and all("--help lists the options" in ln for ln in said), said
    assert main(["--help"]) == 0

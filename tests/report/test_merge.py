"""Merging shard reports (conformance_tests/report/merge.py and `report merge`), on small hand-built reports: the
merge of shards 1..N is the report of the serial run of the same rows; anything less is PARTIAL and says why."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest

from conformance_tests.cli import exitcodes
from conformance_tests.judging.push_features import MAX_VALUES
from conformance_tests.report import ReportError, build_report, shard_checks, write_reports
from conformance_tests.report import merge as merge_module
from conformance_tests.report.cli import main
from conformance_tests.report.merge import ShardReport, merge_reports, read_shard, shard_argv
from conformance_tests.report.shard_checks import clause_spec
from conformance_tests.selecting.selection import WHY_CLAUSES, WHY_NOT_RUN, WHY_OTHER_SHARD, WHY_SHARD_MISSING
from conformance_tests.selecting.shards import Shard, shard_reason

#: the rows of a serial run over the conftest's clauses (every outcome) and which shard each went to
ASSIGNED_OF_TWO = [1, 1, 2, 2, 1, 2, 1, 2, 1, 2, 1, 1, 2]
SERIAL_ARGV = ["--backend", "reference", "--clauses", "push_cache.*"]


@pytest.fixture(autouse=True)
def hand_made_spec(kit, monkeypatch):
    """The hand-made rows' clauses stand for the spec their header names (the merge checks shards against the
    kit's packaged spec, whose clauses these are not): kit.CLAUSES for kit.HEADER's spec, no other spec known."""
    def known(sha256, release):
        spec = kit.HEADER["spec"]
        return copy.deepcopy(kit.CLAUSES) if (sha256, release) == (spec["sha256"], spec["version"]) else None

    monkeypatch.setattr(merge_module, "packaged_clauses", known)
    monkeypatch.setattr(shard_checks, "packaged_clauses", known)


def _serial_rows(kit):
    return kit.every_outcome_rows()


def _shard(kit, index, count, rows, assigned, *, argv=None, run=None, reasons=(), left_out=(), name=None,
           expectations=None, header=None):
    """The report ``certify --shard index/count`` gives for ``rows`` (the whole selection, in collection order)."""
    selection = [r["id"] for r in rows]
    mine = [r for r, k in zip(rows, assigned, strict=True) if k == index]
    reason = shard_reason(Shard(index, count), len(mine), len(selection))
    completeness = {
        "reasons": [*reasons, reason],
        "selected": len(mine),
        "left_out": [*left_out, *({"id": n, "why": WHY_OTHER_SHARD}
                                  for n, k in zip(selection, assigned, strict=True) if k != index)],
        "shard": {"index": index, "count": count, "selection": selection, "assigned": list(assigned),
                  "reason": reason},
    }
    head = copy.deepcopy(kit.HEADER if header is None else header)
    head["run"]["argv"] = list(argv if argv is not None else
                               [*SERIAL_ARGV, "--shard", f"{index}/{count}", "--report-dir", f"shard-{index}"])
    head["run"].update(run or {})
    report = build_report(head, copy.deepcopy(mine), copy.deepcopy(kit.CLAUSES), expectations or {}, completeness)
    text = json.dumps(report)
    return ShardReport(name or f"shard-{index}/report.json", hashlib.sha256(text.encode()).hexdigest(), report)


def _rebuilt(shard):
    """The shard's report built again from its rows, as certify builds it (after an edit of its rows)."""
    r = shard.report
    again = build_report({k: r[k] for k in ("suite", "spec", "backend", "environment", "run")}, r["tests"],
                         [clause_spec(c) for c in r["clauses"]],
                         {k: v for k, v in r["expectations"].items() if k != "waived"}, r["completeness"])
    return ShardReport(shard.source, shard.sha256, again)


def _serial(kit, rows=None, **run):
    head = copy.deepcopy(kit.HEADER)
    head["run"]["argv"] = list(SERIAL_ARGV)
    head["run"].update(run)
    return build_report(head, copy.deepcopy(rows or _serial_rows(kit)), copy.deepcopy(kit.CLAUSES), {}, None)


def _two(kit, **kw):
    rows = _serial_rows(kit)
    return [_shard(kit, 1, 2, rows, ASSIGNED_OF_TWO, **kw), _shard(kit, 2, 2, rows, ASSIGNED_OF_TWO, **kw)]


def _row_view(report):
    return [{k: t[k] for k in ("id", "clauses", "level", "outcome", "expected", "message")} for t in report["tests"]]


# ------------------------------------------------------------------------------------------ the whole run


def test_shards_1_to_n_merge_into_the_serial_report(kit):
    merged = merge_reports(_two(kit))
    serial = _serial(kit)
    assert merged["completeness"]["full"] is True, merged["completeness"]["reasons"]
    assert _row_view(merged) == _row_view(serial)
    for key in ("clauses", "summary", "clause_summary", "verdict", "likely_causes", "blocking_details", "warnings"):
        assert merged[key] == serial[key], (key, merged[key], serial[key])
    assert merged["completeness"]["left_out"] == [] and "shard" not in merged["completeness"]


def test_rows_follow_the_selection_whatever_order_the_shards_come_in(kit):
    one, two = _two(kit)
    merged = merge_reports([two, one])
    assert [t["id"] for t in merged["tests"]] == one.shard["selection"]
    assert [m["index"] for m in merged["run"]["merged_from"]] == [1, 2]


def test_a_passing_merge_certifies_and_exits_0(kit):
    rows = [kit.row(c["id"], "ok", "passed", c["level"]) for c in kit.CLAUSES]
    assigned = [1 + i % 3 for i in range(len(rows))]
    merged = merge_reports([_shard(kit, k, 3, rows, assigned) for k in (1, 2, 3)])
    assert merged["verdict"]["label"] == "CERTIFIED", merged["verdict"]["reasons"]
    assert exitcodes.for_verdict(merged["verdict"]) == exitcodes.CERTIFIED


def test_the_selections_own_left_out_tests_are_kept_once(kit):
    gone = [{"id": "conformance_tests/suite/test_x.py::test_clause[push_cache.x.y-a]", "why": WHY_CLAUSES}]
    rows = _serial_rows(kit)
    shards = [_shard(kit, k, 2, rows, ASSIGNED_OF_TWO, reasons=["--clauses 'push_cache.*'"], left_out=gone)
              for k in (1, 2)]
    merged = merge_reports(shards)
    comp = merged["completeness"]
    assert comp["reasons"] == ["--clauses 'push_cache.*'"], comp["reasons"]
    assert comp["left_out"] == gone and comp["left_out_counts"] == {WHY_CLAUSES: 1}, comp["left_out"]
    assert merged["verdict"]["kind"] == "not_certified" and merged["verdict"]["partial"] is True


# ------------------------------------------------------------------------------------------ less than the whole


def test_a_missing_shard_is_partial_and_names_its_tests(kit):
    one, two = _two(kit)
    merged = merge_reports([one])
    missing = [n for n, k in zip(one.shard["selection"], ASSIGNED_OF_TWO, strict=True) if k == 2]
    comp = merged["completeness"]
    assert f"shard 2/2 missing: {len(missing)} test(s) not run" in comp["reasons"], comp["reasons"]
    assert comp["left_out"] == [{"id": n, "why": WHY_SHARD_MISSING} for n in missing], comp["left_out"]
    assert merged["verdict"]["partial"] is True
    assert [t["id"] for t in merged["tests"]] == [t["id"] for t in one.report["tests"]]


@pytest.mark.parametrize(("what", "edit"), [
    ("spec sha256", lambda h: h["spec"].update(sha256="f" * 64)),
    ("spec release", lambda h: h["spec"].update(version="8.5.0")),
    ("kit version", lambda h: h["suite"].update(version="0.2.0")),
    ("backend name", lambda h: h["backend"].update(name="other")),
    ("backend target", lambda h: h["backend"].update(spec="other.module:backend")),
    ("backend version", lambda h: h["backend"].update(version="9.9")),
    ("backend capabilities", lambda h: h["backend"].update(capabilities={})),
    ("hypothesis profile", lambda h: h["run"].update(hypothesis_profile="explore")),
    ("hypothesis seed", lambda h: h["run"].update(hypothesis_seed=7)),
    ("expectations sha256", lambda h: h["run"].update(expectations={"path": "x.yaml", "sha256": "ab" * 32,
                                                                      "strict": False})),
])
def test_shards_that_disagree_give_a_partial_report_that_says_on_what(kit, what, edit):
    rows = _serial_rows(kit)
    # a vendor's backend: the kit's own reference is known by its name and target (a shard naming it otherwise is
    # refused: test_a_relabelled_shard_of_the_kits_own_backend_is_refused)
    base = copy.deepcopy(kit.HEADER)
    base["backend"].update(name="acme", spec="acme.adapter:backend")
    other = copy.deepcopy(base)
    edit(other)
    shards = [_shard(kit, 1, 2, rows, ASSIGNED_OF_TWO, header=base),
              _shard(kit, 2, 2, rows, ASSIGNED_OF_TWO, header=other)]
    reasons = merge_reports(shards)["completeness"]["reasons"]
    said = [r for r in reasons if r.startswith(f"shards disagree on {what}:")]
    assert len(said) == 1 and "shard 1/2" in said[0] and "shard 2/2" in said[0], reasons
    assert len(reasons) == 1, reasons  # nothing else differs


def test_a_different_command_line_is_a_disagreement(kit):
    rows = _serial_rows(kit)
    shards = [_shard(kit, 1, 2, rows, ASSIGNED_OF_TWO),
              _shard(kit, 2, 2, rows, ASSIGNED_OF_TWO, argv=[*SERIAL_ARGV, "-k", "param", "--shard", "2/2"])]
    reasons = merge_reports(shards)["completeness"]["reasons"]
    assert len(reasons) == 1 and reasons[0].startswith("shards disagree on command line"), reasons


@pytest.mark.parametrize("argv", [
    ["--shard=1/2", "--report-dir=a"],
    ["--rootdir=/elsewhere", "--shard", "1/2", "-n", "4"],
    ["-n2", "--dist", "loadgroup", "--shard", "1/2", "--report-dir", "x"],
    ["--numprocesses=auto", "--shard", "1/2"],
])
def test_options_that_differ_by_design_do_not_count(argv):
    assert shard_argv([*SERIAL_ARGV, *argv]) == SERIAL_ARGV


def test_shards_of_different_counts_or_selections_disagree(kit):
    rows = _serial_rows(kit)
    three = [1 + i % 3 for i in range(len(rows))]
    reasons = merge_reports([_shard(kit, 1, 2, rows, ASSIGNED_OF_TWO),
                             _shard(kit, 2, 3, rows, three)])["completeness"]["reasons"]
    assert any(r.startswith("shards disagree on shard count:") for r in reasons), reasons
    assert any(r.startswith("shards disagree on assignment of tests to shards:") for r in reasons), reasons
    fewer = _shard(kit, 2, 2, rows[:-1], ASSIGNED_OF_TWO[:-1])
    reasons = merge_reports([_shard(kit, 1, 2, rows, ASSIGNED_OF_TWO), fewer])["completeness"]["reasons"]
    assert any(r.startswith("shards disagree on selection:") for r in reasons), reasons


def test_a_shard_given_twice_is_named_and_its_tests_counted_once(kit):
    one, _ = _two(kit)
    again = ShardReport("copy/report.json", one.sha256, copy.deepcopy(one.report))
    merged = merge_reports([one, again])
    reasons = merged["completeness"]["reasons"]
    assert f"shard 1/2 given 2 times: {one.source}, copy/report.json" in reasons, reasons
    twice = [r for r in reasons if "in more than one shard report" in r]
    assert len(twice) == 1 and twice[0].startswith(f"{len(one.report['tests'])} test(s)"), reasons
    assert len(merged["tests"]) == len(one.report["tests"])


def test_a_test_a_shard_did_not_run_is_not_run(kit):
    rows = _serial_rows(kit)
    one = _shard(kit, 1, 2, rows, ASSIGNED_OF_TWO)
    dropped = one.report["tests"].pop()  # as if its worker died before it ran
    one = _rebuilt(one)
    merged = merge_reports([one, _shard(kit, 2, 2, rows, ASSIGNED_OF_TWO)])
    comp = merged["completeness"]
    assert "1 selected test(s) not run" in comp["reasons"], comp["reasons"]
    assert comp["left_out"] == [{"id": dropped["id"], "why": WHY_NOT_RUN}]


def test_a_reason_of_one_shard_is_named_with_it_the_shard_reason_is_gone(kit):
    rows = _serial_rows(kit)
    one = _shard(kit, 1, 2, rows, ASSIGNED_OF_TWO, reasons=["interrupted: KeyboardInterrupt"])
    two = _shard(kit, 2, 2, rows, ASSIGNED_OF_TWO)
    reasons = merge_reports([one, two])["completeness"]["reasons"]
    assert reasons == ["shard 1/2: interrupted: KeyboardInterrupt"], reasons


# ------------------------------------------------------------------------------------------ the run header


def test_the_run_header_sums_what_adds_up_and_says_so(kit):
    rows = _serial_rows(kit)
    one = _shard(kit, 1, 2, rows, ASSIGNED_OF_TWO, run={
        "started": "2025-01-02T03:04:05+00:00", "duration_s": 4.5, "push_calls": 10, "backend_processes": None,
        "histories": 3, "history_steps": 30, "history_pushes": 7, "layout_keys": ["a", "b"], "distinct_layouts": 2})
    two = _shard(kit, 2, 2, rows, ASSIGNED_OF_TWO, run={
        "started": "2025-01-02T02:00:00+00:00", "duration_s": 1.25, "push_calls": 5, "backend_processes": None,
        "histories": 1, "history_steps": 4, "history_pushes": 2, "layout_keys": ["b", "c"], "distinct_layouts": 2})
    run = merge_reports([one, two])["run"]
    assert run["started"] == "2025-01-02T02:00:00+00:00" and run["duration_s"] == 5.75, run
    assert run["push_calls"] == 15 and run["backend_processes"] is None, run
    assert (run["histories"], run["history_steps"], run["history_pushes"]) == (4, 34, 9), run
    assert run["summed"] == ["duration_s", "push_calls", "histories", "history_steps", "history_pushes",
                             "backend_processes"]
    assert run["distinct_layouts"] == 3, "the union of the layouts, not the sum of the counts"
    assert "layout_keys" not in run and run["argv"] == SERIAL_ARGV
    assert [(m["index"], m["count"], m["sha256"], m["tests"]) for m in run["merged_from"]] == [
        (1, 2, one.sha256, len(one.report["tests"])), (2, 2, two.sha256, len(two.report["tests"]))]


def test_layouts_are_unknown_when_a_shard_has_no_layout_keys(kit):
    rows = _serial_rows(kit)
    one = _shard(kit, 1, 2, rows, ASSIGNED_OF_TWO, run={"layout_keys": ["a"], "distinct_layouts": 1})
    two = _shard(kit, 2, 2, rows, ASSIGNED_OF_TWO, run={"distinct_layouts": 4})
    assert merge_reports([one, two])["run"]["distinct_layouts"] is None


def test_machines_that_differ_are_all_named(kit):
    rows = _serial_rows(kit)
    other = copy.deepcopy(kit.HEADER)
    other["environment"]["hostname"] = "ci-2"
    env = merge_reports([_shard(kit, 1, 2, rows, ASSIGNED_OF_TWO),
                         _shard(kit, 2, 2, rows, ASSIGNED_OF_TWO, header=other)])["environment"]
    assert env["hostname"] == "ci, ci-2" and env["python"] == kit.HEADER["environment"]["python"], env


def _stats(values):
    return {"x": {"values": list(values[:MAX_VALUES]), "more": len(values) > MAX_VALUES,
                  "min": min(values), "max": max(values)}}


def test_passing_push_features_merge_as_one_run_folds_them_and_causes_follow(kit):
    """Shard 1's passing pushes took x in 0..29, shard 2's 30..59: together more distinct values than are kept
    (``more``), the extremes of both; a failing push with x = 100 is then "x > 59", as in the serial run."""
    failing = kit.row("push_cache.data.bytes_equal", "big", "failed", "must", message="bytes differ",
                      push={"class": "returned", "x": 100})
    rows = [kit.row("push_cache.param.src_batch_index.type", "int", "passed", "must"),
            kit.row("push_cache.data.bytes_equal", "small", "passed", "must"), failing]
    assigned = [1, 2, 2]
    one = _shard(kit, 1, 2, rows, assigned, run={"passing_push_features": {"returned": _stats(range(0, 30))}})
    two = _shard(kit, 2, 2, rows, assigned, run={"passing_push_features": {"returned": _stats(range(30, 60))}})
    merged = merge_reports([one, two])
    x = merged["run"]["passing_push_features"]["returned"]["x"]
    assert (x["more"], x["min"], x["max"], len(x["values"])) == (True, 0, 59, MAX_VALUES), x
    serial = _serial(kit, rows, passing_push_features={"returned": _stats(range(0, 60))})
    assert merged["likely_causes"] == serial["likely_causes"] and merged["likely_causes"][0]["predicate"] == "x > 59"


def test_expectations_hits_add_up_and_only_entries_no_shard_matched_are_unmatched(kit):
    entries = [{"index": 0, "match": "a", "outcome": "xfail", "reason": "r", "hits": 1},
               {"index": 1, "match": "b", "outcome": "xfail", "reason": "r", "hits": 0},
               {"index": 2, "match": "c", "outcome": "skip", "reason": "r", "hits": 0}]
    rows = _serial_rows(kit)
    exp1 = {"path": "e.yaml", "sha256": "ab" * 32, "entries": entries, "unmatched": ["b", "c"]}
    exp2 = {"path": "e.yaml", "sha256": "ab" * 32, "unmatched": ["a", "c"],
            "entries": [{**entries[0], "hits": 0}, {**entries[1], "hits": 2}, entries[2]]}
    merged = merge_reports([_shard(kit, 1, 2, rows, ASSIGNED_OF_TWO, expectations=exp1),
                            _shard(kit, 2, 2, rows, ASSIGNED_OF_TWO, expectations=exp2)])
    exp = merged["expectations"]
    assert exp["unmatched"] == ["c"] and [e["hits"] for e in exp["entries"]] == [1, 2, 0], exp


# ------------------------------------------------------------------------------------------ the command


def _write(shard, folder):
    return write_reports(shard.report, folder)["report.json"]


def test_the_command_writes_the_set_prints_the_verdict_and_exits_with_its_code(kit, tmp_path, capsys):
    paths = [_write(s, tmp_path / f"s{s.index}") for s in _two(kit)]
    code = main(["merge", *map(str, paths), "--out", str(tmp_path / "merged")])
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "merged" / "report.json").read_text(encoding="utf-8"))
    assert code == exitcodes.for_verdict(report["verdict"]) == exitcodes.NOT_CERTIFIED, out
    assert f"verdict: {report['verdict']['label']}" in out and "report report.json:" in out, out
    assert sorted(p.name for p in (tmp_path / "merged").iterdir()) == sorted(
        ["report.json", "junit.xml", "summary.md", "index.html", "badge.json"])
    assert [m["sha256"] for m in report["run"]["merged_from"]] == [
        hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


def test_a_partial_merge_never_replaces_a_full_report(kit, tmp_path, capsys):
    paths = [_write(s, tmp_path / f"s{s.index}") for s in _two(kit)]
    assert main(["merge", *map(str, paths), "--out", str(tmp_path / "out")]) == exitcodes.NOT_CERTIFIED
    full = (tmp_path / "out" / "report.json").read_bytes()
    code = main(["merge", str(paths[0]), "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == exitcodes.NOT_CERTIFIED and (tmp_path / "out" / "report.json").read_bytes() == full, out
    partial = json.loads((tmp_path / "out.partial" / "report.json").read_text(encoding="utf-8"))
    assert partial["completeness"]["full"] is False and "is kept" in out, out


def _one_error_line(capsys):
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    return lines[0]


def test_a_report_that_is_not_a_shard_is_refused(kit, tmp_path, capsys):
    plain = write_reports(_serial(kit), tmp_path / "serial")["report.json"]
    with pytest.raises(ReportError, match="not a shard report"):
        read_shard(plain)
    assert main(["merge", str(plain), "--out", str(tmp_path / "m")]) == exitcodes.USAGE_ERROR
    line = _one_error_line(capsys)
    assert str(plain) in line and "--shard K/N" in line, line
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(("content", "said"), [
    (None, "no such file"),
    ("{not json", "not valid JSON"),
    ('{"schema_version": 1}', "not a valid report"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, content, said):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["merge", str(path), "--out", str(tmp_path / "m")]) == exitcodes.USAGE_ERROR
    line = _one_error_line(capsys)
    assert str(path) in line and said in line, line


def test_no_reports_is_a_usage_error(tmp_path, capsys):
    assert main(["merge", "--out", str(tmp_path / "m")]) == exitcodes.USAGE_ERROR
    with pytest.raises(ReportError, match="no reports"):
        merge_reports([])


# ------------------------------------------------------------------------------------------ hostile shards


def _passing(kit):
    """Every clause of the hand-made spec with one passing test: the honest merge of its shards certifies."""
    return [kit.row(c["id"], "ok", "passed", c["level"]) for c in kit.CLAUSES]


def _halves(kit, header=None):
    rows = _passing(kit)
    assigned = [1 + i % 2 for i in range(len(rows))]
    return rows, assigned, [_shard(kit, k, 2, rows, assigned, header=header) for k in (1, 2)]


def _never_certified(shards):
    """The merge refuses the shards (ReportError) or gives a verdict other than CERTIFIED; returns what it said."""
    try:
        merged = merge_reports(shards)
    except ReportError as exc:
        return str(exc)
    assert not merged["verdict"]["certified"] and "CERTIFIED" != merged["verdict"]["label"], merged["verdict"]
    return merged["verdict"]["label"]


def test_the_honest_halves_certify(kit):
    """The control of the hostile cases below: unedited, these shards merge to CERTIFIED."""
    assert merge_reports(_halves(kit)[2])["verdict"]["label"] == "CERTIFIED"


def _as_one_of_one(kit, shard, keep_clauses):
    """Shard 1/2 edited to claim it was the only one (1/1): its own tests are the whole selection; the other
    shard's clauses dropped from its clause list unless ``keep_clauses``."""
    mine = shard.report["tests"]
    ran = {c for t in mine for c in t["clauses"]}
    clauses = kit.CLAUSES if keep_clauses else [c for c in kit.CLAUSES if c["id"] in ran]
    reason = shard_reason(Shard(1, 1), len(mine), len(mine))
    completeness = {"reasons": [reason], "selected": len(mine), "left_out": [],
                    "shard": {"index": 1, "count": 1, "selection": [t["id"] for t in mine],
                              "assigned": [1] * len(mine), "reason": reason}}
    header = {k: shard.report[k] for k in ("suite", "spec", "backend", "environment", "run")}
    return build_report(header, mine, clauses, {}, completeness)


@pytest.mark.parametrize("how", ["edited by hand", "rebuilt, clauses dropped", "rebuilt, clauses kept"])
def test_a_shard_claiming_1_of_1_with_the_others_clauses_dropped_is_never_certified(kit, how):
    one = _halves(kit)[2][0]
    forged = _as_one_of_one(kit, one, keep_clauses=how == "rebuilt, clauses kept")
    if how == "edited by hand":  # the shard's own summary and verdict as they were, only the claims changed
        forged = {**copy.deepcopy(one.report), "completeness": forged["completeness"], "clauses": forged["clauses"]}
    said = _never_certified([ShardReport("forged.json", "0" * 64, forged)])
    if how == "rebuilt, clauses kept":  # the clause list is the spec's: its must clauses without tests block
        assert said == "NOT CERTIFIED", said
    else:
        assert said.startswith("forged.json: shard 1/1 contradicts itself"), said


def _vendor(kit, **backend):
    header = copy.deepcopy(kit.HEADER)
    header["backend"].update(backend)
    return header


@pytest.mark.parametrize(("how", "said"), [
    ("display name", "is the kit's own backend 'reference', not 'acme'"),
    ("name and target", "ran with isolation 'off', but --isolation auto gives acme.adapter:backend 'process'"),
    ("name and target, --backend on the command line", "its command line names backend 'reference'"),
    ("target alone", "its name 'reference' is the kit's own backend at reference_impl.backend:backend"),
])
def test_shards_of_the_reference_relabelled_as_another_backend_are_refused(kit, how, said):
    """The reference's shards, every shard alike (so they agree), relabelled: what each report records of the run
    (its command line, the isolation it ran in, the kit's own backends by name) gives the relabel away."""
    run = {"isolation": "off", "certify_args": ["--clauses", "push_cache.*"]}
    if how == "display name":
        header = _vendor(kit, name="acme")
    elif how == "target alone":
        header = _vendor(kit, spec="acme.adapter:backend")
        run["isolation"] = "process"
    else:
        header = _vendor(kit, name="acme", spec="acme.adapter:backend")
        if how.endswith("command line"):
            run = {"isolation": "process", "certify_args": ["--backend", "reference"]}
    header["run"].update(run)
    shards = _halves(kit, header)[2]
    text = _never_certified(shards)
    assert said in text and "contradicts itself" in text, text


def test_a_vendor_backend_whose_record_agrees_merges(kit):
    """Not every relabel can be seen: a report whose every field names the same vendor backend merges (only
    `report verify`, which runs it again, can tell whether that backend made the rows)."""
    header = _vendor(kit, name="acme", spec="acme.adapter:backend")
    header["run"].update(isolation="process", certify_args=["--backend", "acme.adapter"])
    assert merge_reports(_halves(kit, header)[2])["verdict"]["label"] == "CERTIFIED"


FAILING_ROWS = {
    "failed": {"message": "push_cache() [x]: bytes differ at 3", "repro": "cm.push_cache(...)\n",
               "push": {"class": "returned", "size": 3}},
    "flaky": {"message": "timed out", "attempts": [{"outcome": "failed", "message": "timed out"},
                                                   {"outcome": "passed"}]},
}


@pytest.mark.parametrize(("was", "how"), [
    ("failed", "outcome alone"), ("failed", "rebuilt, evidence kept"),
    ("flaky", "outcome alone"), ("flaky", "rebuilt, evidence kept"), ("flaky", "rebuilt, attempts kept"),
])
def test_failing_rows_edited_to_passed_are_never_certified(kit, was, how):
    rows = _passing(kit)
    rows[0] = {**rows[0], "outcome": was, **copy.deepcopy(FAILING_ROWS[was])}
    assigned = [1 + i % 2 for i in range(len(rows))]
    one, two = (_shard(kit, k, 2, rows, assigned) for k in (1, 2))
    assert merge_reports([one, two])["verdict"]["label"] != "CERTIFIED"  # the honest merge
    edited = copy.deepcopy(one)
    row = edited.report["tests"][0]
    row["outcome"] = "passed"
    if how == "rebuilt, attempts kept":  # every other trace of the failure scrubbed
        row.update(message=None, repro=None, push=None)
    if how != "outcome alone":
        edited = _rebuilt(edited)
    said = _never_certified([edited, two])
    assert "shard 1/2 contradicts itself" in said, said
    expected = {"outcome alone": "its summary is not what its own rows give",
                "rebuilt, evidence kept": f"row {row['id']} is passed but carries message",
                "rebuilt, attempts kept": "its attempts (failed -> passed) give flaky"}[how]
    assert expected in said, said


def test_a_summary_that_disagrees_with_the_rows_is_refused_by_the_command(kit, tmp_path, capsys):
    one, two = _halves(kit)[2]
    one.report["summary"]["failed"] = 0
    one.report["verdict"]["label"] = "CERTIFIED"
    one.report["tests"][0]["outcome"] = "failed"
    paths = [_write(s, tmp_path / f"s{s.index}") for s in (one, two)]
    assert main(["merge", *map(str, paths), "--out", str(tmp_path / "m")]) == exitcodes.USAGE_ERROR
    line = _one_error_line(capsys)
    assert str(paths[0]) in line and "contradicts itself" in line, line
    assert not (tmp_path / "m").exists()


def test_a_shard_index_outside_its_count_is_a_reason(kit):
    rows, assigned, (one, two) = _halves(kit)
    two.report["completeness"]["shard"]["index"] = 3
    reasons = merge_reports([one, two])["completeness"]["reasons"]
    assert "shard 3/2 (shard-2/report.json) is not one of shards 1..2" in reasons, reasons
    assert f"shard 2/2 missing: {assigned.count(2)} test(s) not run" in reasons, reasons


def test_a_spec_this_kit_does_not_know_is_a_reason(kit):
    header = copy.deepcopy(kit.HEADER)
    header["spec"]["sha256"] = "e" * 64
    merged = merge_reports(_halves(kit, header)[2])
    assert merged["verdict"]["label"] == "PARTIAL", merged["verdict"]
    said = [r for r in merged["completeness"]["reasons"] if "is not this kit's packaged spec" in r]
    assert said == ["spec release 9.0.0 (sha256 eeeeeeeeeeee) is not this kit's packaged spec, so the shards' "
                    "clause list cannot be checked against it"], merged["completeness"]["reasons"]


def test_the_kits_own_backends_are_named_as_their_entry_points():
    """What identity_problems relies on: each of the kit's own backends with an entry point is named as it."""
    from conformance_tests.resolution import resolve_backend

    own = shard_checks.own_backends()
    assert "reference_impl.backend:backend" in own, own
    for target, name in own.items():
        backend, _ = resolve_backend(target)
        assert backend.name == name, (target, backend.name, name)

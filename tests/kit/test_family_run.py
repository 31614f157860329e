"""``certify`` without ``--operation`` (or ``--operation all``, or the option repeated): each operation certified in
a process of its own, then family.json (conformance_tests/report/family.schema.json) with each operation's verdict
and the family's, whose exit code is the most severe of theirs; what --clauses, --spec-version and --failed-from
mean across the operations (docs/family.md, "The family on the command line")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from conformance_tests.cli import exitcodes
from conformance_tests.cli.family_run import family_asked, most_severe, plan
from conformance_tests.report.verify import rerun_plan
from conformance_tests.spec import specified_operations
from tests.helpers import ROOT
from tests.helpers.ssh import CI_ENV

SCHEMA = json.loads((ROOT / "conformance_tests" / "report" / "family.schema.json").read_text(encoding="utf-8"))
#: a clause every operation's spec has (its return value), so that a run of the family stays short
EACH_ONE = "*.signature.returns_none"

# one worker runs the module: its fixture's family run then happens once
pytestmark = pytest.mark.xdist_group("test_family_run")


def _certify(cwd: Path, *args: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "PUSH_CACHE_BACKEND"}
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "-q", "-p", "no:warnings", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def _family(path: Path) -> dict:
    family = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.validate(family, SCHEMA)
    return family


def _report(cwd: Path, row: dict) -> dict:
    return json.loads((cwd / row["report"]).read_text(encoding="utf-8"))


def _lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.strip()]


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """``certify --clauses push_cache.signature.*`` with no --operation, from a folder of its own."""
    cwd = tmp_path_factory.mktemp("family-default")
    code, out = _certify(cwd, "--clauses", "push_cache.signature.*")
    return cwd, code, out


def test_the_default_certifies_every_operation_each_in_its_own_place(tmp_path):
    code, out = _certify(tmp_path, "--clauses", EACH_ONE)
    family = _family(tmp_path / "reports" / "reference@family.partial" / "family.json")
    assert code == exitcodes.PARTIAL and family["verdict"] == "PARTIAL", out[-2000:]
    assert [r["operation"] for r in family["operations"]] == list(specified_operations())
    for row in family["operations"]:
        report = _report(tmp_path, row)
        assert report["spec"]["operation"] == row["operation"] and row["verdict"] == report["verdict"]["label"]
        assert report["run"]["certify_args"][:2] == ["--operation", row["operation"]]  # one operation's run
        assert {"-p", "no:warnings"} <= set(report["run"]["certify_args"])  # the rest passed through
    # push_cache where the README puts it (partial beside reports/reference/), the others beside it
    places = {r["operation"]: r["report"] for r in family["operations"]}
    assert places["push_cache"] == "reports/reference.partial/report.json", places
    assert all(where == f"reports/reference@{op}.partial/report.json"
               for op, where in places.items() if op != "push_cache"), places
    assert out.count("family verdict: PARTIAL") == 1
    after = out[out.index("family verdict:"):].splitlines()[1:]  # stderr (warnings) follows stdout here
    rows = [ln.split()[0] for ln in after[:len(specified_operations()) + 1] if ln.startswith("  ")]
    assert rows == list(specified_operations()), after  # one line per operation, in the family's order


def test_operation_all_is_the_default_and_report_dir_keeps_a_folder_per_operation(tmp_path):
    code, out = _certify(tmp_path, "--operation", "all", "--clauses", EACH_ONE, "--report-dir", "out")
    family = _family(tmp_path / "out" / "family.json")
    assert code == exitcodes.PARTIAL, out[-2000:]
    assert [(r["operation"], r["report"]) for r in family["operations"]] == [
        (op, f"out/{op}/report.json") for op in specified_operations()]
    assert not (tmp_path / "reports").exists()


def test_clauses_go_to_their_operation_and_one_named_by_none_is_not_run(default_run):
    cwd, code, out = default_run
    family = _family(cwd / "reports" / "reference@family.partial" / "family.json")
    rows = {r["operation"]: r for r in family["operations"]}
    assert code == exitcodes.PARTIAL and family["verdict"] == "PARTIAL", out[-2000:]
    args = _report(cwd, rows["push_cache"])["run"]["certify_args"]
    assert args[args.index("--clauses") + 1] == "push_cache.signature.*", args
    for op in specified_operations()[1:]:
        assert rows[op]["exit_code"] is None and rows[op]["report"] is None, rows[op]
        assert rows[op]["not_run"] == "--clauses 'push_cache.signature.*' names none of its clauses"
        assert f"  {op:<12} not run: --clauses" in out, out[-1500:]
    assert not (cwd / "reports" / "reference@push_blocks.partial").exists()


@pytest.mark.parametrize(("args", "said"), [
    (("--clauses", "push_cache.signature.*,pull_nothing.data.*"), "--clauses 'pull_nothing.data.*': names no "
                                                                   "operation of this run"),
    (("--spec-version", "7.0.0"), "--spec-version 7.0.0: not a release of any operation's spec; known: push_cache: "),
    (("--no-such-option",), "unrecognized arguments: --no-such-option"),
    (("--operation", "push_blocks", "--operation", "pull_nothing"), "--operation 'pull_nothing': no packaged spec"),
    (("--jobs", "0"), "--jobs '0': the number of operations certified at once, 1 or more"),
    (("--jobs", "two"), "--jobs 'two': the number of operations certified at once, 1 or more"),
    # refused by the first operation's run: the others start only once its session has begun
    (("--backend", "no_such_backend_module"), "backend 'no_such_backend_module': not an entry point"),
])
def test_arguments_no_operation_can_run_are_one_line_and_exit_2(tmp_path, args, said):
    code, out = _certify(tmp_path, *args)
    assert code == exitcodes.USAGE_ERROR and len(_lines(out)) == 1 and said in out, out
    assert not (tmp_path / "reports").exists()


def test_a_release_goes_to_the_operations_whose_spec_has_it(tmp_path):
    code, out = _certify(tmp_path, "--spec-version", "8.5.0", "--clauses", EACH_ONE)
    assert code == exitcodes.PARTIAL, out[-2000:]
    family = _family(tmp_path / "reports" / "reference@family@8.5.0.partial" / "family.json")
    rows = {r["operation"]: r for r in family["operations"]}
    assert _report(tmp_path, rows["push_cache"])["spec"]["version"] == "8.5.0"
    assert rows["push_cache"]["report"] == "reports/reference@8.5.0.partial/report.json"
    assert rows["push_blocks"]["exit_code"] is None
    assert rows["push_blocks"]["not_run"] == "its spec has no release 8.5.0 (its releases: 9.0.0)"
    assert "push_blocks  not run: its spec has no release 8.5.0" in out


def test_an_operation_without_the_release_leaves_the_verdict_alone_a_selection_does_not():
    """Left out for a release (nothing of it to judge), an operation does not make the family partial; left out by
    --clauses or --failed-from (chosen away), it does."""
    steps = {s.operation: s for s in plan(["--spec-version", "8.5.0"]).steps}
    assert steps["push_cache"].args == ["--operation", "push_cache", "--spec-version", "8.5.0"]
    assert steps["push_blocks"].not_run and not steps["push_blocks"].narrowed
    assert plan(["--spec-version", "9.0.0"]).release_tag is None  # every operation's newest: the default folder
    steps = {s.operation: s for s in plan(["--clauses", "push_cache.data.*"]).steps}
    assert steps["push_blocks"].not_run and steps["push_blocks"].narrowed
    everyone = {s.operation: s.args for s in plan(["--clauses", "*.data.*,push_blocks.signature.*"]).steps}
    assert everyone["push_cache"][-2:] == ["--clauses", "*.data.*"]
    assert everyone["push_blocks"][-2:] == ["--clauses", "*.data.*,push_blocks.signature.*"]


def test_failed_from_certifies_only_the_operation_of_its_report(tmp_path):
    code, out = _certify(tmp_path, "--operation", "push_blocks", "--clauses", "push_blocks.signature.*",
                         "--report-dir", "first")
    assert code == exitcodes.PARTIAL, out[-2000:]
    code, out = _certify(tmp_path, "--failed-from", "first/report.json")
    assert code == exitcodes.PARTIAL, out[-2000:]
    family = _family(tmp_path / "reports" / "reference@family.partial" / "family.json")
    rows = {r["operation"]: r for r in family["operations"]}
    assert rows["push_blocks"]["report"] == "reports/reference@push_blocks.partial/report.json", rows
    args = _report(tmp_path, rows["push_blocks"])["run"]["certify_args"]
    assert args[args.index("--failed-from") + 1] == "first/report.json"
    assert rows["push_cache"]["not_run"] == "--failed-from first/report.json is a report of push_blocks"
    # a report from before the family names no operation: push_cache's
    old = json.loads((tmp_path / "first" / "report.json").read_text(encoding="utf-8"))
    old["spec"].pop("operation")
    (tmp_path / "old.json").write_text(json.dumps(old), encoding="utf-8")
    steps = {s.operation: s for s in plan(["--failed-from", str(tmp_path / "old.json")]).steps}
    assert steps["push_cache"].args[-2:] == ["--failed-from", str(tmp_path / "old.json")] and \
        steps["push_blocks"].not_run


def test_one_operation_failing_fails_the_family(tmp_path):
    # from the clone: the mutants are importable there (not installed with the kit)
    code, out = _certify(ROOT, "--operation", "push_cache", "--operation", "push_blocks", "--backend",
                         "mutants.catalog:blocks_sorted", "--report-dir", str(tmp_path / "out"),
                         "--clauses", "push_cache.signature.returns_none,push_blocks.data.postcondition")
    family = _family(tmp_path / "out" / "family.json")
    rows = {r["operation"]: r for r in family["operations"]}
    assert rows["push_cache"]["exit_code"] == exitcodes.PARTIAL, out[-2000:]
    assert rows["push_blocks"]["exit_code"] == exitcodes.NOT_CERTIFIED
    assert code == exitcodes.NOT_CERTIFIED and family["verdict"] == "NOT_CERTIFIED"


def _running(parent: int, operation: str) -> bool:
    """Whether a child process of ``parent`` certifies ``operation`` now (Linux: read from /proc)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and operation.encode() in argv:
            return True
    return False


def _stopped_at_first_test(cwd: Path, *args: str, beside: str | None = None) -> tuple[int, str]:
    """A family run sent SIGTERM as push_cache's first test ends (and, where ``beside`` names an operation, once
    that operation's run is in progress too: its output is held until push_cache's run ends, and a short run
    could end before push_cache's first test does): its exit code and what it printed."""
    # unbuffered: the progress dots come as push_cache's tests end (a stop before its tests start is no test of this)
    env = {k: v for k, v in os.environ.items() if k != "PUSH_CACHE_BACKEND"} | {"PYTHONUNBUFFERED": "1"}
    # every push_blocks clause: its run must outlast push_cache's first test, which can take seconds under load (with
    # its data and history clauses alone it ended before the signal once, CI simulation 19)
    clauses = "push_cache.data.*,push_blocks.*"
    proc = subprocess.Popen([sys.executable, "-m", "conformance_tests", "certify", "-q", "-p", "no:warnings",
                             "--clauses", clauses, "--report-dir", "out", *args],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen, deadline = "\n", time.monotonic() + 120
    while not seen.endswith("\n.") and time.monotonic() < deadline and proc.poll() is None:
        seen += proc.stdout.read(1)  # the first test's dot, at the start of a line (-q shows nothing before)
    while beside is not None and not _running(proc.pid, beside) and time.monotonic() < deadline \
            and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out = seen + proc.communicate(timeout=120)[0]
    return proc.returncode, out


def test_sigterm_ends_the_operation_in_progress_and_starts_no_other(tmp_path):
    """What CI and ``timeout`` send reaches the operation's own run, which writes its partial report; the family
    then records the operations it did not start and is partial (one operation at a time: --jobs 1)."""
    code, out = _stopped_at_first_test(tmp_path, "--jobs", "1")
    assert code == exitcodes.PARTIAL, out[-2000:]
    family = _family(tmp_path / "out" / "family.json")
    rows = {r["operation"]: r for r in family["operations"]}
    report = _report(tmp_path, rows["push_cache"])
    assert "SIGTERM received" in (report["completeness"]["interrupted"] or ""), report["completeness"]
    assert rows["push_blocks"]["not_run"] == "the run was stopped (SIGTERM) before it started", rows


def _not_passed(cwd: Path, rows: dict[str, dict]) -> dict[str, list[tuple[str, str, str]]]:
    """Per operation with a report, its tests that neither passed nor were skipped (id, outcome, message)."""
    out = {}
    for op, row in rows.items():
        if row.get("report"):
            tests = _report(cwd, row)["tests"]
            out[op] = [(t["id"], t["outcome"], (t.get("message") or "")[:600]) for t in tests
                       if t["outcome"] not in ("passed", "skipped", "not_supported")]
    return out


def test_sigterm_reaches_every_operation_in_progress(tmp_path):
    """Two at once (the default): push_blocks's run started once push_cache's had begun its session, so both are
    in progress at push_cache's first test. Each gets the signal (push_blocks's once its session has begun, so it
    is never stopped unreported) and writes a partial report that says so; the console still shows push_cache's run
    before push_blocks's."""
    code, out = _stopped_at_first_test(tmp_path, beside="push_blocks")
    family = _family(tmp_path / "out" / "family.json")
    rows = {r["operation"]: r for r in family["operations"]}
    # each run's own console (a child's traceback among it) and how each ended (killed_by: a signal)
    assert code == exitcodes.PARTIAL, (rows, _not_passed(tmp_path, rows), out[-3000:])
    for op in ("push_cache", "push_blocks"):
        assert rows[op]["exit_code"] == exitcodes.PARTIAL and rows[op]["report"] is not None, (rows, out[-6000:])
        report = _report(tmp_path, rows[op])
        assert "SIGTERM received" in (report["completeness"]["interrupted"] or ""), (op, report["completeness"])
    assert out.index("push_cache conformance") < out.index("== certify --operation push_blocks (2 of 2)") \
        < out.index("push_blocks conformance") < out.index("family verdict: PARTIAL"), out[-3000:]


def test_verify_runs_a_report_recorded_without_an_operation_as_its_operation_alone(default_run, tmp_path):
    cwd, _, _ = default_run
    report = json.loads((cwd / "reports" / "reference.partial" / "report.json").read_text(encoding="utf-8"))
    report["run"]["certify_args"] = report["run"]["certify_args"][2:]  # as certify recorded it before the family
    assert "--operation" not in report["run"]["certify_args"]
    assert "--operation=push_cache" in rerun_plan(report, tmp_path).args
    report["spec"]["operation"] = "push_blocks"
    assert "--operation=push_blocks" in rerun_plan(report, tmp_path).args


@pytest.mark.parametrize(("args", "family"), [
    ((), True), (("--clauses", "push_cache.data.*"), True), (("--operation", "all"), True),
    (("--operation", "push_cache", "--operation=push_blocks"), True), (("--operation", "push_blocks"), False),
    (("--spec", "spec/push_cache.yaml"), False)])
def test_what_asks_for_the_family(args, family):
    assert family_asked(args) is family


@pytest.mark.parametrize(("codes", "worst"), [
    ((0, 5), 5), ((5, 1), 1), ((6, 0), 6), ((1, 3), 3), ((4, 2), 2), ((0, 0), 0)])
def test_the_family_takes_the_most_severe_exit_code(codes, worst):
    assert most_severe(codes) == worst


@pytest.mark.heavy  # the whole family certified (about 75 s): tox -e heavy (CI) reads what the main job wrote
def test_the_main_job_certifies_every_operation(tmp_path):
    """The README's main job (``tox -e certify``, CI's first step) certifies the reference for every operation with
    a spec: one verdict per operation, each CERTIFIED, and the family CERTIFIED."""
    main_job = ROOT / "reports" / "reference@family" / "family.json"
    if not os.environ.get(CI_ENV):
        code, out = _certify(tmp_path)
        assert code == exitcodes.CERTIFIED, out[-3000:]
        main_job = tmp_path / "reports" / "reference@family" / "family.json"
    family = _family(main_job)
    assert [(r["operation"], r["verdict"]) for r in family["operations"]] == [
        (op, "CERTIFIED") for op in specified_operations()], family
    assert family["verdict"] == "CERTIFIED" and family["exit_code"] == exitcodes.CERTIFIED
    push_cache = next(r for r in family["operations"] if r["operation"] == "push_cache")
    assert push_cache["report"].endswith("reports/reference/report.json")  # where the README says it goes


@pytest.mark.parametrize(("status", "stopped", "code", "name"), [
    (-signal.SIGTERM, True, exitcodes.PARTIAL, "SIGTERM"), (-signal.SIGKILL, False, exitcodes.INTERNAL_ERROR, "SIGKILL"),
    (exitcodes.INTERNAL_ERROR, True, exitcodes.INTERNAL_ERROR, None), (exitcodes.PARTIAL, True, exitcodes.PARTIAL, None)])
def test_a_run_killed_by_a_signal_is_read_by_the_family_and_its_row_names_the_signal(tmp_path, status, stopped, code,
                                                                                     name):
    """A process that exited by itself keeps its code (a 4 is its own); one killed by the signal the family's stop
    passed on is partial, by any other an internal error; family.json says which signal (killed_by)."""
    import queue

    from conformance_tests.cli.family_processes import OperationProcess
    from conformance_tests.cli.family_run import Step, _row

    run = OperationProcess(0, [], queue.Queue())
    run._result_path = str(tmp_path / "said.json")
    (tmp_path / "said.json").write_text("{}", encoding="utf-8")
    ended = run.finish(status, stopped)
    assert (ended.code, ended.signal) == (code, name)
    row, _ = _row(Step("push_cache"), ended)
    assert row.get("killed_by") == name and row["exit_code"] == code
    jsonschema.validate({"family_version": 2, "exit_code": code, "verdict": "X", "operations": [row]}, SCHEMA)

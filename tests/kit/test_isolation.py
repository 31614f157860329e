"""Crash and hang isolation, the time budget and parallel runs (issue 12, items 3, 4 and 9), through the CLI.

The fakes in ``fakes/crash_backend.py`` work for source batch 0 and die (SIGSEGV, ``os._exit(3)``) or wedge
their process holding the GIL when a push asks for batch 1.  Each run selects three data clauses: a few tests
meet the defect, the others must pass after it, and every run must write its report.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance_tests.cli.exitcodes import NOT_CERTIFIED, PARTIAL
from conformance_tests.cli.options import OPTIONS
from conformance_tests.resolution import IN_PROCESS_BY_DEFAULT
from conformance_tests.running.deadlines import Deadlines, Hung, RaisedInterrupt
from conformance_tests.running.state import DEFAULT_MAX_TIME_S
from tests.helpers import ROOT
from tests.helpers.certify import FAKES, ONE_OPERATION, certify
from tests.helpers.processes import child_running, process_gone

#: the batch-1 pushes are in src_batch_slice[batch_1] and size_default's two tests; the others push batch 0, 2, 3
CLAUSES = "push_cache.data.src_batch_slice,push_cache.data.size_default,push_cache.data.dst_batch_slice"
MEETS_THE_DEFECT = {"push_cache.data.src_batch_slice-batch_1", "push_cache.data.size_default-explicit_minus_one",
                    "push_cache.data.size_default-middle_batch"}


def load(folder: Path) -> dict:
    return json.loads((folder / "report.json").read_text(encoding="utf-8"))


def by_param(report: dict) -> dict[str, dict]:
    return {re.search(r"\[(.*)\]$", t["id"]).group(1): t for t in report["tests"]}


def outcomes(report: dict) -> dict[str, str]:
    return {t["id"]: t["outcome"] for t in report["tests"]}


@pytest.mark.parametrize(("fake", "how"), [
    ("segfault", "was killed by signal SIGSEGV"),
    ("exit3", "exited with status 3"),
])
def test_a_crashing_backend_costs_one_test_per_crash_and_the_report_is_written(tmp_path, fake, how):
    out = tmp_path / "r"
    # --isolation is left to its default (auto): a backend other than the reference runs in its own process
    proc = certify("--isolation", "auto", "--backend", f"crash_backend:{fake}", "--clauses", CLAUSES,
                   "--report-dir", str(out))
    assert proc.returncode == NOT_CERTIFIED, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "in its own process" in proc.stdout
    report = load(out)
    rows = by_param(report)
    crashed = {k for k, t in rows.items() if t["outcome"] == "error"}
    assert crashed == MEETS_THE_DEFECT, {k: t["outcome"] for k, t in rows.items()}
    for key in crashed:
        message = rows[key]["message"]
        assert how in message and "push_cache" in message, message
        assert f"fake-{fake}: push_cache from batch 1, going down now" in message, message  # the output's tail
    assert all(t["outcome"] == "passed" for k, t in rows.items() if k not in crashed)  # the run went on
    assert report["run"]["isolation"] == "process"
    assert report["run"]["backend_processes"] == 1 + len(crashed)  # a new process after each crash
    assert report["verdict"]["blocking"] == ["push_cache.data.size_default", "push_cache.data.src_batch_slice"]


def test_a_backend_hanging_in_native_code_holding_the_gil_is_killed_and_the_run_finishes(tmp_path):
    out = tmp_path / "r"
    started = time.monotonic()
    proc = certify("--isolation", "process", "--backend", "crash_backend:gil_hang", "--clauses", CLAUSES,
                   "--timeout", "6", "--report-dir", str(out), timeout=240)
    took = time.monotonic() - started
    assert proc.returncode == NOT_CERTIFIED, proc.stdout[-3000:] + proc.stderr[-2000:]
    rows = by_param(load(out))
    stuck = {k for k, t in rows.items() if t["outcome"] != "passed"}
    assert stuck == MEETS_THE_DEFECT, {k: t["outcome"] for k, t in rows.items()}
    for key in stuck:
        message = rows[key]["message"]
        # a push that never returns is a verdict on push_cache; the kit killed the process to get on
        assert "did not return" in message and "killed the backend's process (SIGKILL)" in message, message
    assert took < 200, f"three hangs bounded by a 6 s test timeout took {took:.0f}s"


def test_parallel_workers_write_the_same_report_as_a_serial_run(tmp_path):
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    args = ("--backend", "crash_backend:segfault", "--isolation", "process", "--clauses",
            CLAUSES + ",push_cache.signature.*")
    first = certify(*args, "--report-dir", str(serial))
    second = certify(*args, "-n", "2", "--report-dir", str(parallel))
    assert first.returncode == second.returncode == NOT_CERTIFIED, second.stdout[-3000:]
    a, b = load(serial), load(parallel)
    assert outcomes(a) == outcomes(b) and len(a["tests"]) > 10
    assert a["verdict"] == b["verdict"] and a["completeness"] == b["completeness"]
    for key in ("push_calls", "distinct_layouts"):
        assert a["run"][key] == b["run"][key] > 0, key
    # processes are not the same count: each worker starts its own, and a loss in a worker's last test needs no
    # new one (which test that is depends on how the tests were shared out); the serial run's last test passes
    lost = sum(1 for t in a["tests"] if t["outcome"] == "error")
    assert a["run"]["backend_processes"] == 1 + lost, a["run"]
    assert lost <= b["run"]["backend_processes"] <= 2 + lost, (lost, b["run"])
    messages = {t["id"]: t["message"] for t in b["tests"] if t["outcome"] == "error"}
    assert messages and all("SIGSEGV" in m for m in messages.values())
    # in the workers' own process, each crash takes a pytest-xdist worker down instead; the worker is replaced,
    # its test is an error row, and the report is still the serial run's
    crashed = tmp_path / "crashed"
    third = certify(*args[:2], "--isolation", "off", *args[4:], "-n", "2", "--report-dir", str(crashed))
    assert third.returncode == NOT_CERTIFIED, third.stdout[-3000:]
    c = load(crashed)
    assert outcomes(c) == outcomes(a) and c["verdict"]["blocking"] == a["verdict"]["blocking"]
    assert all("crashed while running" in t["message"] for t in c["tests"] if t["outcome"] == "error")


def test_isolation_does_not_change_what_a_conforming_backend_gets(tmp_path):
    clauses = "push_cache.signature.*,push_cache.data.postcondition,push_cache.safety.*,push_cache.param.size.*"
    runs = {}
    for mode in ("off", "process"):
        certify("--backend", "reference", "--isolation", mode, "--clauses", clauses,
                "--report-dir", str(tmp_path / mode))
        runs[mode] = load(tmp_path / mode)
    assert outcomes(runs["off"]) == outcomes(runs["process"])
    assert runs["off"]["run"]["push_calls"] == runs["process"]["run"]["push_calls"] > 300
    assert runs["process"]["run"]["backend_processes"] == 1


def test_the_time_budget_records_the_rest_as_not_run(tmp_path):
    out = tmp_path / "r"
    proc = certify("--backend", "reference", "--clauses", "push_cache.signature.*,push_cache.param.*",
                   "--max-time", "0.5", "--report-dir", str(out))
    assert proc.returncode == PARTIAL, proc.stdout[-3000:]
    report = load(out)
    comp = report["completeness"]
    assert report["run"]["out_of_time"] and report["run"]["max_time_s"] == 0.5
    assert any(r.startswith("stopped early: --max-time 0.5s spent") for r in comp["reasons"]), comp["reasons"]
    assert comp["left_out_counts"].get("not run", 0) > 0
    assert len(report["tests"]) >= 1  # the test that spent the budget finished and is reported


def test_a_bad_time_budget_is_one_usage_line(tmp_path):
    proc = certify("--max-time", "-3", "--no-reports")
    assert proc.returncode == 2 and "--max-time -3" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_an_interrupt_writes_a_partial_report_beside_the_full_one_and_ends_the_backend_process(tmp_path, sig):
    """Ctrl-C, and SIGTERM or SIGHUP (what CI, ``timeout`` and a closed terminal send) alike: a partial report
    beside the full one (left as it was), exit code 5, the backend's process ended."""
    out = tmp_path / "r"
    out.mkdir()
    full = json.dumps({"verdict": {"label": "CERTIFIED"}, "completeness": {"full": True}})
    (out / "report.json").write_text(full, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(FAKES), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance_tests", "certify",
         *ONE_OPERATION, "--backend", "crash_backend:gil_hang",
         "--isolation", "process", "--clauses", CLAUSES, "--timeout", "120", "--report-dir", str(out)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    child = None
    while time.monotonic() < deadline and child is None:
        time.sleep(0.5)
        child = child_running(proc.pid, "conformance_tests.isolation.child")
    assert child is not None, "the backend's process never started"
    time.sleep(3)  # into the hanging test
    proc.send_signal(sig)
    text, _ = proc.communicate(timeout=60)
    assert proc.returncode == PARTIAL, text[-3000:]
    interrupted = load(out.with_name("r.partial"))["completeness"]["interrupted"] or ""
    assert "KeyboardInterrupt" in interrupted and (sig == signal.SIGINT or f"{sig.name} received" in interrupted)
    assert (out / "report.json").read_text(encoding="utf-8") == full, "the full report was overwritten"
    time.sleep(0.5)
    assert process_gone(child), "the backend's process outlived the run"


def test_deadlines_bound_an_in_process_call_and_follow_the_test_deadline():
    import threading

    deadlines = Deadlines()
    forever = threading.Event()
    with pytest.raises(Hung):
        deadlines.call(forever.wait, bound=0.2)
    assert deadlines.call(lambda x: x + 1, 1, bound=5) == 2
    for raised in (KeyboardInterrupt, SystemExit):  # the backend's own, on the calling thread: its call fails

        def backend_call(exc: type[BaseException] = raised) -> None:
            raise exc("from the backend")

        with pytest.raises(RaisedInterrupt, match=f"the backend raised {raised.__name__}"):
            deadlines.call(backend_call, bound=5)
    deadlines.start_test(0.5)
    try:
        assert deadlines.remaining(30) <= 0.5
    finally:
        deadlines.end_test()
    assert deadlines.remaining(30) == 30


def test_readme_isolation_section_matches_the_code():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Isolation, time budget and parallel runs", 1)
    assert len(section) == 2, "README.md lacks its '## Isolation, time budget and parallel runs' section"
    body = section[1].split("\n## ", 1)[0]
    choices = next(kw["choices"] for flags, kw in OPTIONS if flags == ("--isolation",))
    for mode in choices:
        assert f"`{mode}`" in body, f"the README does not describe --isolation {mode}"
    assert f"{DEFAULT_MAX_TIME_S:.0f}" in body, "the README states another default for --max-time"
    for target in IN_PROCESS_BY_DEFAULT:
        assert target in body, f"the README does not name {target} as run in process by default"

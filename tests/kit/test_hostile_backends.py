"""Isolation protects the kit (issue 21): a backend cannot run code in the kit's process through what it sends,
its KeyboardInterrupt is its own failure, a crash is seen when its process exits, and nothing it starts outlives
the run (SIGTERM and SIGHUP ending a run as Ctrl-C does: tests/kit/test_isolation.py).

The fakes (``fakes/hostile_backend.py``, ``fakes/crash_backend.py``) meet their defect on the pushes from source
batch 1, which ``push_cache.data.src_batch_slice`` makes among passing tests.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conformance_tests.exitcodes import NOT_CERTIFIED, USAGE_ERROR
from tests.helpers.certify import certify
from tests.helpers.processes import process_gone

CLAUSES = "push_cache.data.src_batch_slice"
BATCH_1 = "push_cache.data.src_batch_slice-batch_1"


def rows(folder: Path) -> dict[str, dict]:
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return {t["id"].rsplit("[", 1)[1].rstrip("]"): t for t in report["tests"]}


def run(tmp_path: Path, fake: str, *extra: str, **env: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    marker, out = tmp_path / "marker", tmp_path / "report"
    proc = certify("--isolation", "process", "--backend", f"hostile_backend:{fake}", "--clauses", CLAUSES,
                   "--report-dir", str(out), *extra, env={"HOSTILE_MARKER": str(marker), **env})
    return proc, out, marker


def test_a_pickle_in_capabilities_cannot_switch_the_data_checks_off(tmp_path):
    """The data-bug backend: its capabilities hold an object whose __reduce__ would disable the kit's checks."""
    proc, out, marker = run(tmp_path, "data_bug")
    assert not marker.exists(), "the backend ran code in the kit's process"
    assert proc.returncode == NOT_CERTIFIED, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "push_cache capability left out (not data): 'vendor_notes'" in proc.stdout
    assert rows(out)[BATCH_1]["outcome"] == "failed"


@pytest.mark.parametrize("fake", ["evil_exception", "evil_result"])
def test_objects_that_run_code_when_unpickled_stay_in_the_backends_process(tmp_path, fake):
    proc, out, marker = run(tmp_path, fake)
    assert not marker.exists(), "the backend ran code in the kit's process"
    row = rows(out)[BATCH_1]
    if fake == "evil_exception":  # an exception crosses as a record: its kind (a ValueError) fails the push
        assert proc.returncode == NOT_CERTIFIED and row["outcome"] == "failed", row
        assert "ValueError" in row["message"], row["message"]
    else:  # the object returned stays in the backend's process: the kit holds an inert handle, the data is right
        assert row["outcome"] == "passed", row


@pytest.mark.parametrize(("fake", "said"), [
    ("wire_result", "not data"),
    ("wire_exception", "not data"),
    ("wire_handle", "not data"),
    ("wire_frame", "broke the wire"),
])
def test_a_pickle_on_the_pipe_is_an_error_row_naming_the_call(tmp_path, fake, said):
    proc, out, marker = run(tmp_path, fake, HOSTILE_WIRE=fake)
    assert not marker.exists(), "the backend ran code in the kit's process"
    assert proc.returncode == NOT_CERTIFIED, proc.stdout[-3000:] + proc.stderr[-2000:]
    row = rows(out)[BATCH_1]
    assert row["outcome"] == "error", row
    assert said in row["message"] and "push_cache" in row["message"], row["message"]
    assert all(t["outcome"] == "passed" for k, t in rows(out).items() if k != BATCH_1)


def test_a_pickle_as_capabilities_is_a_usage_error_of_one_line(tmp_path):
    proc, _out, marker = run(tmp_path, "wire_caps", HOSTILE_WIRE="wire_caps")
    assert not marker.exists(), "the backend ran code in the kit's process"
    assert proc.returncode == USAGE_ERROR, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "not data" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(("fake", "kind"), [("keyboard_interrupt", "KeyboardInterrupt"), ("system_exit", "SystemExit")])
def test_a_backends_keyboard_interrupt_is_that_tests_failure(tmp_path, fake, kind):
    proc, out, _marker = run(tmp_path, fake)
    assert proc.returncode == NOT_CERTIFIED, proc.stdout[-3000:] + proc.stderr[-2000:]
    row = rows(out)[BATCH_1]
    assert row["outcome"] == "failed" and kind in row["message"], row
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["completeness"]["interrupted"] is None  # the run was not interrupted: it finished


def test_a_crash_is_seen_when_the_process_exits_even_with_a_daemon_holding_its_pipe(tmp_path):
    pid_file, out = tmp_path / "orphan.pid", tmp_path / "report"
    proc = certify("--isolation", "process", "--backend", "crash_backend:orphan_segfault", "--clauses", CLAUSES,
                   "--timeout", "60", "--report-dir", str(out), env={"ORPHAN_PID_FILE": str(pid_file)})
    assert proc.returncode == NOT_CERTIFIED, proc.stdout[-3000:] + proc.stderr[-2000:]
    row = rows(out)[BATCH_1]
    assert row["outcome"] == "error" and "was killed by signal SIGSEGV" in row["message"], row
    assert row["duration_s"] < 5, f"the crash was seen {row['duration_s']:.1f}s into the test, not at its exit"
    orphan = int(pid_file.read_text())
    assert process_gone(orphan), f"the backend's daemon {orphan} outlived the run"

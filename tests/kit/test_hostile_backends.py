"""Isolation protects the kit (issue 21): a backend cannot run code in the kit's process through what it sends,
its KeyboardInterrupt is its own failure, a crash is seen when its process exits, and nothing it starts outlives
the run (SIGTERM and SIGHUP ending a run as Ctrl-C does: tests/kit/test_isolation.py).

Frames that decode into far more memory than they take on the wire, or replies to requests never made, fail
the call they answer, and the kit's memory stays bounded (``fakes/amplifying_backend.py``; the wire's bounds
themselves: tests/wire/test_bounds.py).

The fakes (``fakes/hostile_backend.py``, ``fakes/crash_backend.py``, ``fakes/amplifying_backend.py``) meet their defect on the pushes from source
batch 1, which ``push_cache.data.src_batch_slice`` makes among passing tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance_tests.cli.exitcodes import ADAPTER_ERROR, NOT_CERTIFIED, USAGE_ERROR
from tests.helpers import ROOT, child_pythonpath
from tests.helpers.certify import FAKES, ONE_OPERATION, certify
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


#: a launcher that runs certify and prints the peak RSS of it and everything it reaped (resource.getrusage): Linux
#: gives a new program the peak of the process that executed it, so the launcher is a small process of its own
PEAK = ("import json, resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
        "print(json.dumps({'rc': rc, 'mib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))")
#: what the kit's process may peak at in these runs (a few tests of one clause: some 80 MiB; the attacks took it
#: to 660 and 350 MiB before the wire bounded them)
PEAK_MIB = 250


@pytest.mark.parametrize(("attack", "said"), [
    ("values", "a message of more than 1048576 values"),
    ("request_ids", "broke the wire during AimingCacheManager.push_cache: it answered request"),
])
def test_small_frames_that_would_take_the_kits_memory_fail_that_call_and_the_run_goes_on(tmp_path, attack, said):
    """8 MB of empty maps as a push's reply, or 400,000 replies to requests never made: that push is an error row
    naming it, the other tests pass, and the kit's peak RSS stays bounded."""
    out = tmp_path / "report"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NODEHOST_") and k != "PUSH_CACHE_BACKEND"}
    env.update(AMPLIFY=attack, PYTHONPATH=child_pythonpath([FAKES]))
    proc = subprocess.run([sys.executable, "-c", PEAK, sys.executable, "-m", "conformance_tests", "certify",
                           *ONE_OPERATION, "-p", "no:warnings", "--isolation", "process", "--backend",
                           f"amplifying_backend:{attack}", "--clauses", CLAUSES, "--report-dir", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    measured = json.loads(proc.stdout.splitlines()[-1])
    assert measured["rc"] == NOT_CERTIFIED, proc.stdout[-3000:] + proc.stderr[-2000:]
    row = rows(out)[BATCH_1]
    assert row["outcome"] == "error" and said in row["message"] and "push_cache" in row["message"], row
    assert all(t["outcome"] == "passed" for k, t in rows(out).items() if k != BATCH_1)
    assert measured["mib"] < PEAK_MIB, f"certify --backend amplifying_backend:{attack}: peak RSS {measured}"


@pytest.mark.parametrize(("fake", "said"), [
    ("unreadable", "node.api.CacheDesc was rejected when the backend's process described node.api: reading it in "
                   "the backend's process failed ('reading it raised RuntimeError: CacheDesc is not available"),
    ("unhashable", "node.api.DataType was rejected when the backend's process described node.api: the value of "
                   "its member DT_FLOAT is a list, not plain data: [1, 2]; it sent 'DataType': [False, [['DT_FLOAT', "
                   "[1, 2]]"),
])
def test_a_node_api_the_kit_cannot_take_whole_is_said_with_what_was_sent(tmp_path, fake, said):
    """A name the backend's process could not read, or an enum member whose value is a list: the kit builds the rest
    of node.api, and the name, read later, says it was rejected and why (not a bare TypeError, not "'KitApi'
    object has no attribute")."""
    out = tmp_path / "report"
    proc = certify("--isolation", "process", "--backend", f"odd_api_backend:{fake}", "--clauses", CLAUSES,
                   "--report-dir", str(out), env={"ODD_API": fake})
    text = proc.stdout + proc.stderr
    assert proc.returncode == ADAPTER_ERROR, text[-3000:]
    assert said in text, text[-3000:]
    assert "unhashable" not in text and "'KitApi' object" not in text and "Traceback" not in text, text[-3000:]

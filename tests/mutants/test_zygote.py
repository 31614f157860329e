"""The zygote (mutants/zygote.py): a certify process it forks is the process ``python -m conformance_tests
certify`` would be (argv, hash seed, environment, working directory, ``__main__``, signal dispositions, its own
process group, its stdout and stderr, its exit status), it refuses what it cannot run as such (the run then starts
a fresh process), it forks with one thread, and it ends its children when the run is gone.

Linux only, as the kit's CI: threads are counted in /proc."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mutants.children import Children, Zygote
from mutants.run import certify_env
from tests.helpers import ROOT, child_pythonpath

PROBE = "tests.mutants.zygote_probe:Probe"
#: a mutant certified on the whole suite: a child that runs for tens of seconds
LONG = ["--backend", "mutants.catalog:one_byte_past", "-q", "-p", "no:warnings"]


def _certify(*args: str) -> list[str]:
    return [sys.executable, "-m", "conformance_tests", "certify", "--isolation", "off", "--operation", "push_cache",
            *args]


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    return {**certify_env(), "PYTHONPATH": child_pythonpath()}


@pytest.fixture(scope="module")
def zygote(env: dict[str, str]) -> Iterator[Children]:
    children = Children(zygote_env=env)
    assert children.zygote is not None and children.zygote.usable(), children.zygote and children.zygote.why
    yield children
    children.close()


def _probe(children: Children, env: dict[str, str], out: Path, cwd: Path) -> tuple[int, str, str, dict]:
    probe_env = {**env, "ZYGOTE_PROBE": str(out), "ZYGOTE_PROBE_MARK": "marked"}
    here = os.getcwd()
    os.chdir(cwd)  # the run's working directory is the children's
    try:
        code, stdout, stderr = children.run(_certify("--backend", PROBE, "--report-dir", str(cwd / "r")), probe_env)
    finally:
        os.chdir(here)
    return code, stdout, stderr, json.loads(out.read_text(encoding="utf-8"))


def test_a_forked_certify_sees_what_a_fresh_one_sees(zygote, env, tmp_path):
    forked = _probe(zygote, env, tmp_path / "forked.json", ROOT)
    fresh = _probe(Children(), env, tmp_path / "fresh.json", ROOT)
    assert forked[3] == fresh[3]
    assert forked[3]["mark"] == "marked" and forked[3]["own_group"] and forked[3]["argv"][1:3] == ["certify", "--isolation"]
    assert forked[3]["hash"] == fresh[3]["hash"] and forked[3]["wakeup_fd"] == -1
    assert forked[0] == fresh[0] != 0, (forked[:3], fresh[:3])
    assert "probe says on stdout" in forked[1] and "probe says on stderr" in forked[2] + forked[1], forked[1:3]
    # the lines around the probe's own are certify's: the same either way
    assert forked[2] == fresh[2], (forked[2], fresh[2])


def test_the_zygote_refuses_another_hash_seed_or_program(zygote, env, tmp_path):
    """Which the run then starts as fresh processes: the hash seed is fixed as an interpreter starts."""
    z = zygote.zygote
    assert z is not None
    assert z.start(_certify("--help"), {**env, "PYTHONHASHSEED": "1"}) is None
    assert z.start([sys.executable, "-c", "pass"], env) is None
    code, stdout, _ = zygote.run([sys.executable, "-c", "import sys; print(sys.flags.hash_randomization)"],
                                 {**env, "PYTHONHASHSEED": "1"})
    assert (code, stdout.strip()) == (0, "1")


def _os_threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="threads are counted in /proc")
def test_the_zygote_forks_with_one_thread(env, tmp_path):
    """No Python thread; numpy's OpenBLAS pool (started as numpy loads) is shut down by its own fork handler."""
    z = Zygote(env)
    try:
        assert z.usable(), z.why
        pid = z.start(_certify("--backend", PROBE, "--report-dir", str(tmp_path / "r")),
                      {**env, "ZYGOTE_PROBE": str(tmp_path / "p.json")})
        assert pid is not None and z.wait(pid, 120) is not None
        assert _os_threads(z.proc.pid) == 1
        assert json.loads((tmp_path / "p.json").read_text())["python_threads"] == 1
    finally:
        z.close(2.0)


def test_a_zygote_whose_run_is_gone_ends_its_children(env, tmp_path):
    """Its stdin closed (the run was killed): SIGTERM, then SIGKILL, to each child's group; each reaped."""
    z = Zygote(env)
    try:
        assert z.usable(), z.why
        pid = z.start(_certify(*LONG, "--report-dir", str(tmp_path / "r")), env)
        assert pid is not None
        time.sleep(1.0)
        assert z.wait(pid, 0) is None, "the whole suite ended within a second"
        assert z.proc.stdin is not None
        z.proc.stdin.close()
        z.proc.wait(15)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        z.close(2.0)

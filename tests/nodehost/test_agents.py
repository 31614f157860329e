"""Node agents: nodes of one cluster on two agents (127.0.0.2 and 127.0.0.3), bytes over NIXL between them (the
full certification across agents is tests/adapters/test_llm_datadist_shim.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import ROOT
from tests.helpers.nodes import specs
from tests.helpers.processes import ADDRESSES, AgentRun, agents_env

pytestmark = pytest.mark.nixl


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[tuple[list[AgentRun], bytes]]:
    key = os.urandom(16).hex()
    runs = [AgentRun(ip, key, tmp_path / f"agent-{ip}.log") for ip in ADDRESSES]
    try:
        yield runs, key.encode()
    finally:
        for run in runs:
            run.kill()


def _backend(runs: list[AgentRun], key: bytes) -> Any:
    from nodehost.backend import NodeHostBackend

    return NodeHostBackend("reference_impl.multiprocess.datadist", name="reference-agents-test",
                           agents=[r.address for r in runs], key=key, pool=False)


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _desc(api: Any) -> Any:
    return api.CacheDesc(4, [2, 16], api.DataType.DT_UINT8, api.Placement.DEVICE)


def test_push_between_nodes_on_two_agents(agents: Any) -> None:
    runs, key = agents
    cluster = _backend(runs, key).open_cluster(specs(1, 2))
    try:
        local, remote = cluster.node(1), cluster.node(2)
        # each node runs under its own agent and listens on that agent's address
        assert [_parent_of(n.pid) for n in (local, remote)] == [r.proc.pid for r in runs]
        assert (local.address[0], remote.address[0]) == ADDRESSES
        api = local.api
        src, dst = local.cache_manager.allocate_cache(_desc(api)), remote.cache_manager.allocate_cache(_desc(api))
        data = [np.random.default_rng(t).integers(0, 256, 32, dtype=np.uint8) for t in range(4)]
        for t, d in enumerate(data):
            local.write_tensor(src, t, d)
        for t in range(4):
            remote.write_tensor(dst, t, np.full(32, 0xA5, dtype=np.uint8))
        cluster.link(1, 2)
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 1), src, 0)
        for t, d in enumerate(data):
            got = remote.read_tensor(dst, t)
            assert (got[:16] == 0xA5).all() and np.array_equal(got[16:], d[:16]), t
    finally:
        cluster.close()


def test_a_wrong_key_is_refused(agents: Any) -> None:
    runs, _key = agents
    with pytest.raises(Exception, match="(?i)auth|digest|challenge"):
        _backend(runs, b"not-the-shared-key-at-all").open_cluster(specs(1, 2))


def test_killing_an_agent_gives_errors_not_a_hang(agents: Any) -> None:
    runs, key = agents
    backend = _backend(runs, key)
    cluster = backend.open_cluster(specs(1, 2, timeout_ms=300))
    try:
        local, remote = cluster.node(1), cluster.node(2)
        api = local.api
        src, dst = local.cache_manager.allocate_cache(_desc(api)), remote.cache_manager.allocate_cache(_desc(api))
        cluster.link(1, 2)
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
        runs[1].kill()
        t0 = time.monotonic()
        with pytest.raises(api.LLMException):  # the node behind the dead agent went with it
            remote.read_tensor(dst, 0)
        with pytest.raises(api.LLMException):  # a push into it fails within the timeout
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:  # until the peer's death is seen (its node exits within ~0.5 s)
                local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
                time.sleep(0.05)
        assert time.monotonic() - t0 < 5
    finally:
        cluster.close()
    t0 = time.monotonic()
    with pytest.raises(OSError):  # a new cluster cannot reach the dead agent: refused at once
        backend.open_cluster(specs(1, 2))
    assert time.monotonic() - t0 < 5


def _certify(agents: list[AgentRun], key: bytes, out: Path, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, UCX_NET_DEVICES="lo", NIXL_LOG_LEVEL="ERROR", **agents_env(agents, key.decode()))
    env.pop("PUSH_CACHE_BACKEND", None)
    return subprocess.Popen([sys.executable, "-m", "conformance_tests", "certify", "--backend", "reference-nodehost",
                             "--report-dir", str(out), "-p", "no:warnings", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_killing_an_agent_mid_run_gives_error_rows(agents: Any, tmp_path: Path) -> None:
    runs, key = agents
    proc = _certify(runs, key, tmp_path, "--clauses", "push_cache.data.*,push_cache.safety.*",
                    "--hypothesis-profile", "quick")
    assert proc.stdout is not None
    seen = ""
    while "test_data.py" not in seen:  # the run is under way
        line = proc.stdout.readline()
        assert line, f"certify ended before any test ran: {seen[-2000:]}"
        seen += line
    runs[1].kill()
    t0 = time.monotonic()
    out, _ = proc.communicate(timeout=600)
    assert time.monotonic() - t0 < 300, "the run took too long after the agent died"
    assert proc.returncode == 1, (seen + out)[-3000:]
    report = __import__("json").loads((tmp_path / "report.json").read_text())
    errors = [t for t in report["tests"] if t["outcome"] == "error"]
    assert errors, "no error rows after the agent died"
    assert report["verdict"]["certified"] is False

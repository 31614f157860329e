"""Other hosts through SSH: nodes of one cluster on two hosts (an sshd on 127.0.0.2 and one on 127.0.0.3, started
by the tests with generated keys), reached through execnet gateways; bytes over NIXL between them (the full
certification across two SSH hosts is tests/adapters/test_llm_datadist_shim.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import ROOT
from tests.helpers.certify import ONE_OPERATION
from tests.helpers.nodes import specs
from tests.helpers.ssh import ADDRESSES, SshServers, need_sshd, ssh_noise, ssh_servers

pytestmark = [pytest.mark.nixl, pytest.mark.ssh]


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[SshServers]:
    need_sshd()
    with ssh_servers(tmp_path / "ssh") as made:
        yield made


def _backend(servers: SshServers) -> Any:
    from nodehost.backend import NodeHostBackend

    return NodeHostBackend("reference_impl.multiprocess.datadist", name="reference-hosts-test", hosts=servers.hosts,
                           pool=False)


def _desc(api: Any) -> Any:
    return api.CacheDesc(4, [2, 16], api.DataType.DT_UINT8, api.Placement.DEVICE)


def _push_between(cluster: Any) -> None:
    local, remote = cluster.node(1), cluster.node(2)
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


def test_push_between_nodes_on_two_ssh_hosts(servers: SshServers) -> None:
    cluster = _backend(servers).open_cluster(specs(1, 2))
    try:
        # each node listens on its host's address, as the SSH connection names it
        assert (cluster.node(1).address[0], cluster.node(2).address[0]) == ADDRESSES
        _push_between(cluster)
    finally:
        cluster.close()


def test_garbage_resets_and_idle_connections_to_the_hosts_ssh_change_nothing(servers: SshServers) -> None:
    with ssh_noise(servers.addresses) as noise:
        time.sleep(0.5)
        cluster = _backend(servers).open_cluster(specs(1, 2))
        try:
            _push_between(cluster)
        finally:
            cluster.close()
    assert noise.made > 10, noise.made


def test_a_host_the_client_does_not_trust_is_refused(servers: SshServers) -> None:
    servers.known_hosts.write_text("")  # the hosts' keys are unknown: SSH refuses them (StrictHostKeyChecking)
    with pytest.raises(OSError, match="cannot reach ssh=host0.* over SSH .HostNotFound"):
        _backend(servers).open_cluster(specs(1, 2))


def test_losing_a_hosts_gateway_gives_errors_not_a_hang(servers: SshServers) -> None:
    backend = _backend(servers)
    cluster = backend.open_cluster(specs(1, 2, timeout_ms=300))
    try:
        local, remote = cluster.node(1), cluster.node(2)
        api = local.api
        src, dst = local.cache_manager.allocate_cache(_desc(api)), remote.cache_manager.allocate_cache(_desc(api))
        cluster.link(1, 2)
        local.stats()  # the link's data path is up (stats waits for it): the push below is not its set-up race
        local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
        killed = servers.end_sessions(1)  # the second host's gateway dies: its node goes with it (watchdog)
        assert killed, "no gateway process on the second host"
        t0 = time.monotonic()
        with pytest.raises(api.LLMException):
            remote.read_tensor(dst, 0)
        with pytest.raises(api.LLMException):  # a push into it fails within the timeout
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:  # until the peer's death is seen (its node exits within ~0.5 s)
                local.cache_manager.push_cache(api.CacheKeyByIdAndIndex(2, dst.cache_id, 0), src)
                time.sleep(0.05)
        assert time.monotonic() - t0 < 5
    finally:
        cluster.close()
    again = backend.open_cluster(specs(1, 2))  # a new gateway to the host
    try:
        _push_between(again)
    finally:
        again.close()


def test_stopping_a_host_mid_run_gives_error_rows(servers: SshServers, tmp_path: Path) -> None:
    env = dict(os.environ, UCX_NET_DEVICES="lo", NIXL_LOG_LEVEL="ERROR", NODEHOST_HOSTS=",".join(servers.hosts),
               PYTHONUNBUFFERED="1")  # the progress line comes as the first test ends, not when the run does
    env.pop("PUSH_CACHE_BACKEND", None)
    proc = subprocess.Popen([sys.executable, "-m", "conformance_tests", "certify",
                             *ONE_OPERATION, "--backend", "reference-nodehost",
                             "--report-dir", str(tmp_path), "-p", "no:warnings", "--clauses",
                             "push_cache.data.*,push_cache.safety.*",
                             # what is judged is the run after the host goes away, not how many examples each
                             # test draws before (the certify profile took a minute of CI's time here)
                             "--hypothesis-profile", "quick"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen = ""
    while "test_data.py" not in seen:  # the run is under way
        line = proc.stdout.readline()
        assert line, f"certify ended before any test ran: {seen[-2000:]}"
        seen += line
    assert servers.take_down(1), "nothing ran under the second host's SSH server"
    t0 = time.monotonic()
    out, _ = proc.communicate(timeout=600)
    assert time.monotonic() - t0 < 300, "the run took too long after the host went away"
    assert proc.returncode == 1, (seen + out)[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert [t for t in report["tests"] if t["outcome"] == "error"], "no error rows after the host went away"
    assert report["verdict"]["certified"] is False


def _certify_on_hosts(servers: SshServers, report: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, UCX_NET_DEVICES="lo", NIXL_LOG_LEVEL="ERROR", NODEHOST_HOSTS=",".join(servers.hosts))
    env.pop("PUSH_CACHE_BACKEND", None)
    return subprocess.run([sys.executable, "-m", "conformance_tests", "certify", *ONE_OPERATION, "--backend",
                           "reference-nodehost", "--report-dir", str(report), "-p", "no:warnings", "--clauses",
                           "push_cache.data.src_batch_slice", *extra], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_what_a_gateway_starts_is_seen_until_it_is_closed(servers: SshServers) -> None:
    """The check below can fail: an open gateway is an ssh client here and a python in a session there."""
    import execnet

    group = execnet.Group()
    gateway = group.makegateway(servers.hosts[0])
    try:
        assert gateway.remote_exec("channel.send(1)").receive() == 1
        seen = servers.leftovers()
        assert any("ssh client" in s for s in seen) and any("SSH session" in s for s in seen), seen
    finally:
        group.terminate(timeout=10)
    assert servers.leftovers() == []


@pytest.mark.parametrize("isolation", ["off", "process"])
@pytest.mark.parametrize("refused", [False, True])
def test_nothing_certify_starts_on_ssh_hosts_outlives_it(servers: SshServers, tmp_path: Path, refused: bool,
                                                         isolation: str) -> None:
    """A plain run, and one refused because the second host's key is unknown (the first host's node is up by then),
    with the node host in the kit's process or in a backend process of its own: once certify has exited, no ssh
    client it started and no process of its SSH sessions runs."""
    if refused:
        servers.known_hosts.write_text(servers.known_hosts.read_text().splitlines()[0] + "\n")
    proc = _certify_on_hosts(servers, tmp_path / "report", "--isolation", isolation)
    left = servers.leftovers()
    out = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == (3 if refused else 5), out
    if refused:
        assert "cannot reach ssh=host1" in out, out
    assert left == [], f"left after certify (exit {proc.returncode}): {left}"


def test_the_other_hosts_processes_end_when_their_ssh_client_dies(servers: SshServers) -> None:
    """The kit's ssh clients SIGKILLed under an open cluster (as when the kit itself is killed): the gateways' python
    on each host sees its stdin close and ends, and its node processes with it, within seconds."""
    cluster = _backend(servers).open_cluster(specs(1, 2))
    try:
        clients = [int(line.split(":")[0]) for line in servers.leftovers() if ": ssh client " in line]
        assert len(clients) == 2, servers.leftovers()
        on_hosts = [line for line in servers.leftovers() if "SSH session" in line]
        assert len(on_hosts) >= 4, on_hosts  # a gateway and a node process on each host
        for pid in clients:
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (left := servers.leftovers()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left == [], f"left on the hosts after their ssh clients died: {left}"
    finally:
        with contextlib.suppress(Exception):
            cluster.close()


#: a program that opens a cluster on the hosts (argv[1], comma-separated) and exits with it still open
OPEN_AT_EXIT = """
import sys
from nodehost.backend import NodeHostBackend
from tests.helpers.nodes import specs
backend = NodeHostBackend("reference_impl.multiprocess.datadist", name="left-open", hosts=sys.argv[1].split(","))
cluster = backend.open_cluster(specs(1, 2))
print("open", flush=True)
"""


def test_a_cluster_left_open_at_exit_leaves_nothing_on_the_hosts(servers: SshServers) -> None:
    """The process exits with a cluster open on the hosts (and a pool of their nodes): at exit the node host ends
    those nodes and its gateways and waits for their ssh processes, so none of them is left once it has exited."""
    env = dict(os.environ, UCX_NET_DEVICES="lo", NIXL_LOG_LEVEL="ERROR")
    proc = subprocess.run([sys.executable, "-c", OPEN_AT_EXIT, ",".join(servers.hosts)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    left = servers.leftovers()
    assert proc.returncode == 0 and "open" in proc.stdout, (proc.stdout + proc.stderr)[-3000:]
    assert left == [], f"left after a process exited with a cluster open: {left}"

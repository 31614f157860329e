"""Other hosts for the tests: an OpenSSH server per loopback address, started by the test on an unprivileged port
with keys generated for it, and the client configuration (ssh_config, known hosts, a user key) that reaches it,
as a user would configure SSH. ``hosts`` is what NODEHOST_HOSTS takes."""

from __future__ import annotations

import os
import pwd
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

#: two loopback addresses, one SSH server each: nodes of one cluster on two "hosts"
ADDRESSES = ("127.0.0.2", "127.0.0.3")
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def _free_port(ip: str) -> int:
    with socket.socket() as s:
        s.bind((ip, 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class SshServers:
    """One ``sshd`` per address in ``ips`` (ended by pid), and the client side of each in ``folder``."""

    def __init__(self, folder: Path, ips: Sequence[str] = ADDRESSES, python: str = sys.executable,
                 env: dict[str, str] | None = None) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.user_key = folder / "id_ed25519"
        _keygen(self.user_key)
        (folder / "authorized_keys").write_text((folder / "id_ed25519.pub").read_text())
        self.ssh_config = folder / "ssh_config"
        self.known_hosts = folder / "known_hosts"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.ports: dict[str, int] = {}
        user = pwd.getpwuid(os.geteuid()).pw_name
        config, known = [], []
        for i, ip in enumerate(ips):
            host_key = folder / f"host{i}_ed25519"
            _keygen(host_key)
            port = _free_port(ip)
            sshd_config = folder / f"sshd{i}_config"
            sshd_config.write_text("\n".join([
                f"ListenAddress {ip}:{port}", f"HostKey {host_key}", f"AuthorizedKeysFile {folder}/authorized_keys",
                f"PidFile {folder}/sshd{i}.pid", "UsePAM no", "StrictModes no", "PasswordAuthentication no",
                "KbdInteractiveAuthentication no", "PubkeyAuthentication yes", "PermitRootLogin prohibit-password",
                "LogLevel ERROR", "MaxStartups 100:30:200", "",
            ]))
            log = open(folder / f"sshd{i}.log", "wb")  # noqa: SIM115 - the server's log, kept while it runs
            self.procs.append(subprocess.Popen([SSHD, "-D", "-e", "-f", str(sshd_config)], stdout=log,
                                               stderr=subprocess.STDOUT))
            self.ports[ip] = port
            pub = (folder / f"host{i}_ed25519.pub").read_text().split()
            known.append(f"[{ip}]:{port} {pub[0]} {pub[1]}")
            config += [f"Host host{i}", f"  HostName {ip}", f"  Port {port}", f"  User {user}",
                       f"  IdentityFile {self.user_key}", "  IdentitiesOnly yes",
                       f"  UserKnownHostsFile {self.known_hosts}", "  StrictHostKeyChecking yes", "  BatchMode yes",
                       "  ConnectTimeout 10", ""]
        self.known_hosts.write_text("\n".join(known) + "\n")
        self.ssh_config.write_text("\n".join(config))
        extra = "".join(f"//env:{k}={v}" for k, v in (env or {}).items())
        self.hosts = [f"ssh=host{i}//ssh_config={self.ssh_config}//python={python}{extra}" for i in range(len(ips))]
        self.addresses = [(ip, self.ports[ip]) for ip in ips]
        self._wait_listening()

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + 20
        for proc, (ip, port) in zip(self.procs, self.addresses, strict=True):
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"sshd on {ip}:{port} exited ({proc.returncode}): {self.log(ip)}")
                try:
                    socket.create_connection((ip, port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"sshd on {ip}:{port} does not listen: {self.log(ip)}") from None
                    time.sleep(0.05)

    def log(self, ip: str) -> str:
        i = list(self.ports).index(ip)
        return (self.folder / f"sshd{i}.log").read_text(errors="replace")[-2000:]

    def ssh(self, index: int, *command: str) -> subprocess.CompletedProcess[str]:
        """Run ``command`` on host ``index`` as the kit's host reaches it."""
        return subprocess.run(["ssh", "-F", str(self.ssh_config), f"host{index}", *command], capture_output=True,
                              text=True, timeout=30)

    def sessions(self, index: int) -> list[int]:
        """The processes under the SSH server of host ``index`` (its sessions: shells, gateways, node processes)."""
        return _descendants([self.procs[index].pid])

    def leftovers(self) -> list[str]:
        """What a client of these servers started that still runs, one line each: ``ssh`` clients reading this
        folder's ssh_config, and every process of a session on the hosts (sshd gives it ``SSH_CONNECTION``, naming
        one of these servers' address and port, and its children inherit it), even once that session's sshd is
        gone and it was re-parented. Zombies are gone already."""
        servers = {f"{ip} {port}" for ip, port in self.addresses}
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            command = " ".join(a.decode(errors="replace") for a in argv if a)[:160]
            if argv and Path(argv[0].decode(errors="replace")).name == "ssh" and str(self.ssh_config).encode() in argv:
                found.append(f"{entry.name}: ssh client {command}")
                continue
            for var in environ:
                if var.startswith(b"SSH_CONNECTION=") and " ".join(var.decode().split()[2:]) in servers:
                    found.append(f"{entry.name}: in an SSH session of these hosts: {command}")
                    break
        return found

    def take_down(self, index: int) -> list[int]:
        """Host ``index`` goes away: its SSH server stops (no new connection), then every process its sessions ran is
        SIGKILLed (by pid): its gateways die, their nodes follow. The pids killed."""
        pids = self.sessions(index)
        self.stop(index)
        pids += [p for p in _descendants(pids) if p not in pids]  # a session may have started one meanwhile
        return _sigkill(pids)

    def end_sessions(self, index: int) -> list[int]:
        """SIGKILL every process under host ``index``'s SSH server (by pid): its gateways die, their nodes follow."""
        return _sigkill(self.sessions(index))

    def stop(self, index: int | None = None) -> None:
        """Stop the SSH servers (or the one of host ``index``); their sessions go on until they end."""
        for proc in self.procs if index is None else [self.procs[index]]:  # the servers this helper started, by pid
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)


def _descendants(roots: list[int]) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found, todo = [], list(roots)
    while todo:
        parent = todo.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                found.append(pid)
                todo.append(pid)
    return found


class Noise:
    """Strangers at the SSH servers' ports: idle connections held open, garbage, and connections reset."""

    def __init__(self, addresses: Sequence[tuple[str, int]], idle: int = 4) -> None:
        self.addresses = list(addresses)
        self.made = 0
        self._stop = threading.Event()
        self._idle: list[socket.socket] = []
        self._idle_count = idle
        self._thread = threading.Thread(target=self._run, name="ssh-noise", daemon=True)

    def _run(self) -> None:
        rng = random.Random(0)
        for address in self.addresses:  # idle strangers that never say a word
            for _ in range(self._idle_count):
                self._idle.append(socket.create_connection(address, timeout=5))
        while not self._stop.is_set():
            address = rng.choice(self.addresses)
            try:
                with socket.create_connection(address, timeout=5) as s:
                    kind = rng.randrange(3)
                    if kind == 0:  # garbage where the SSH banner goes
                        s.sendall(rng.randbytes(rng.randrange(1, 4096)))
                    elif kind == 1:  # a banner, then garbage where the key exchange goes
                        s.sendall(b"SSH-2.0-noise\r\n" + rng.randbytes(512))
                    # kind 2, and every one of them: reset, not closed
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.made += 1
            except OSError:
                pass
            self._stop.wait(0.05)

    def __enter__(self) -> Noise:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for s in self._idle:
            s.close()


def ssh_noise(addresses: Sequence[tuple[str, int]]) -> Noise:
    return Noise(addresses)


def sshd_missing() -> str | None:
    """Why the tests cannot start an SSH server here (one line), or None."""
    if not os.path.exists(SSHD) or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "OpenSSH (sshd, ssh, ssh-keygen) is not installed (apt-get install openssh-server)"
    if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
        try:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        except OSError as exc:
            return f"sshd cannot run here: /run/sshd cannot be made ({exc.strerror})"
    return None


#: set by CI (.ci/run): the SSH tests must run there, so a missing sshd fails them instead of skipping them
CI_ENV = "PUSH_CACHE_CI"


def need_sshd() -> None:
    """Skip the calling test, with the reason in one line, where no SSH server can run (fail it in CI)."""
    import pytest

    why = sshd_missing()
    if why is None:
        return
    if os.environ.get(CI_ENV):
        pytest.fail(f"${CI_ENV} is set, and {why}", pytrace=False)
    pytest.skip(why)


@contextmanager
def ssh_servers(folder: Path, **kwargs: object) -> Iterator[SshServers]:
    servers = SshServers(folder, **kwargs)  # type: ignore[arg-type]
    try:
        yield servers
    finally:
        servers.stop()


def _sigkill(pids: list[int]) -> list[int]:
    """SIGKILL each of ``pids`` that still lives; ``pids``."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids

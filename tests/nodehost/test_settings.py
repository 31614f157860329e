"""The node host's settings: environment variables over the config file over defaults, and one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodehost import settings
from nodehost.settings import ConfigError, load
from tests.helpers import ROOT
from tests.helpers.certify import ONE_OPERATION


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "nodehost.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_variables_or_file() -> None:
    got = load({})
    assert (got.hosts, got.pool, got.device_ids, got.device_memory) == ((), settings.DEFAULT_POOL_SIZE, (), "auto")
    assert set(got.source.values()) == {"default"}


HOST_B = "ssh=kit@hostb//python=/opt/kit/bin/python"
HOST_C = "ssh=kit@hostc//ssh_config=ssh_config//python=/opt/kit/bin/python//env:UCX_NET_DEVICES=eth0"


def test_the_file_gives_hosts_as_execnet_ssh_specs(tmp_path: Path) -> None:
    cfg = _file(tmp_path, f"hosts: ['{HOST_B}', '{HOST_C}']\npool: 2\ndevice_memory: host\n")
    got = load({settings.CONFIG_ENV: str(cfg)})
    assert got.hosts == (HOST_B, HOST_C)
    assert (got.pool, got.device_memory) == (2, "host")
    assert got.source["hosts"] == str(cfg) and got.source["device_ids"] == "default"


@pytest.mark.parametrize("spec", ["127.0.0.2:7000", "popen//python=python3", "socket=127.0.0.2:8888", "ssh="])
def test_a_host_that_is_not_an_ssh_spec_is_one_usage_line(spec: str) -> None:
    """Other hosts are reached over SSH only (execnet's popen or socket gateways are not a way to another host)."""
    with pytest.raises(ConfigError) as info:
        load({"NODEHOST_HOSTS": spec})
    assert "$NODEHOST_HOSTS" in str(info.value) and "\n" not in str(info.value)


def test_a_variable_wins_over_the_file(tmp_path: Path) -> None:
    cfg = _file(tmp_path, f"hosts: ['{HOST_B}']\npool: 2\n")
    got = load({settings.CONFIG_ENV: str(cfg), "NODEHOST_POOL": "0", "NODEHOST_HOSTS": f"{HOST_C},{HOST_B}"})
    assert (got.pool, got.hosts) == (0, (HOST_C, HOST_B))
    assert got.source["pool"] == "$NODEHOST_POOL"


@pytest.mark.parametrize(("text", "says"), [
    ("hosts: [127.0.0.2:7000]\n", "hosts.0: '127.0.0.2:7000' does not match"),
    ("hosts: ['ssh=h//bogus']\n", "hosts: 'ssh=h//bogus': not an execnet spec"),
    ("pool: -1\n", "pool: -1 is less than the minimum of 0"),
    ("device_memory: gpu\n", "device_memory: 'gpu' is not one of"),
    ("agents: [h:1]\n", "Additional properties are not allowed ('agents' was unexpected)"),
    ("device_ids: [0, 1]\ndevice_ips: [a]\n", "1 device ips for 2 device ids"),
    ("hosts: [h:1\n", "not YAML (line 2)"),
])
def test_a_bad_file_is_one_line_naming_the_file_and_key(tmp_path: Path, text: str, says: str) -> None:
    cfg = _file(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load({settings.CONFIG_ENV: str(cfg)})
    msg = str(err.value)
    assert "\n" not in msg and str(cfg) in msg and says in msg, msg


@pytest.mark.parametrize(("env", "says"), [
    ({"NODEHOST_POOL": "many"}, "$NODEHOST_POOL: 'many' is not an integer"),
    ({"NODEHOST_DEVICE_IDS": "0,-1"}, "$NODEHOST_DEVICE_IDS: device_ids.1: -1 is less than the minimum of 0"),
    ({"NODEHOST_HOSTS": "nohost"}, "$NODEHOST_HOSTS: hosts.0: 'nohost' does not match"),
    ({settings.CONFIG_ENV: "/nonexistent/nodehost.yaml"}, "$NODEHOST_CONFIG=/nonexistent/nodehost.yaml: cannot read"),
])
def test_a_bad_variable_is_one_line_naming_it(env: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigError, match="^" + says.replace("$", r"\$").replace("(", r"\(").replace(".", r"\.")):
        load(env)


def test_certify_with_a_bad_config_is_a_usage_error_before_anything_runs(tmp_path: Path) -> None:
    cfg = _file(tmp_path, "hosts: [127.0.0.2:7000]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NODEHOST_") and k != "PUSH_CACHE_BACKEND"}
    env.update({settings.CONFIG_ENV: str(cfg), "PYTHONPATH": str(ROOT)})
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify",
                           *ONE_OPERATION, "--backend", "reference-nodehost",
                           "--no-reports", "-p", "no:warnings"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(cfg) in lines[0] and "hosts.0" in lines[0], proc.stderr


def test_the_ascend_host_settings_table_matches_the_code() -> None:
    """docs/ascend-host.md lists every setting with its variable, config key and default."""
    text = (ROOT / "docs" / "ascend-host.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.split("## Settings", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`NODEHOST_"):
            rows[cells[0].strip("`")] = (cells[1].strip("`"), cells[2])
    for key, var in settings.ENV.items():
        assert rows.get(var, ("",))[0] == key, f"{var} / {key}: {rows.get(var)}"
    assert set(settings.ENV) == set(settings.SCHEMA["properties"]), "every config key has a variable"
    defaults = load({})
    assert rows["NODEHOST_POOL"][1] == f"`{defaults.pool}`"
    assert rows["NODEHOST_DEVICE_MEMORY"][1] == f"`{defaults.device_memory}`"

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


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "nodehost.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_variables_or_file() -> None:
    got = load({})
    assert (got.agents, got.pool, got.device_ids, got.device_memory) == ((), settings.DEFAULT_POOL_SIZE, (), "auto")
    assert set(got.source.values()) == {"default"}


def test_the_file_gives_agents_and_a_key_file_relative_to_itself(tmp_path: Path) -> None:
    cfg = _file(tmp_path, "agents: [127.0.0.2:7000, 127.0.0.3:7001]\nkey_file: agents.key\npool: 2\n"
                          "device_ids: [0, 1]\ndevice_ips: [10.0.0.1, 10.0.0.2]\n")
    got = load({settings.CONFIG_ENV: str(cfg)})
    assert got.agents == (("127.0.0.2", 7000), ("127.0.0.3", 7001))
    assert got.key_file == str(tmp_path / "agents.key")
    assert (got.pool, got.device_ids, got.device_ips) == (2, (0, 1), ("10.0.0.1", "10.0.0.2"))
    assert got.source["agents"] == str(cfg) and got.source["device_memory"] == "default"


def test_a_variable_wins_over_the_file(tmp_path: Path) -> None:
    cfg = _file(tmp_path, "agents: [127.0.0.2:7000]\npool: 2\n")
    got = load({settings.CONFIG_ENV: str(cfg), "NODEHOST_POOL": "0", "NODEHOST_AGENTS": "h1:1,h2:2"})
    assert (got.pool, got.agents) == (0, (("h1", 1), ("h2", 2)))
    assert got.source["pool"] == "$NODEHOST_POOL"


@pytest.mark.parametrize(("text", "says"), [
    ("agents: [127.0.0.2]\n", "agents.0: '127.0.0.2' does not match"),
    ("agents: [h:70000]\n", "the port must be 1-65535"),
    ("pool: -1\n", "pool: -1 is less than the minimum of 0"),
    ("device_memory: gpu\n", "device_memory: 'gpu' is not one of"),
    ("agent: [h:1]\n", "Additional properties are not allowed ('agent' was unexpected)"),
    ("device_ids: [0, 1]\ndevice_ips: [a]\n", "1 device ips for 2 device ids"),
    ("agents: [h:1\n", "not YAML (line 2)"),
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
    ({"NODEHOST_AGENTS": "nohost"}, "$NODEHOST_AGENTS: agents.0: 'nohost' does not match"),
    ({settings.CONFIG_ENV: "/nonexistent/nodehost.yaml"}, "$NODEHOST_CONFIG=/nonexistent/nodehost.yaml: cannot read"),
])
def test_a_bad_variable_is_one_line_naming_it(env: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigError, match="^" + says.replace("$", r"\$").replace("(", r"\(").replace(".", r"\.")):
        load(env)


def test_certify_with_a_bad_config_is_a_usage_error_before_anything_runs(tmp_path: Path) -> None:
    cfg = _file(tmp_path, "agents: [127.0.0.2:not-a-port]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NODEHOST_") and k != "PUSH_CACHE_BACKEND"}
    env.update({settings.CONFIG_ENV: str(cfg), "PYTHONPATH": str(ROOT)})
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "--backend", "reference-nodehost",
                           "--no-reports", "-p", "no:warnings"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(cfg) in lines[0] and "agents.0" in lines[0], proc.stderr


def test_the_agents_key_comes_from_the_files_key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nodehost.backend import NodeHostBackend

    (tmp_path / "agents.key").write_text("k" * 32)
    cfg = _file(tmp_path, "agents: [127.0.0.2:7000]\nkey_file: agents.key\n")
    for var in ("NODEHOST_KEY", "NODEHOST_KEY_FILE", "NODEHOST_AGENTS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(settings.CONFIG_ENV, str(cfg))
    backend = NodeHostBackend("reference_impl.multiprocess.datadist")
    assert backend.agents == [("127.0.0.2", 7000)]
    assert backend.agent_key() == b"k" * 32
    (tmp_path / "agents.key").write_text("short")
    with pytest.raises(ConfigError, match="no shared key"):
        NodeHostBackend("reference_impl.multiprocess.datadist").capabilities()


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

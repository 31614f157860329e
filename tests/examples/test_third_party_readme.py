"""The worked example's README is code: the adapter and its expectations file are copied into a folder outside
the clone, the kit is installed into a venv there as the README says, and each ``push-cache-kit certify`` command
of the README is run exactly as written from that folder; the "Expected:" line under it (verdict, exit status,
blocking clauses) must be what the run gives."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.install import install_kit

EXAMPLE = ROOT / "examples" / "third_party_backend"
README = EXAMPLE / "README.md"
BLOCK = re.compile(r"```sh\n(push-cache-kit certify[^`]*?)```\s*\n\s*Expected: ([^\n]+)\n", re.S)

# no xdist group: each worker that runs one of the two commands installs the kit for itself (seconds), and the two
# full certifications through the adapter's own process (about 100 s each) run side by side


def _commands() -> list[tuple[str, str]]:
    found = BLOCK.findall(README.read_text(encoding="utf-8"))
    return [(" ".join(cmd.replace("\\\n", " ").split()), expected) for cmd, expected in found]


def test_the_readme_states_its_commands():
    assert len(_commands()) == 2


@pytest.fixture(scope="module")
def vendor_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A folder outside the clone holding the adapter and its expectations, and the environment of a shell in
    which the README's venv is active."""
    where = tmp_path_factory.mktemp("vendor")
    assert not where.resolve().is_relative_to(ROOT)
    bin_dir = install_kit(where / "tools")
    project = where / "acme-kv"
    project.mkdir()
    for name in ("adapter.py", "expectations.yaml"):
        shutil.copy2(EXAMPLE / name, project / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PUSH_CACHE_BACKEND")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return project, env


@pytest.mark.heavy  # two full certifications through the adapter's own process: tox -e heavy (CI) runs them
@pytest.mark.starts_first  # one to each worker at once: the longest tests of tox -e heavy
@pytest.mark.parametrize(("command", "expected"), _commands())
def test_the_readme_command_gives_the_stated_verdict(vendor_folder, command, expected):
    project, env = vendor_folder
    verdict = re.search(r"verdict `([^`]+)`", expected).group(1)
    code = int(re.search(r"exit status (\d+)", expected).group(1))
    blocking = re.findall(r"`(push_cache\.[a-z0-9_.]+)`", expected)
    proc = subprocess.run(shlex.split(command), cwd=project, env=env, capture_output=True, text=True, timeout=900)
    report = json.loads((project / "reports" / "acme-kv" / "report.json").read_text(encoding="utf-8"))
    assert (report["verdict"]["label"], proc.returncode) == (verdict, code), proc.stdout[-1500:] + proc.stderr[-800:]
    assert sorted(report["verdict"]["blocking"]) == sorted(blocking)
    assert report["backend"]["spec"] == f"{project / 'adapter.py'}:backend"

"""The worked example's README is code: each `python -m conformance_tests certify` command in it is run, and the
"Expected:" line under it (verdict, exit status, blocking clauses) must be what the run gives."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

import pytest

from tests.helpers import ROOT

README = ROOT / "examples" / "third_party_backend" / "README.md"
BLOCK = re.compile(r"```sh\n(python -m conformance_tests certify[^`]*?)```\s*\n\s*Expected: ([^\n]+)\n", re.S)


def _commands() -> list[tuple[str, str]]:
    found = BLOCK.findall(README.read_text(encoding="utf-8"))
    return [(" ".join(cmd.replace("\\\n", " ").split()), expected) for cmd, expected in found]


def test_the_readme_states_its_commands():
    assert len(_commands()) == 2


@pytest.mark.parametrize(("command", "expected"), _commands())
def test_the_readme_command_gives_the_stated_verdict(tmp_path, command, expected):
    verdict = re.search(r"verdict `([^`]+)`", expected).group(1)
    code = int(re.search(r"exit status (\d+)", expected).group(1))
    blocking = re.findall(r"`(push_cache\.[a-z0-9_.]+)`", expected)
    argv = shlex.split(command)
    proc = subprocess.run([sys.executable, *argv[1:], "--report-dir", str(tmp_path), "-q", "-p", "no:warnings"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert (report["verdict"]["label"], proc.returncode) == (verdict, code), proc.stdout[-1500:]
    assert sorted(report["verdict"]["blocking"]) == sorted(blocking)

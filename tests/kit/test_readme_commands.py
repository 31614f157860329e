"""The README's command line is code: the kit is installed into a fresh venv as the README says, and every
``push-cache-kit`` command of its "Other commands" table runs there as written; where the kit's dependencies are
missing, or an option is wrong, the command says so in one line and exits 2."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance_tests.exitcodes import PARTIAL, USAGE_ERROR
from tests.helpers import ROOT
from tests.helpers.install import install_kit

pytestmark = pytest.mark.xdist_group("test_readme_commands")


def _table_rows() -> list[tuple[str, str]]:
    """(command, what the row says of it) for each ``push-cache-kit`` row of the "Other commands" table."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Other commands"):]
    section = section[:section.index("\n## ", 4)]
    return re.findall(r"^\| `(push-cache-kit [^`]+)` \| (.*) \|$", section, re.M)


def _table_commands() -> list[str]:
    return [command for command, _ in _table_rows()]


def _said_to_print(command: str) -> list[str]:
    """What the README says the command prints: each `...` after "prints" in its row."""
    said = dict(_table_rows())[command]
    return [m for part in said.split("prints ")[1:] for m in re.findall(r"`([^`]+)`", part.split(";")[0])]


def _env(bin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PUSH_CACHE_BACKEND")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A folder outside the clone with a report of the reference in reports/reference/, and the environment of a
    shell whose venv holds the installed kit."""
    where = tmp_path_factory.mktemp("readme")
    env = _env(install_kit(where / "tools"))
    work = where / "work"
    work.mkdir()
    made = subprocess.run(["push-cache-kit", "certify", "--clauses", "push_cache.signature.*", "--report-dir",
                           "reports/reference", "-q"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 5 and (work / "reports" / "reference" / "report.json").is_file(), made.stdout[-1500:]
    return work, env


def test_the_table_lists_the_kits_commands():
    assert len(_table_commands()) >= 3


#: the exit code a row's own words give it where that is not 0: a re-run of the failing tests of the reference's
#: report (which lists none) runs nothing, a partial run without failures
ROW_EXIT = {"push-cache-kit certify --failed-from reports/reference/report.json": PARTIAL}


@pytest.mark.parametrize("command", _table_commands())
def test_each_command_runs_as_written(installed, command):
    work, env = installed
    proc = subprocess.run(shlex.split(command), cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == ROW_EXIT.get(command, 0) and proc.stdout.strip(), \
        (command, proc.returncode, proc.stdout[-1500:] + proc.stderr[-1500:])
    # a row that says what the command prints is held to it (the failure branch of verify cannot show here)
    printed = [word for word in _said_to_print(command) if not word.startswith("NOT ")]
    missing = [word for word in printed if word not in proc.stdout]
    assert not missing, (command, missing, proc.stdout[:800])


def test_new_commands_say_what_they_print():
    """The table's report and site commands each say what they print, so the check above holds them to it."""
    quiet = [c for c in _table_commands() if c.split()[1] in ("report", "site") and not _said_to_print(c)]
    assert not quiet, quiet


def test_a_bad_option_is_one_line_and_exit_2(installed):
    work, env = installed
    proc = subprocess.run(["push-cache-kit", "certify", "--no-such-option"], cwd=work, env=env, capture_output=True,
                          text=True, timeout=120)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert proc.returncode == USAGE_ERROR and len(lines) == 1 and "--no-such-option" in lines[0], lines


@pytest.mark.parametrize("command", [["clauses"], ["certify"], ["report", "summary", "x.json"]])
def test_a_missing_dependency_is_one_line_and_exit_2(tmp_path, command):
    env = _env(install_kit(tmp_path, dependencies=False))  # the kit alone: no jsonschema, numpy, pytest ...
    proc = subprocess.run(["push-cache-kit", *command], cwd=tmp_path, env={**env, "PYTHONNOUSERSITE": "1"},
                          capture_output=True, text=True, timeout=120)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert proc.returncode == USAGE_ERROR and len(lines) == 1 and "lacks" in lines[0], lines


def test_the_dependency_check_knows_every_dependency():
    """Each [project] dependency of pyproject.toml provides one of the modules the CLI checks before it runs."""
    import tomllib
    from importlib.metadata import packages_distributions

    from conformance_tests.__main__ import RUNTIME_MODULES

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    names = {re.split(r"[<>=!~ \[]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}
    provided = {m: {d.lower().replace("_", "-") for d in dists} for m, dists in packages_distributions().items()}
    checked = {d for m in RUNTIME_MODULES for d in provided.get(m, ())}
    assert names <= checked, sorted(names - checked)


def test_certify_help_without_one_dependency_is_one_line_and_exit_2():
    """Every dependency but one (msgpack, hidden here): listing certify's options imports the plugin, so the
    dependency check comes before --help too."""
    code = ("import runpy, sys; sys.modules['msgpack'] = None; sys.argv = ['push-cache-kit', 'certify', '--help']; "
            "runpy.run_module('conformance_tests', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert proc.returncode == USAGE_ERROR and len(lines) == 1 and "lacks 'msgpack'" in lines[0], lines

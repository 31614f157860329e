"""The README's command line is code: the kit is installed into a fresh venv as the README says, and every
``push-cache-kit`` command of its "Other commands" table runs there as written; where the kit's dependencies are
missing, or an option is wrong, the command says so in one line and exits 2."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance_tests.cli.exitcodes import PARTIAL, USAGE_ERROR
from tests.helpers import ROOT
from tests.helpers.install import install_kit
from tests.helpers.ssh import CI_ENV

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
    made = subprocess.run(["push-cache-kit", "certify", "--operation", "push_cache", "--clauses", "push_cache.signature.*",
                           "--report-dir", "reports/reference", "-q"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=300)
    assert made.returncode == 5 and (work / "reports" / "reference" / "report.json").is_file(), made.stdout[-1500:]
    return work, env


def test_the_table_lists_the_kits_commands():
    assert len(_table_commands()) >= 3


#: the exit code a row's own words give it where that is not 0: a re-run of the failing tests of the reference's
#: report (which lists none) runs nothing, and the family's rows select clauses: partial runs without failures
ROW_EXIT = {"push-cache-kit certify --failed-from reports/reference/report.json": PARTIAL,
            "push-cache-kit certify --clauses 'push_cache.signature.*,push_blocks.data.postcondition'": PARTIAL,
            "push-cache-kit certify --clauses '*.signature.*' --spec-version 8.5.0": PARTIAL}


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


def _tox_section() -> str:
    """tox.ini's [tox] section as written."""
    text = (ROOT / "tox.ini").read_text(encoding="utf-8")
    return text[text.index("[tox]"):text.index("\n[", text.index("[tox]"))] + "\n"


def _after_tox(folder: Path, tox: str, core: str) -> subprocess.CompletedProcess[str]:
    """``python -m venv .venv`` in ``folder`` after tox ran an environment there under the [tox] section ``core``."""
    folder.mkdir()
    # a one-module package installed editable, as the kit's environments are: tox points its redirect file at such
    # an environment
    (folder / "tox.ini").write_text(core + "\n[testenv:noop]\npackage = editable\ncommands = python -c pass\n",
                                    encoding="utf-8")
    (folder / "pyproject.toml").write_text('[project]\nname = "noop"\nversion = "0"\n[build-system]\nrequires = '
                                           '["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n',
                                           encoding="utf-8")
    (folder / "noop.py").write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOX", "_TOX", "VIRTUAL_ENV", "PYTHONPATH"))}
    ran = subprocess.run([tox, "-e", "noop", "-q"], cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, f"tox -e noop in {folder}: {ran.stdout[-800:]}{ran.stderr[-800:]}"
    return subprocess.run([sys.executable, "-m", "venv", "--without-pip", ".venv"], cwd=folder, capture_output=True,
                          text=True, timeout=120)


def test_the_documented_venv_step_works_where_tox_has_run(tmp_path):
    """README ("Certify llm_datadist on an Ascend host"): `python3.11 -m venv .venv` in the checkout, which a tox
    run must leave free (tox writes a .venv redirect file there unless tox.ini says venv_redirect = false)."""
    assert "python3.11 -m venv .venv" in (ROOT / "README.md").read_text(encoding="utf-8")
    tox = shutil.which("tox")
    if tox is None:
        why = "no tox on PATH"
        if os.environ.get(CI_ENV):
            pytest.fail(f"${CI_ENV} is set, and {why}", pytrace=False)
        pytest.skip(why)
    made = _after_tox(tmp_path / "kit", tox, _tox_section())
    assert made.returncode == 0 and (tmp_path / "kit" / ".venv" / "bin" / "python").exists(), \
        f"python -m venv .venv after tox -e noop with tox.ini's [tox]: {made.stderr[-800:]}"
    # the check can fail: without the setting this tox leaves a file where the venv goes (older ones wrote none)
    without = _after_tox(tmp_path / "without", tox, _tox_section().replace("venv_redirect = false", ""))
    redirect = tmp_path / "without" / ".venv"
    assert redirect.is_file() and without.returncode != 0, \
        f"without venv_redirect = false, tox wrote no .venv file: this check could not fail ({without.stderr[-400:]})"


def _readme_block(lang: str, after: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"```{lang}\n", text.index(after)) + len(lang) + 4
    return text[start:text.index("```", start)]


def test_a_backend_registered_as_the_readme_says_is_certified_by_name(installed, tmp_path):
    """The README's entry-point table, in a vendor package's pyproject.toml: installed beside the kit, the name it
    gives is a --backend."""
    import tomllib

    work, env = installed
    table = _readme_block("toml", "push_cache_conformance.backends")
    (name, target), = tomllib.loads(table)["project"]["entry-points"]["push_cache_conformance.backends"].items()
    module, attr = target.split(":")
    package = tmp_path / "vendor"
    (package / module.rsplit(".", 1)[0].replace(".", "/")).mkdir(parents=True)
    (package / (module.replace(".", "/") + ".py")).write_text(
        (ROOT / "examples" / "third_party_backend" / "adapter.py").read_text(encoding="utf-8"), encoding="utf-8")
    (package / module.rsplit(".", 1)[0].replace(".", "/") / "__init__.py").write_text("", encoding="utf-8")
    (package / "pyproject.toml").write_text(
        '[project]\nname = "acme-kv-adapter"\nversion = "1.0"\n[build-system]\nrequires = ["setuptools>=61"]\n'
        'build-backend = "setuptools.build_meta"\n' + table, encoding="utf-8")
    python = Path(shutil.which("push-cache-kit", path=env["PATH"]) or "").parent / "python"
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet",
                          str(package)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stdout[-800:] + pip.stderr[-800:]
    out = tmp_path / "report"
    proc = subprocess.run(["push-cache-kit", "certify", "--operation", "push_cache", "--backend", name, "--clauses",
                           "push_cache.signature.*", "--report-dir", str(out), "-q"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 5 and (out / "report.json").is_file(), proc.stdout[-1500:] + proc.stderr[-800:]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["backend"]["spec"] == target and report["backend"]["name"] == "acme-kv", report["backend"]


def test_the_readme_says_which_profiles_replace_the_full_report():
    """A profile with certification's examples or more makes a full run, whose reports replace
    reports/<backend>/; one with fewer is PARTIAL (conformance_tests/running/finish.py completeness)."""
    from hypothesis import settings

    import conformance_tests.running.profiles  # noqa: F401 - registers the profiles
    from conformance_tests.running.profiles import CERTIFY_EXAMPLES

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `tox -e certify -- --hypothesis-profile (\w+)` \| (.*) \|$", text, re.M)
    assert {name for name, _ in rows} == {"explore", "quick"}, rows
    for name, said in rows:
        full = settings.get_profile(name).max_examples >= CERTIFY_EXAMPLES
        assert ("replace `reports/reference/`" in said, "PARTIAL" in said) == (full, not full), (name, said)

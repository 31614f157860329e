"""A non-editable install ships the spec: after ``pip install`` into a fresh venv, the loader finds
push_cache.yaml and spec.schema.json inside the installed package, from any working directory."""

from __future__ import annotations

import hashlib
import json
import pathlib
import shutil
import site
import subprocess
import sys
import textwrap
import tomllib
import venv
from collections.abc import Callable
from typing import Any

import pytest

from conformance_tests.spec import SpecError, load_spec

REPO = pathlib.Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent(
    """
    import io, json, sys
    import conformance_tests.spec as spec_module
    from conformance_tests.spec import default_schema_path, default_spec_path, load_spec
    from conformance_tests.spec_cli import main

    out = io.StringIO()
    code = main(["--spec", sys.argv[1], "--format", "json"], stdout=out, stderr=sys.stderr)
    result = {
        "module": spec_module.__file__,
        "spec_path": str(default_spec_path()),
        "schema_exists": default_schema_path().is_file(),
        "readme_exists": (default_spec_path().parent / "README.md").is_file(),
        "cli_code": code,
        "cli_clauses": len(json.loads(out.getvalue())["clauses"]) if code == 0 else None,
    }
    try:
        spec = load_spec()
        result.update(default_sha256=spec.sha256, default_clauses=len(spec.clauses), default_error=None)
    except Exception as exc:  # compared with the checkout's result by the test
        result.update(default_error=[getattr(exc, "where", None), getattr(exc, "what", str(exc))])
    print(json.dumps(result))
    """
)


def _copy_sources(dest: pathlib.Path) -> None:
    """Copy what the build needs (pyproject + the package folders it names) so the shared tree is not built in."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools_cfg = config["tool"]["setuptools"]
    package_dir = setuptools_cfg.get("package-dir", {})
    folders = {package_dir.get(p, p.replace(".", "/")).split("/")[0] for p in setuptools_cfg["packages"]}
    shutil.copy2(REPO / "pyproject.toml", dest / "pyproject.toml")
    readme = config["project"].get("readme")
    if isinstance(readme, str) and (REPO / readme).is_file():
        shutil.copy2(REPO / readme, dest / readme)
    for folder in sorted(folders):
        shutil.copytree(REPO / folder, dest / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))


def test_installed_package_loads_the_spec_from_another_folder(
    tmp_path: pathlib.Path, write_spec: Callable[..., pathlib.Path], mini_spec: dict[str, Any]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    _copy_sources(src)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    if not python.exists():  # pragma: no cover - Windows layout
        python = env_dir / "Scripts" / "python.exe"

    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet", str(src)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    if install.returncode != 0:
        pytest.fail(f"pip install failed:\n{install.stdout}\n{install.stderr}", pytrace=False)

    # The runtime dependencies (PyYAML, jsonschema) come from this interpreter's site-packages, appended after the
    # fresh venv's own, so the package itself is the installed copy and never the editable checkout.
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (pathlib.Path(purelib) / "zz_test_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mini = write_spec(mini_spec, name="mini.yaml")
    probe = subprocess.run([str(python), "-I", "-c", PROBE, str(mini)], cwd=elsewhere,
                           capture_output=True, text=True, timeout=120, check=False)
    assert probe.returncode == 0, probe.stderr
    result = json.loads(probe.stdout)

    assert pathlib.Path(result["module"]).is_relative_to(env_dir), result["module"]
    installed_spec = pathlib.Path(result["spec_path"])
    assert installed_spec.is_relative_to(env_dir), installed_spec
    assert installed_spec.name == "push_cache.yaml"
    assert result["schema_exists"] and result["readme_exists"]
    assert (result["cli_code"], result["cli_clauses"]) == (0, len(mini_spec["clauses"]))
    # The installed copy loads exactly like the checkout's file: same content, same verdict. (Whether the spec
    # is valid is test_packaged_spec's business; here a broken spec must fail the same way, not differently.)
    repo_file = REPO / "spec" / "push_cache.yaml"
    try:
        repo_spec = load_spec(repo_file)
    except SpecError as exc:
        assert result["default_error"] == [exc.where, exc.what]
    else:
        assert result["default_error"] is None, result["default_error"]
        assert result["default_sha256"] == repo_spec.sha256 == hashlib.sha256(repo_file.read_bytes()).hexdigest()
        assert result["default_clauses"] == len(repo_spec.clauses)

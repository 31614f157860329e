"""A non-editable install ships the spec: after ``pip install`` into a fresh venv, the loader finds
push_cache.yaml and spec.schema.json inside the installed package, from any working directory, and the kit's own
schemas ship in its packages."""

from __future__ import annotations

import hashlib
import json
import pathlib
import subprocess
import textwrap
from collections.abc import Callable
from typing import Any

from conformance_tests.spec import SpecError, load_spec
from tests.helpers.install import install_kit

REPO = pathlib.Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent(
    """
    import io, json, pathlib, sys
    import conformance_tests
    import conformance_tests.spec as spec_module
    from conformance_tests.spec import default_schema_path, default_spec_path, load_spec
    from conformance_tests.cli.clauses import main

    out = io.StringIO()
    code = main(["--spec", sys.argv[1], "--format", "json"], stdout=out, stderr=sys.stderr)
    result = {
        "module": spec_module.__file__,
        "spec_path": str(default_spec_path()),
        "schema_exists": default_schema_path().is_file(),
        "readme_exists": (default_spec_path().parent / "README.md").is_file(),
        "cli_code": code,
        "cli_clauses": len(json.loads(out.getvalue())["clauses"]) if code == 0 else None,
        "kit_json": sorted(p.relative_to(pathlib.Path(conformance_tests.__file__).parent).as_posix()
                           for p in pathlib.Path(conformance_tests.__file__).parent.rglob("*.json")),
    }
    try:
        spec = load_spec()
        result.update(default_sha256=spec.sha256, default_clauses=len(spec.clauses), default_error=None)
    except Exception as exc:  # compared with the checkout's result by the test
        result.update(default_error=[getattr(exc, "where", None), getattr(exc, "what", str(exc))])
    print(json.dumps(result))
    """
)


def test_installed_package_loads_the_spec_from_another_folder(
    tmp_path: pathlib.Path, write_spec: Callable[..., pathlib.Path], mini_spec: dict[str, Any]
) -> None:
    bin_dir = install_kit(tmp_path)
    env_dir = bin_dir.parent
    python = bin_dir / "python"

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
    # every schema the kit reads at run time (the expectations file's, the report's) ships in its package
    kit = REPO / "conformance_tests"
    assert result["kit_json"] == sorted(p.relative_to(kit).as_posix() for p in kit.rglob("*.json")), result["kit_json"]
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


def test_every_package_of_the_kit_is_in_the_install_list():
    """pyproject lists its packages by name: a new subpackage left out installs nowhere, and a kit installed from
    the clone (a vendor's virtual environment) then fails to import it."""
    import tomllib

    from tests.helpers import ROOT

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts)
             for top in ("datawire", "reference_impl", "nodehost", "conformance_tests")
             for init in (ROOT / top).rglob("__init__.py")}
    assert found <= listed, f"pyproject.toml's [tool.setuptools] packages lacks {sorted(found - listed)}"

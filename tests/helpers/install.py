"""The kit installed as a user installs it: ``pip install`` of a copy of the checkout into a fresh venv (no
editable link back to the checkout). The runtime dependencies are not downloaded again: a ``.pth`` file adds this
interpreter's site-packages after the venv's own, so the kit itself always comes from the venv."""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

from tests.helpers import ROOT


def copy_sources(dest: Path) -> None:
    """What the build needs (pyproject, the README and the package folders it names), so the checkout is not built
    in place."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools_cfg = config["tool"]["setuptools"]
    package_dir = setuptools_cfg.get("package-dir", {})
    folders = {package_dir.get(p, p.replace(".", "/")).split("/")[0] for p in setuptools_cfg["packages"]}
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")
    readme = config["project"].get("readme")
    if isinstance(readme, str) and (ROOT / readme).is_file():
        shutil.copy2(ROOT / readme, dest / readme)
    for folder in sorted(folders):
        shutil.copytree(ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))


def install_kit(where: Path, *, dependencies: bool = True) -> Path:
    """A venv under ``where`` with the kit installed in it; returns the venv's ``bin`` folder (its ``python`` and
    ``push-cache-kit``). Without ``dependencies`` the venv has the kit and nothing else (a broken install)."""
    src = where / "kit-src"
    src.mkdir(parents=True)
    copy_sources(src)
    env_dir = where / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    bin_dir = env_dir / "bin"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install",
                              "--no-deps", "--quiet", str(src)], capture_output=True, text=True, timeout=300)
    if install.returncode != 0:
        raise RuntimeError(f"pip install failed:\n{install.stdout}\n{install.stderr}")
    if not dependencies:
        return bin_dir
    purelib = subprocess.run([str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "zz_test_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return bin_dir

"""Report folders: safe names, where full and partial runs write, one lock per folder, the set swapped in whole.

- ``safe_name(name)`` turns a backend name into one path component: nothing but ``[A-Za-z0-9._-]``, no leading
  dot (so never ``.``, ``..`` or a hidden folder), never empty, never ending in ``.partial``; a name that had to
  change carries a hash of itself, so different names get different folders.
- ``default_folder(base, name, partial, release)``: ``reports/<name>/`` for a full run, ``reports/<name>.partial/``
  for a partial one, ``reports/<name>@<release>/`` for a release other than the spec's newest; checked to lie
  directly inside ``base``.
- Under the lock, the temporary folders and files a killed run left beside the folder are removed.
- ``write_files(files, folder)``: under an exclusive ``fcntl.flock`` on ``<parent>/.locks/<name>.lock``, writes
  the files into a fresh sibling folder and swaps it with ``folder`` in one step (``renameat2(RENAME_EXCHANGE)``
  where the kernel has it, else two renames), so a reader or a concurrent run never sees a mixed set.  A folder
  that holds anything but report files (a user's ``--report-dir .``) is never swapped: the files are replaced one
  by one, still under the lock.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import os
import secrets
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

from .schema import parse_report

REPORT_FILES = ("report.json", "junit.xml", "summary.md", "index.html", "badge.json")
PARTIAL_SUFFIX = ".partial"
LOCK_DIR = ".locks"
_MAX_NAME = 80
_UNNAMED = "unnamed-backend"
_HASH_CHARS = 10


def safe_name(name: str) -> str:
    """One safe path component for a backend name (see the module docstring). A name that had to change (a
    character outside the safe set, a leading dot, its length) gets a short hash of the name itself, so two
    different names never share a folder."""
    name = str(name)
    text = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "_" for ch in name)
    text = text.lstrip(".")[:_MAX_NAME].rstrip(".")
    if text.endswith(PARTIAL_SUFFIX):
        text += "_"  # reserved for the partial folder of the backend without the suffix
    if not name:
        return _UNNAMED
    if text != name:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
        text = f"{text or _UNNAMED}-{digest}"
    return text


def default_folder(base: Path, name: str, partial: bool, release: str | None = None) -> Path:
    """``base/<safe name>`` for a full run, ``base/<safe name>.partial`` for a partial one; a release other than
    the spec's newest is part of the name (``<safe name>@<release>``)."""
    base = Path(base)
    # the tag's parts (an operation, a release: running/finish.py folder_release) each made safe
    stem = safe_name(name) + "".join(f"@{safe_name(part)}" for part in (release or "").split("@") if part)
    folder = base / (stem + (PARTIAL_SUFFIX if partial else ""))
    if folder.resolve().parent != base.resolve():  # cannot happen with safe_name; checked all the same
        raise ValueError(f"report folder {folder} is not inside {base}")
    return folder


def partial_sibling(folder: Path) -> Path:
    """Where a partial run writes instead of ``folder`` when ``folder`` holds a full report."""
    folder = Path(folder)
    return folder.with_name(folder.name + PARTIAL_SUFFIX)


def holds_full_report(folder: Path) -> bool:
    """True when ``folder/report.json`` is the report of a full run (a kit 0.1 report counts as full)."""
    path = Path(folder) / "report.json"
    try:
        report = parse_report(path.read_text(encoding="utf-8"), str(path))
    except (OSError, ValueError):  # ReportError is a ValueError: no readable report there, so none to keep
        return False
    if not isinstance(report, dict) or "verdict" not in report:
        return False
    completeness = report.get("completeness")
    if not isinstance(completeness, dict):
        return True
    return bool(completeness.get("full"))


def lock_path(folder: Path) -> Path:
    folder = Path(folder)
    return folder.parent / LOCK_DIR / f"{folder.name or 'root'}.lock"


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[Path]:
    """Hold the folder's lock (an exclusive flock on ``<parent>/.locks/<name>.lock``)."""
    path = lock_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock, the swap alone keeps sets whole
            fcntl = None  # type: ignore[assignment]
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield path
        finally:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def check_writable(folder: Path) -> str | None:
    """Why reports could not be written to ``folder`` (checked before a run starts), or None."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return f"{folder} exists and is not a folder"
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with folder_lock(folder):
            pass
    except OSError as exc:
        return f"cannot write beside {folder}: {exc.strerror or exc}"
    target = folder if folder.exists() else folder.parent
    if not os.access(target, os.W_OK | os.X_OK):
        return f"{target} is not writable"
    return None


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2() -> object | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system cannot."""
    fn = _renameat2()
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)  # type: ignore[operator]
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _only_report_files(folder: Path) -> bool:
    if folder.is_symlink() or not folder.is_dir():
        return False
    return all(entry.name in REPORT_FILES and entry.is_file() for entry in folder.iterdir())


def _write_atomic(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}-{secrets.token_hex(3)}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def remove_stale(folder: Path) -> list[Path]:
    """Remove what a killed run left beside ``folder`` (its ``.new-``/``.old-`` sets, half-written files); called
    under the folder's lock, so no live writer's temporaries are touched. Returns what it removed."""
    folder = Path(folder)
    removed = []
    for pattern in (f".{folder.name}.new-*", f".{folder.name}.old-*"):
        for stale in folder.parent.glob(pattern):
            shutil.rmtree(stale, ignore_errors=True)
            removed.append(stale)
    if folder.is_dir():
        for stale in folder.glob(".*.tmp*"):
            stale.unlink(missing_ok=True)
            removed.append(stale)
    return removed


def write_files(files: Mapping[str, str], folder: Path) -> dict[str, Path]:
    """Write ``{file name: text}`` into ``folder`` as one set (see the module docstring)."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(folder):
        remove_stale(folder)
        if folder.exists() and not _only_report_files(folder):
            folder.mkdir(parents=True, exist_ok=True)  # a folder holding other things: never swapped away
            return {name: _write_atomic(folder / name, text) for name, text in files.items()}
        fresh = folder.with_name(f".{folder.name}.new-{os.getpid()}-{secrets.token_hex(4)}")
        os.mkdir(fresh)
        try:
            for name, text in files.items():
                (fresh / name).write_text(text, encoding="utf-8")
            if not folder.exists():
                os.rename(fresh, folder)
            elif _exchange(fresh, folder):
                shutil.rmtree(fresh, ignore_errors=True)  # now holds the previous set
            else:
                old = folder.with_name(f".{folder.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
                os.rename(folder, old)
                os.rename(fresh, folder)
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(fresh, ignore_errors=True)
            raise
    return {name: folder / name for name in files}

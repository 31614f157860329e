"""Report folders: safe names, full and partial folders, one lock per folder, the five files swapped in whole."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from conformance_tests.report import load_report, write_reports
from conformance_tests.report.folders import (
    REPORT_FILES,
    default_folder,
    holds_full_report,
    lock_path,
    partial_sibling,
    safe_name,
    write_files,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # a name that had to change carries a hash of itself: different names, different folders
        ('reference', 'reference'),
        ('legacy-8.2.RC1.alpha002', 'legacy-8.2.RC1.alpha002'),
        ('..', 'unnamed-backend-5ec1f7e700'),
        ('.', 'unnamed-backend-cdb4ee2aea'),
        ('', 'unnamed-backend'),
        ('/', '_-8a5edab282'),
        ('../../escaped/x', '_.._escaped_x-c9ebdfd708'),
        ('/etc/passwd', '_etc_passwd-74acf31844'),
        ('.hidden', 'hidden-1692419006'),
        ("a\\b", "a_b-c62016d0f8"),
        ('名字', '__-6773310492'),
        ("x" * 300, "x" * 80 + "-0d4e2ca9e9"),
        ('reference.partial', 'reference.partial_-d72c2be047'),
    ],
)
def test_safe_name(name, expected):
    assert safe_name(name) == expected


@pytest.mark.parametrize("name", ["..", "", "/", "../../x", "a/../../b", "..\\..", "\x00", "reference"])
@pytest.mark.parametrize("partial", [False, True])
def test_default_folder_is_directly_inside_reports(tmp_path, name, partial):
    base = tmp_path / "reports"
    folder = default_folder(base, name, partial)
    assert folder.resolve().parent == base.resolve()
    assert folder.name.endswith(".partial") == partial


def test_partial_sibling_and_full_report_detection(tmp_path, passing_report, kit):
    folder = tmp_path / "r"
    assert partial_sibling(folder) == tmp_path / "r.partial"
    assert not holds_full_report(folder)
    write_reports(passing_report, folder)
    assert holds_full_report(folder)
    partial = kit.make_report([kit.row(kit.CLAUSES[0]["id"], "ok", "passed", "must")],
                              completeness={"full": False, "reasons": ["-k 'x'"]})
    write_reports(partial, folder)
    assert not holds_full_report(folder)
    (folder / "report.json").write_text("{not json")
    assert not holds_full_report(folder)


def test_a_set_is_swapped_in_whole_and_the_lock_lives_beside_the_folder(tmp_path, every_report, passing_report):
    folder = tmp_path / "reports" / "reference"
    first = write_reports(every_report, folder)
    assert sorted(first) == sorted(REPORT_FILES)
    inode = folder.stat().st_ino
    write_reports(passing_report, folder)
    assert load_report(folder / "report.json")["verdict"]["label"] == "CERTIFIED"
    assert folder.stat().st_ino != inode, "the folder was replaced as a whole"
    assert lock_path(folder) == tmp_path / "reports" / ".locks" / "reference.lock" and lock_path(folder).exists()
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [".locks", "reference"]


def test_a_folder_holding_other_files_is_never_swapped_away(tmp_path, passing_report):
    keep = tmp_path / "notes.txt"
    keep.write_text("mine")
    write_reports(passing_report, tmp_path)
    assert keep.read_text() == "mine"
    assert all((tmp_path / n).exists() for n in REPORT_FILES)


def _writer(folder: str, tag: int, rounds: int) -> None:
    for r in range(rounds):
        stamp = f"{tag}-{r}"
        write_files({name: json.dumps({"stamp": stamp, "file": name}) for name in REPORT_FILES}, Path(folder))


def _read_set(folder: Path) -> set[str]:
    """The stamps of the five files, read through one open handle on the folder (as a careful reader does)."""
    dfd = os.open(folder, os.O_RDONLY)
    try:
        stamps = set()
        for name in REPORT_FILES:
            fd = os.open(name, os.O_RDONLY, dir_fd=dfd)
            with os.fdopen(fd, encoding="utf-8") as fh:
                stamps.add(json.loads(fh.read())["stamp"])
        return stamps
    finally:
        os.close(dfd)


def test_concurrent_writers_never_leave_a_mixed_set(tmp_path):
    folder = tmp_path / "shared"
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    procs = [ctx.Process(target=_writer, args=(str(folder), tag, 25)) for tag in range(4)]
    for p in procs:
        p.start()
    reads = 0
    while any(p.is_alive() for p in procs):  # a reader holding the folder open never sees a mixed set either
        try:
            stamps = _read_set(folder)
        except (FileNotFoundError, NotADirectoryError, ValueError):
            continue
        assert len(stamps) == 1, stamps
        reads += 1
    for p in procs:
        p.join()
        assert p.exitcode == 0
    stamps = {json.loads((folder / n).read_text())["stamp"] for n in REPORT_FILES}
    assert len(stamps) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [".locks", "shared"], "no temporary folder left"

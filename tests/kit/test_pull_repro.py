"""A pull's reproduction: a broken backend's failing rows for pull_cache and for a pull of blocks from a contiguous
cache carry scripts that read the destination where a pull writes it (the local node) and fail by themselves
naming the clause, and pass once the backend is the reference."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.certify import IN_PROCESS

CASES = [
    ("pull_cache", "pull_remote_batch_zero", "pull_cache.data.remote_batch_slice"),
    ("pull_blocks", "pull_blocks_entry_start_each", "pull_blocks.data.from_contiguous.blocks"),
]


def _certify(operation: str, backend: str, clause: str, out: Path) -> dict:
    subprocess.run([sys.executable, "-m", "conformance_tests", "certify", *IN_PROCESS, "--operation", operation,
                    "--backend", backend, "-q", "--report-dir", str(out), "--clauses", clause],
                   capture_output=True, text=True, cwd=ROOT)
    return json.loads((out / "report.json").read_text())


@pytest.mark.parametrize(("operation", "mutant", "clause"), CASES)
def test_a_pulls_repro_fails_on_the_broken_backend_and_passes_on_the_reference(tmp_path, operation, mutant, clause):
    report = _certify(operation, f"mutants.catalog:{mutant}", clause, tmp_path / "bad")
    rows = [t for t in report["tests"] if t["outcome"] in ("failed", "incompatible")]
    assert rows and all(t["repro"] for t in rows), report["verdict"]
    for row in rows:
        run = subprocess.run([sys.executable, "-c", row["repro"]], capture_output=True, text=True, cwd=ROOT)
        assert run.returncode == 1 and f"{clause}: dst tensor" in run.stderr, run.stderr[-3000:]
        fixed = row["repro"].replace(f"'mutants.catalog'), '{mutant}'", "'reference_impl.backend'), 'backend'")
        assert fixed != row["repro"]
        run = subprocess.run([sys.executable, "-c", fixed], capture_output=True, text=True, cwd=ROOT)
        assert run.returncode == 0, run.stderr[-3000:]

"""Hand-made rows for the report self-tests (built through build_report, as the plugin does)."""

from __future__ import annotations

import copy
import sys
from types import ModuleType
from typing import Any

import pytest

from conformance_tests.report import build_report

HEADER: dict[str, Any] = {
    "suite": {"name": "push-cache-conformance", "version": "0.1.0"},
    "spec": {"version": "9.0.0", "sha256": "0123456789abcdef" * 4, "path": "spec/push_cache.yaml"},
    "backend": {
        "name": "reference",
        "version": "0.1.0",
        "spec": "reference_impl.backend:backend",
        "capabilities": {"placements": ["HOST", "DEVICE"], "blocks_cache": True},
    },
    "environment": {"python": "3.11.7", "numpy": "2.4.6", "platform": "Linux-x86_64", "hostname": "ci"},
    "run": {
        "started": "2025-01-02T03:04:05+00:00",
        "duration_s": 4.5,
        "hypothesis_profile": "certify",
        "hypothesis_seed": 12345,
        "expectations": {"path": None, "sha256": None, "strict": False},
        "argv": ["--backend", "reference"],
    },
}

MOD = "conformance_tests/suite/test_{family}.py::test_case[{clause}-{case}]"


def clause(cid: str, level: str, title: str | None = None) -> dict[str, Any]:
    return {"id": cid, "level": level, "family": cid.split(".")[1], "title": title or f"title of {cid}"}


def row(cid: str, case: str, outcome: str, level: str, **extra: Any) -> dict[str, Any]:
    row = {
        "id": MOD.format(family=cid.split(".")[1], clause=cid, case=case),
        "clauses": [cid],
        "level": level,
        "params": {"case": case},
        "outcome": outcome,
        "expected": "pass",
        "message": None,
        "repro": None,
        "hypothesis": None,
        "duration_s": 0.01,
    }
    row.update(extra)
    return row


# One clause per clause outcome (and a may-clause); the tests cover every test outcome.
CLAUSES = [
    clause("push_cache.param.src_batch_index.type", "must", "src_batch_index must be an int"),
    clause("push_cache.param.size.negative", "must", "size < -1 raises <ValueError>"),
    clause("push_cache.data.bytes_equal", "must"),
    clause("push_cache.data.layer_range", "should"),
    clause("push_cache.timeout.delay", "must"),
    clause("push_cache.remote.unknown_cache", "must"),
    clause("push_cache.remote.unlinked", "should"),
    clause("push_cache.order.tensor_order", "may"),
    clause("push_cache.config.mem_pool", "must"),
    clause("push_cache.safety.guard_bytes", "must", "guard bytes <stay> intact"),
    clause("push_cache.types.dtype_sizes", "should"),
    clause("push_cache.timeout.retry_once", "must"),
]

REPRO = (
    "from llm_datadist import CacheKeyByIdAndIndex\ncm.push_cache(dst_key, src_cache, src_batch_index=1.0)\n"
)


FLAKY_MESSAGE = "push_cache() [push_cache.timeout.retry_once]: raised LLMException(LLM_TIMEOUT), expected it to return"


def every_outcome_rows() -> list[dict[str, Any]]:
    return [
        row("push_cache.param.src_batch_index.type", "int", "passed", "must"),
        row(
            "push_cache.param.src_batch_index.type",
            "float",
            "failed",
            "must",
            message="push_cache(src_batch_index=1.0) [push_cache.param.src_batch_index.type]: "
            "expected TypeError | ValueError, got no exception",
            repro=REPRO,
            hypothesis={"example": "push_cache(src_batch_index=1.0)", "seed": 12345},
        ),
        row("push_cache.param.size.negative", "minus2", "passed", "must"),
        row("push_cache.param.size.negative", "minus3", "xpassed", "must", expected="xfail"),
        row("push_cache.data.bytes_equal", "blocks", "passed", "must"),
        row(
            "push_cache.data.layer_range",
            "partial",
            "incompatible",
            "should",
            message="bytes differ at layer 2",
            repro="cm.push_cache(dst_key, src_cache, src_layer_range=range(0, 2))\n",
        ),
        row(
            "push_cache.timeout.delay", "slow", "not_supported", "must", message="not supported: faults.delay"
        ),
        row("push_cache.remote.unknown_cache", "unknown", "xfailed", "must", expected="xfail"),
        row("push_cache.remote.unlinked", "unlinked", "passed", "should"),
        row("push_cache.order.tensor_order", "reversed", "failed", "may", message="outside the envelope"),
        row("push_cache.config.mem_pool", "pool", "skipped", "must", expected="skip", message="skipped"),
        row("push_cache.config.mem_pool", "nopool", "error", "must", message="fixture error: cluster"),
        row("push_cache.timeout.retry_once", "baseline", "flaky", "must",
            message=FLAKY_MESSAGE, attempts=[{"outcome": "failed", "message": FLAKY_MESSAGE}, {"outcome": "passed"}]),
    ]


def make_report(tests: list[dict[str, Any]], clauses: list[dict[str, Any]] | None = None,
                completeness: dict[str, Any] | None = None, **exp: Any):
    return build_report(
        copy.deepcopy(HEADER),
        copy.deepcopy(tests),
        copy.deepcopy(CLAUSES if clauses is None else clauses),
        exp,
        completeness,
    )


@pytest.fixture
def every_report() -> dict[str, Any]:
    return make_report(every_outcome_rows(), unmatched=["conformance_tests/suite/test_gone.py::test_x"])


@pytest.fixture
def empty_report() -> dict[str, Any]:
    return make_report([])


@pytest.fixture
def passing_report() -> dict[str, Any]:
    rows = [row(c["id"], "ok", "passed", c["level"]) for c in CLAUSES]
    return make_report(rows)


@pytest.fixture
def kit() -> ModuleType:
    """This module, for its helpers (row, clause, make_report, CLAUSES)."""
    return sys.modules[__name__]


#: the broken adapter of issue 33 (tests/kit/fakes/wrong_entry_adapter.py: a push with src_batch_index == 1 lands
#: in the wrong destination entry) on three data clauses it breaks and one it passes: 6 failing tests, 5 passing
WRONG_ENTRY = ("--backend", "wrong_entry_adapter", "--clauses",
               "push_cache.data.src_batch_slice,push_cache.data.size_default,push_cache.data.placements,"
               "push_cache.remote.not_linked")


@pytest.fixture(scope="session")
def wrong_entry_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A run of the broken adapter, as a vendor meets it: its folder (reports/fake-wrong-entry/ below ``cwd``),
    its report, and certify's terminal output."""
    from tests.helpers.certify import certify

    cwd = tmp_path_factory.mktemp("vendor")
    folder = cwd / "reports" / "fake-wrong-entry"
    proc = certify(*WRONG_ENTRY, "--report-dir", "reports/fake-wrong-entry", "-q", cwd=cwd)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    import json

    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return {"cwd": cwd, "folder": folder, "report": report, "stdout": proc.stdout}

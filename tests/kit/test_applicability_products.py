"""The applicability clauses read the product a backend declares against the spec's types.products lists:
on a product both pages support (or none declared: an emulator) a push must land exactly; on a product they do
not support, or one only the English note names, a refusal is allowed ("x" and "only ... supported" name no
error) and so is an exact push."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.certify import certify

CLAUSES = ("push_cache.applicability.products", "push_cache.applicability.unsupported_products")


def _outcomes(tmp_path: Path, backend: str) -> tuple[int, dict[str, str], str]:
    proc = certify("--backend", f"products_backend:{backend}", "--clauses", "push_cache.applicability.*",
                   "--report-dir", str(tmp_path), "-q")
    report = json.loads((tmp_path / "report.json").read_text())
    return proc.returncode, {c["id"]: c["outcome"] for c in report["clauses"] if c["id"] in CLAUSES}, proc.stdout


@pytest.mark.parametrize(("backend", "must", "may"), [
    ("supported", "passed", "not_supported"),
    ("supported_refusing", "failed", "not_supported"),       # a supported product on which push_cache refuses
    ("undeclared_refusing", "failed", "not_supported"),      # no product declared: held to the supported ones
    ("unsupported", "not_supported", "passed"),              # an x row: pushing exactly is allowed
    ("english_only_refusing", "not_supported", "passed"),    # the Chinese note does not name the 300I A2 card
    ("family_refusing", "not_supported", "passed"),          # an A2 family, the product not named
])
def test_each_declared_product_is_judged_by_one_clause(tmp_path: Path, backend: str, must: str, may: str) -> None:
    code, outcomes, out = _outcomes(tmp_path, backend)
    assert outcomes == dict(zip(CLAUSES, (must, may), strict=True)), out[-2000:]
    assert (code == 1) == (must == "failed"), out[-2000:]


def test_a_failure_names_the_product_and_the_call(tmp_path: Path) -> None:
    _, _, out = _outcomes(tmp_path, "supported_refusing")
    assert "push_cache.applicability.products" in out and "product Atlas 800I A2 inference server" in out
    assert "push_cache(" in out and "LLM_FAILED" in out

"""A backend that follows the documentation literally where the vendor does not (tests/kit/fakes/
literal_docs_backend.py: it pushes a size equal to the entry size exactly, and refuses unset ranges into a
destination with more layers) is CERTIFIED: the spec asks no more than the documentation says. It is
reported incompatible with the vendor on the should clauses that record the vendor's choice there."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.certify import certify


def test_a_backend_that_follows_the_documentation_literally_is_certified(tmp_path: Path) -> None:
    proc = certify("--backend", "literal_docs_backend:backend", "--report-dir", str(tmp_path), "-q", timeout=900)
    report = json.loads((tmp_path / "report.json").read_text())
    assert proc.returncode == 0 and report["verdict"]["label"] == "CERTIFIED", proc.stdout[-3000:]
    outcomes = {c["id"]: c["outcome"] for c in report["clauses"]}
    assert outcomes["push_cache.restriction.size.entry_size"] == "passed"
    assert outcomes["push_cache.restriction.layer_range.none_means_all.larger_destination"] == "passed"
    assert outcomes["push_cache.restriction.size.entry_size.status"] == "incompatible"
    assert outcomes["push_cache.restriction.layer_range.none_means_all.larger_destination.source_layers"] == \
        "incompatible"
    incompatible = {cid for cid, o in outcomes.items() if o == "incompatible"}
    assert incompatible == {"push_cache.restriction.size.entry_size.status",
                            "push_cache.restriction.layer_range.none_means_all.larger_destination.source_layers"}
    # the fake did what it says: the entry-size pushes returned normally (and the may clause found them exact),
    # the pushes into larger destinations were refused
    pushed = [t for t in report["tests"] if "push_cache.restriction.size.entry_size.status-" in t["id"]]
    assert len(pushed) == 2 and all("returned normally" in (t["message"] or "") for t in pushed), pushed
    refused = [t for t in report["tests"] if "larger_destination.source_layers-" in t["id"]]
    assert len(refused) == 3 and all("LLM_PARAM_INVALID" in (t["message"] or "") for t in refused), refused

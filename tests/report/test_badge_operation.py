"""A report's badge names the operation the report certified (a backend's badges of two operations differ)."""

from __future__ import annotations

from conformance_tests.report.badge import to_badge


def _report(operation: str | None) -> dict:
    spec = {"version": "9.0.0", "sha256": "0" * 64, **({"operation": operation} if operation else {})}
    return {"spec": spec, "verdict": {"label": "CERTIFIED", "kind": "certified", "certified": True, "partial": False}, "expectations": None}


def test_the_badge_label_is_the_reports_operation():
    assert to_badge(_report("pull_blocks"))["label"] == "pull_blocks"  # type: ignore[arg-type]
    assert to_badge(_report("push_cache"))["label"] == "push_cache"  # type: ignore[arg-type]
    # a report from before the family names no operation: push_cache, the only one then
    assert to_badge(_report(None))["label"] == "push_cache"  # type: ignore[arg-type]

"""badge.json in the shields.io endpoint format (https://shields.io/badges/endpoint-badge).

Shields validates the endpoint JSON strictly and rejects unknown keys, so the badge carries everything in its
message: the verdict, the number of waived must tests, the number of flaky must and may tests (failed, then passed
when run again: they block), and, when an expectations file was used, the first 12 hex digits of its sha256 (the other four formats name the file, its full hash and each waived test).
"""

from __future__ import annotations

from typing import Any

from .model import CERTIFIED_DECLARED, CERTIFIED_WITH_WAIVERS, LABEL_KIND

#: one colour per verdict kind (CERTIFIED (DECLARED CAPABILITIES) gets its own shade of green)
COLORS = {
    "certified": "brightgreen",
    "certified_declared": "yellowgreen",
    "certified_with_waivers": "yellow",
    "partial": "lightgrey",
    "not_certified": "red",
}


def badge_kind(verdict: dict[str, Any]) -> str:
    label = verdict["label"]
    kind = verdict.get("kind") or LABEL_KIND.get(label, "certified" if verdict["certified"] else "not_certified")
    if kind == "certified" and label == CERTIFIED_DECLARED:
        return "certified_declared"
    return kind


def to_badge(report: dict[str, Any]) -> dict[str, Any]:
    verdict = report["verdict"]
    kind = badge_kind(verdict)
    message = verdict["label"].lower()
    if verdict["label"] == CERTIFIED_WITH_WAIVERS:
        n = len(verdict.get("waived_must_tests") or [])
        message += f": {n} must test{'s' if n != 1 else ''} waived"
    flaky = len(verdict.get("flaky_tests") or [])
    if flaky:
        message += f": {flaky} flaky test{'s' if flaky != 1 else ''}"
    sha = (report.get("expectations") or {}).get("sha256")
    if sha:
        message += f" (expectations {sha[:12]})"
    return {
        "schemaVersion": 1,
        "label": "push_cache",
        "message": message,
        "color": COLORS[kind],
    }

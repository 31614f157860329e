"""badge.json in the shields.io endpoint format (https://shields.io/badges/endpoint-badge).

Shields validates the endpoint JSON strictly and rejects unknown keys, so the badge carries everything in its
message: the verdict, the number of waived must tests, the number of flaky must and may tests (failed, then passed
when run again: they block), and, when an expectations file was used, the first 12 hex digits of its sha256 (the other four formats name the file, its full hash and each waived test).
"""

from __future__ import annotations

from typing import TypedDict

from .model import CERTIFIED_WITH_WAIVERS
from .parts import Report, operation_of
from .shades import BADGE_COLORS, shade_of


class Badge(TypedDict):
    """badge.json: the only keys shields.io accepts."""

    schemaVersion: int
    label: str
    message: str
    color: str


def to_badge(report: Report) -> Badge:
    verdict = report["verdict"]
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
        "label": operation_of(report),  # a badge says which operation of the family it certifies
        "message": message,
        "color": BADGE_COLORS[shade_of(verdict)],
    }

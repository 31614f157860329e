"""badge.json in the shields.io endpoint format (https://shields.io/badges/endpoint-badge)."""

from __future__ import annotations

from typing import Any


def to_badge(report: dict[str, Any]) -> dict[str, Any]:
    certified = bool(report["verdict"]["certified"])
    return {
        "schemaVersion": 1,
        "label": "push_cache",
        "message": "certified" if certified else "not certified",
        "color": "brightgreen" if certified else "red",
    }

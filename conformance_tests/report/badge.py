"""badge.json in the shields.io endpoint format (https://shields.io/badges/endpoint-badge)."""

from __future__ import annotations

from typing import Any


def to_badge(report: dict[str, Any]) -> dict[str, Any]:
    verdict = report["verdict"]
    certified, partial = bool(verdict["certified"]), bool(verdict.get("unchecked"))
    return {
        "schemaVersion": 1,
        "label": "push_cache",
        "message": verdict["label"].lower(),
        "color": ("yellowgreen" if partial else "brightgreen") if certified else "red",
    }

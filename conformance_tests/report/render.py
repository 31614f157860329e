"""Write the report and every format derived from it into one folder."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .badge import to_badge
from .htmlpage import to_html
from .junit import to_junit
from .markdown import to_markdown
from .schema import validate_report

REPORT_JSON = "report.json"
DERIVED = ("junit.xml", "summary.md", "index.html", "badge.json")


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _write(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def render_derived(report: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    """Write junit.xml, summary.md, index.html and badge.json (from the JSON alone)."""
    validate_report(report)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    texts = {
        "junit.xml": to_junit(report),
        "summary.md": to_markdown(report),
        "index.html": to_html(report),
        "badge.json": dumps(to_badge(report)),
    }
    return {name: _write(out_dir / name, text) for name, text in texts.items()}


def write_reports(report: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    """Write report.json first, then the derived formats; returns {file name: path}."""
    validate_report(report)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {REPORT_JSON: _write(out_dir / REPORT_JSON, dumps(report))}
    paths.update(render_derived(report, out_dir))
    return paths

"""Write the report and every format derived from it into one folder (as one set: see folders.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .badge import to_badge
from .folders import folder_lock, write_files
from .htmlpage import to_html
from .junit import to_junit
from .markdown import to_markdown
from .parts import Report
from .rerun import shown_path
from .schema import to_json, validate_report

REPORT_JSON = "report.json"


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _write(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}-{id(text):x}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def derived_texts(report: Report, location: str | None = None) -> dict[str, str]:
    """junit.xml, summary.md, index.html and badge.json as text (from the JSON alone, and ``location``: where
    that report.json lies, as the re-run command names it)."""
    return {
        "junit.xml": to_junit(report),
        "summary.md": to_markdown(report, location),
        "index.html": to_html(report, location),
        "badge.json": dumps(to_badge(report)),
    }


def render_derived(report: Report, out_dir: Path, source: Path | None = None) -> dict[str, Path]:
    """Write junit.xml, summary.md, index.html and badge.json (from the JSON alone; ``source``: the report.json
    they are made from, for the re-run command) under the folder's lock.

    The folder usually holds the report.json they are made from, so the files are replaced one by one.
    """
    validate_report(report)
    texts = derived_texts(report, shown_path(source) if source is not None else None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with folder_lock(out_dir):
        return {name: _write(out_dir / name, text) for name, text in texts.items()}


def write_reports(report: Report, out_dir: Path) -> dict[str, Path]:
    """Write report.json and the derived formats into ``out_dir`` as one set; returns {file name: path}."""
    validate_report(report)
    texts = {REPORT_JSON: to_json(report), **derived_texts(report, shown_path(Path(out_dir) / REPORT_JSON))}
    return write_files(texts, Path(out_dir))

"""Vendor expectations files: known failures recorded as xfail/skip entries.

Format (validated by ``expectations.schema.json``)::

    version: 1
    entries:
      - match: "push_cache.order.*"          # glob over clause IDs or test IDs
        outcome: xfail                       # xfail | skip
        reason: "our adapter checks size first"
        link: https://example.com/issue/1    # optional
        expires: 2027-01-31                  # optional; after that date the entry is reported and ignored

An entry is a *waiver*: it may waive tests of any level, but what it waives is limited by the verdict (see
``conformance_tests/report/builder.py``): a waived ``must`` test never gives plain CERTIFIED, and a ``must``
clause left with no passing test is not certified.  Every report names the file, its sha256, each waived test
with its entry's reason and expiry, and the expired entries.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..spec.bounded_yaml import BoundedLoader, LimitError, read_bounded


class ExpectationsError(Exception):
    """A bad expectations file (one-line message with the JSON path of the bad node)."""


@dataclass
class Entry:
    index: int
    match: str
    outcome: str
    reason: str
    link: str | None = None
    expires: str | None = None
    expired: bool = False
    hits: list[str] = field(default_factory=list)

    def describe(self) -> str:
        extra = f" (expired {self.expires})" if self.expired else ""
        return f"entries[{self.index}] match={self.match!r} outcome={self.outcome}{extra}"

    def as_dict(self) -> dict[str, Any]:
        """The entry as the report lists it (``expectations.entries[]``)."""
        return {"index": self.index, "match": self.match, "outcome": self.outcome, "reason": self.reason,
                "link": self.link, "expires": self.expires, "expired": self.expired, "hits": len(self.hits)}

    def waiver(self) -> dict[str, Any]:
        """What a test row records about the entry that waived it (``tests[].waiver``)."""
        return {"entry": self.index, "match": self.match, "outcome": self.outcome, "reason": self.reason,
                "link": self.link, "expires": self.expires}


def _glob(pattern: str) -> str:
    # test IDs contain [..]; treat brackets literally, only * and ? are wildcards
    return pattern.replace("[", "\0").replace("]", "[]]").replace("\0", "[[]")


def _matches(pattern: str, names: Iterable[str]) -> bool:
    glob = _glob(pattern)
    return any(name == pattern or fnmatch.fnmatchcase(name, glob) for name in names)


@dataclass
class Expectations:
    path: str | None
    sha256: str | None
    entries: list[Entry]

    @property
    def active(self) -> list[Entry]:
        return [e for e in self.entries if not e.expired]

    @property
    def expired(self) -> list[Entry]:
        return [e for e in self.entries if e.expired]

    def lookup(self, clause_ids: Iterable[str], test_ids: Iterable[str], record: str | None = None) -> Entry | None:
        """The first active entry matching any clause ID or test ID (and remember the hit)."""
        names = [*clause_ids, *test_ids]
        for entry in self.active:
            if _matches(entry.match, names):
                if record is not None:
                    entry.hits.append(record)
                return entry
        return None

    def unmatched(self) -> list[str]:
        return [e.match for e in self.active if not e.hits]

    def as_dict(self, strict: bool = False) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "strict": strict}

    def report_section(self) -> dict[str, Any]:
        """The file's part of the report's ``expectations`` section: path, hash, entries, expired entries."""
        return {
            "path": self.path,
            "sha256": self.sha256,
            "entries": [e.as_dict() for e in self.entries],
            "expired": [e.as_dict() for e in self.expired],
            "unmatched": self.unmatched(),
        }


def _schema() -> dict[str, Any]:
    text = resources.files("conformance_tests.selecting").joinpath("expectations.schema.json").read_text("utf-8")
    return json.loads(text)


class _Loader(BoundedLoader):
    """A bounded SafeLoader that keeps timestamps as the text the user wrote.

    PyYAML turns ``2020-02-30`` into a ``datetime.date`` while parsing and raises a bare ValueError for an
    impossible date; reading it as text lets the schema and :func:`_check_date` name the entry instead.
    """


def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def _check_date(p: Path, index: int, text: str) -> _dt.date:
    try:
        return _dt.date.fromisoformat(text)
    except ValueError as exc:
        raise ExpectationsError(
            f"expectations file {p}: $.entries[{index}].expires: {text!r} is not a valid date (YYYY-MM-DD): {exc}"
        ) from None


def load_expectations(path: str | Path, today: _dt.date | None = None) -> Expectations:
    p = Path(path)
    try:
        raw = read_bounded(p)
    except OSError as exc:
        raise ExpectationsError(f"expectations file {p}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ExpectationsError(f"expectations file {p}: too large: {exc}") from None
    try:
        doc = yaml.load(raw.decode("utf-8"), Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except LimitError as exc:
        raise ExpectationsError(f"expectations file {p}: {exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError, ValueError) as exc:
        first = " ".join(str(exc).split())
        raise ExpectationsError(f"expectations file {p}: not valid YAML: {first}") from None
    doc = _plain(doc)
    validator = jsonschema.Draft202012Validator(_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        raise ExpectationsError(f"expectations file {p}: {error.json_path}: {error.message}")
    today = today or _dt.date.today()
    entries: list[Entry] = []
    for i, e in enumerate(doc["entries"]):
        expires = e.get("expires")
        expired = bool(expires) and _check_date(p, i, expires) < today
        entries.append(
            Entry(i, e["match"], e["outcome"], e["reason"], e.get("link"), expires, expired)
        )
    return Expectations(str(p), hashlib.sha256(raw).hexdigest(), entries)

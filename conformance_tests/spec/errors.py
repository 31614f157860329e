"""The error a spec that cannot be used raises: one line, ``<file>: <where>: <what>``."""

from __future__ import annotations

import difflib
import pathlib
from collections.abc import Iterable


class SpecError(Exception):
    """A spec that cannot be used. ``str(e)`` is one line: ``<file>: <where>: <what>``, where ``<where>`` is a JSON
    path such as ``$.clauses[3].level`` (or ``line L, column C`` for a YAML syntax error)."""

    def __init__(self, file: str | pathlib.Path, where: str, what: str) -> None:
        self.file = str(file)
        self.where = one_line(where)
        self.what = one_line(what)
        #: every (where, what) the checks found; the message shows the first
        self.problems: list[tuple[str, str]] = [(self.where, self.what)]
        super().__init__(f"{self.file}: {self.where}: {self.what}")


def one_line(text: object) -> str:
    return " ".join(str(text).split())


def json_path(*parts: str | int) -> str:
    """A JSON path in the notation jsonschema uses: ``$.clauses[3].level``."""
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""

"""Reading the kit's YAML inputs (the spec, an expectations file) within bounds: a file larger than
:data:`MAX_FILE_BYTES` is refused before it is read, and a document with more than :data:`MAX_ALIASES` aliases
is refused while it is parsed, so an alias bomb costs milliseconds, not gigabytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

#: far above the packaged spec (about 130 KB) and any expectations file a vendor writes
MAX_FILE_BYTES = 4 << 20
#: a hand-written document uses a few anchors; an alias bomb needs many
MAX_ALIASES = 64


class LimitError(yaml.YAMLError):
    """The document is outside the kit's bounds."""


class BoundedLoader(yaml.SafeLoader):
    """A SafeLoader that counts aliases while it composes the document."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise LimitError(f"more than {MAX_ALIASES} YAML aliases (an alias bomb?); the kit reads at most "
                                 f"{MAX_ALIASES}")
        return super().compose_node(parent, index)


def read_bounded(path: Path) -> bytes:
    """The file's bytes; ValueError when it is larger than MAX_FILE_BYTES (checked before reading), OSError when
    it cannot be read."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{size:,} bytes, more than the {MAX_FILE_BYTES:,} the kit reads")
    data = path.read_bytes()
    if len(data) > MAX_FILE_BYTES:  # it grew since stat
        raise ValueError(f"more than the {MAX_FILE_BYTES:,} bytes the kit reads")
    return data

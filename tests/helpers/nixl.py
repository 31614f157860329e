"""NIXL, which the multi-process reference's node processes move bytes with: the skip where it is not installed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

NIXL_INSTALL = "pip install --no-deps nixl==1.5.1 nixl-cu12==1.5.1"


def skip_without_nixl(items: list[Any], folder: str, needs: str,
                      selected: Callable[[Any], bool] = lambda item: True) -> None:
    """Mark the ``selected`` tests under ``folder`` skipped, with the reason, when NIXL does not import
    (``needs``: what needs it)."""
    from reference_impl.multiprocess import nixl_available

    why = nixl_available()
    if why is None:
        return
    mark = pytest.mark.skip(reason=f"NIXL is not installed ({NIXL_INSTALL}); {needs} ({why})")
    for item in items:
        if str(item.fspath).startswith(folder) and selected(item):
            item.add_marker(mark)

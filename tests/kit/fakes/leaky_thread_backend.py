"""Fake backend that leaves a non-daemon thread running: each cluster it opens starts one that never ends.

A process whose non-daemon threads are alive does not exit by itself; the certify program must still end
after writing its reports."""

from __future__ import annotations

import atexit
import os
import threading
from pathlib import Path

from _proxy import ProxyBackend

_NEVER = threading.Event()


@atexit.register
def _ended() -> None:
    """What a backend closes at exit (the node host's SSH gateways): the process must still run it."""
    mark = os.environ.get("LEAKY_EXIT_MARK")
    if mark:
        Path(mark).write_text("exit functions ran", encoding="utf-8")


class LeakyBackend(ProxyBackend):
    def open_cluster(self, node_specs):  # noqa: ANN001, ANN201
        threading.Thread(target=_NEVER.wait, name="leaked-by-fake-backend", daemon=False).start()
        return super().open_cluster(node_specs)


backend = LeakyBackend("fake-leaky-thread")

"""The push being made and judged, as a value: which node calls push_cache on which node, from which cache into
which, with which arguments.

A testbed holds many nodes and caches (a history's cluster has any number); what one judgement reads as "the
source", "the destination" and "the call" is this record, handed to the call builder, the pusher, the
observation and the judge.  Nothing aims a push by re-pointing a testbed's fields, so a judgement can never read
the caches of another push made beside it (several threads at once), and a push can be judged after others.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..spec.model import Operation
    from ..testbed.testbed import CacheInfo, Call

@dataclass(frozen=True)
class Push:
    """One transfer: ``local`` (named ``local_name`` in the script) calls ``operation`` (push_cache, push_blocks,
    ...: the spec's api) from ``src`` into ``dst`` on ``remote`` (named ``remote_name``), with ``call``'s
    arguments.  ``dst`` is None where the key names a cache the testbed does not hold (an id the server never
    had); ``call`` is None until the arguments are built.  ``kind``: the spec's ``operation`` section the
    transfer is (its direction, key, entries: what the oracle plans and the run counts it by); None: the run's
    spec's.  A history's pull carries it, so that a transfer is judged as what it is whatever run it is in."""

    local_name: str
    remote_name: str
    local: Any
    remote: Any
    src: CacheInfo | None
    dst: CacheInfo | None
    operation: str
    call: Call | None = None
    kind: Operation | None = None

    def with_call(self, call: Call) -> Push:
        """The same push with the arguments ``call``."""
        return replace(self, call=call)

    def operation_or(self, run_operation: Operation) -> Operation:
        """The operation this transfer is: its own ``kind``, else ``run_operation`` (the run's spec's)."""
        return self.kind if self.kind is not None else run_operation

    @property
    def code(self) -> str:
        """The call as the script writes it ('-' before it has arguments)."""
        return self.call.code if self.call is not None else "-"

    def describe(self) -> str:
        src = self.src.name if self.src is not None else "-"
        dst = self.dst.name if self.dst is not None else "-"
        return f"{self.local_name}:{src} -> {self.remote_name}:{dst}"

"""Fake backend: a push made while another is in flight is refused with an LLMException, writing nothing (the
concurrent clause, may, allows it); every push alone lands exactly. A correct backend as far as the history clause
goes: a refused concurrent push must not be blamed on the push beside it that returned."""

from __future__ import annotations

import threading
import time

from _proxy import ProxyCacheManager, backend_with

from reference_impl.status import LLMException, LLMStatusCode

_GUARD = threading.Lock()
_IN_FLIGHT = [0]
#: how long a thread's first push holds its place: long enough for a thread released with it to find it busy
HOLD_S = 0.05
#: whether this thread has pushed before
_SEEN = threading.local()


class RefusesWhileBusyCacheManager(ProxyCacheManager):
    def push_cache(self, *args, **kwargs):  # noqa: ANN002, ANN003
        with _GUARD:
            if _IN_FLIGHT[0]:
                raise LLMException("busy: another push is in flight", status_code=LLMStatusCode.LLM_LINK_BUSY)
            _IN_FLIGHT[0] += 1
        try:
            result = self._inner.push_cache(*args, **kwargs)
            # a concurrent step makes each of its pushes from a thread of its own, started for it; the sequential
            # pushes (a thousand in a history run) come from threads the kit keeps and reuses, and holding each of
            # them cost most of a minute without ever meeting a neighbour
            if not getattr(_SEEN, "pushed", False):
                _SEEN.pushed = True
                time.sleep(HOLD_S)
            return result
        finally:
            with _GUARD:
                _IN_FLIGHT[0] -= 1


backend = backend_with("fake-refuses-while-busy", RefusesWhileBusyCacheManager)

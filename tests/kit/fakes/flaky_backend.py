"""Fake backends whose push_cache fails by the count of calls, not by what it is asked: the count is one for the whole
process it runs in (the kit's, with --isolation off), so a test that makes one push fails or passes by when it runs.

- ``backend`` (fake-flaky): every other call raises (the 2nd, 4th, ...; the 1st is the kit's smoke check, which
  passes): a test that makes one push fails, and passes when it runs again;
- ``broken`` (fake-broken): every call after the first raises: a test that makes a push fails however often it runs;
- ``once`` (fake-fails-once): only the 2nd call raises: the first example of a hypothesis stream fails, and passes
  when hypothesis runs it again.

Each failing call raises before it pushes anything, as a dropped transfer would.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from _proxy import ProxyCacheManager, backend_with

_calls = itertools.count(1)
_lock = threading.Lock()


def _next_call() -> int:
    with _lock:
        return next(_calls)


def _failing(name: str, fails: Callable[[int], bool]) -> type[ProxyCacheManager]:
    class FailingCacheManager(ProxyCacheManager):
        def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # noqa: ANN001
                       dst_layer_range=None, size=-1, tensor_num_per_layer=2):
            n = _next_call()
            if fails(n):
                raise RuntimeError(f"{name}: push_cache call {n} of this process dropped")
            return super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range,
                                      size, tensor_num_per_layer)

    FailingCacheManager.__name__ = FailingCacheManager.__qualname__ = f"{name.title().replace('-', '')}CacheManager"
    return FailingCacheManager


backend = backend_with("fake-flaky", _failing("fake-flaky", lambda n: n % 2 == 0))
broken = backend_with("fake-broken", _failing("fake-broken", lambda n: n > 1))
once = backend_with("fake-fails-once", _failing("fake-fails-once", lambda n: n == 2))

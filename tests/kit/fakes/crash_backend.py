"""Fake backends whose push_cache kills or wedges its process when asked for source batch 1.

Batch 0 (what the smoke check pushes) works, so the run starts and only the tests that push from batch 1
meet the defect.  Each variant writes a line to stderr first, which the error row must quote.

* ``segfault``: dereferences address 0 (SIGSEGV);
* ``exit3``: ``os._exit(3)``, the status the kit once used for "adapter error";
* ``gil_hang``: sleeps in C through ``ctypes.PyDLL``, which keeps the GIL: no Python thread of the process
  runs again, so no signal handler, timeout thread or Ctrl-C inside the process can end it;
* ``orphan_segfault``: first starts a daemon (fork, ``setsid()``, fork again) that keeps every file descriptor of
  the process, the kit's pipe included, and sleeps; writes its pid to ``$ORPHAN_PID_FILE``; then segfaults.
"""

from __future__ import annotations

import ctypes
import os
import sys

from _proxy import ProxyCacheManager, backend_with


def _segfault() -> None:
    ctypes.string_at(0)


def _exit3() -> None:
    os._exit(3)


def _gil_hang() -> None:
    ctypes.PyDLL(None).sleep(3600)


def _orphan_then_segfault() -> None:
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            with open(os.environ["ORPHAN_PID_FILE"], "w") as f:
                f.write(str(os.getpid()))
            import time

            time.sleep(3600)  # holding the pipe the kit reads, and the output file
        os._exit(0)
    os.waitpid(first, 0)
    for _ in range(200):  # the daemon has written its pid
        if os.path.exists(os.environ["ORPHAN_PID_FILE"]) and open(os.environ["ORPHAN_PID_FILE"]).read():
            break
        import time

        time.sleep(0.01)
    _segfault()


def _crashing(kind: str, action: object) -> type:
    class CrashingCacheManager(ProxyCacheManager):
        def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # noqa: ANN001
                       dst_layer_range=None, size=-1, tensor_num_per_layer=2):
            if type(src_batch_index) is int and src_batch_index == 1:
                print(f"fake-{kind}: push_cache from batch 1, going down now", file=sys.stderr, flush=True)
                action()  # type: ignore[operator]
            return super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range,
                                      dst_layer_range, size, tensor_num_per_layer)

    CrashingCacheManager.__name__ = f"{kind.title().replace('_', '')}CacheManager"
    return CrashingCacheManager


segfault = backend_with("fake-segfault", _crashing("segfault", _segfault))
exit3 = backend_with("fake-exit3", _crashing("exit3", _exit3))
gil_hang = backend_with("fake-gil-hang", _crashing("gil_hang", _gil_hang))
orphan_segfault = backend_with("fake-orphan-segfault", _crashing("orphan_segfault", _orphan_then_segfault))

"""A "backend" that only describes the process it is imported in (``--backend tests.mutants.zygote_probe:Probe``):
certify instantiates it as it starts, before any test; it writes what it sees to ``$ZYGOTE_PROBE`` as JSON, says a
line on stdout and on stderr, and fails (certify then ends with a usage error). tests/mutants/test_zygote.py
compares what a certify process forked by the zygote sees with what a fresh ``python -m conformance_tests`` sees."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading


def _disposition(signum: int) -> str:
    handler = signal.getsignal(signum)
    return getattr(handler, "__qualname__", None) or str(handler)


class Probe:
    def __init__(self) -> None:
        main = sys.modules["__main__"]
        seen = {
            "argv": sys.argv,
            "hash": hash("mutants.zygote"),
            "hash_randomization": sys.flags.hash_randomization,
            "cwd": os.getcwd(),
            "mark": os.environ.get("ZYGOTE_PROBE_MARK"),
            "environ": sorted(os.environ),
            "own_group": os.getpgrp() == os.getpid(),
            "main": [main.__name__, getattr(main, "__file__", None), getattr(main.__spec__, "name", None)],
            "signals": {s.name: _disposition(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP,
                                                          signal.SIGPIPE, signal.SIGCHLD)},
            "python_threads": threading.active_count(),
            "wakeup_fd": signal.set_wakeup_fd(-1),
        }
        with open(os.environ["ZYGOTE_PROBE"], "w", encoding="utf-8") as fh:
            json.dump(seen, fh)
        print("probe says on stdout", flush=True)
        print("probe says on stderr", file=sys.stderr, flush=True)
        raise RuntimeError("a probe, not a backend")

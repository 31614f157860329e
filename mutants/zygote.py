"""The zygote of a mutants run: certify processes forked from one that has already imported what each needs.

A ``python -m conformance_tests certify`` process spends most of a mutant's focus run starting: importing pytest,
hypothesis, numpy and the kit, then loading and validating the spec and the schemas (about 2 s of 3). The zygote
(``python -m mutants.zygote``, one per ``python -m mutants.run``) pays that once: it imports the kit's command line
and plugin, and fills the caches a certify process fills once (the packaged specs, keyed by their files' stamps, so
an edited spec is loaded afresh; the spec and report schemas, read once per process as ever). Then it reads requests
from stdin, one JSON object a line, and answers on stdout, one JSON object a line; only data crosses the pipe::

    request: {"id": N, "argv": [...], "env": {...}, "cwd": "...", "stdout": "<file>", "stderr": "<file>"}
    answers: {"id": N, "pid": PID}       a child is running the request (in a process group of its own)
             {"id": N, "error": "..."}    no child: the run certifies this one in a fresh process instead
             {"pid": PID, "exit": CODE}   the child ended (CODE as subprocess's returncode: -N for signal N)
    at start: {"ready": true, "pid": PID} or {"ready": false, "error": "..."} (then it exits)

Each child is ``python -m conformance_tests certify ...`` as the subprocess would be: argv (``sys.argv`` as ``-m``
sets it), the environment and the working directory as requested, stdin from /dev/null, stdout and stderr into the
given files, the signal dispositions a fresh interpreter has, its own process group, ``conformance_tests``'s
``__main__`` run by runpy as ``-m`` runs it, then what the interpreter does at exit (non-daemon threads joined,
exit functions run, stdout and stderr flushed) and ``os._exit``. The hash seed is fixed when an interpreter starts:
the zygote is started with the children's PYTHONHASHSEED, and refuses a request for another one.

Fork safety: the zygote is single-threaded; at start it checks that no Python thread runs (``threading``) and says
how many OS threads do. numpy's OpenBLAS starts a thread pool when it loads, and shuts it down itself before each
fork (its ``pthread_atfork`` handler: the zygote is down to one thread when it forks, and a child starts its pool
afresh on its first BLAS call). What differs from a fresh process is only that the preloaded modules are not
assertion-rewritten by pytest (pytest rewrites its plugins' modules as it imports them: the kit's plugin has no
``assert``; hypothesis's are internal invariants), and the process's random state, which the child reseeds
(``random`` reseeds itself after a fork; numpy's global generator is reseeded here), and that what the zygote
made before the fork is frozen out of the cycle collector's sight (``gc.freeze``, as Python's documentation advises
before a fork): a child's collections see only what the child made.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import select
import signal
import sys
import threading
import time
import traceback
from typing import Any

#: the modules every certify process imports (the kit's command line and plugin, and with them pytest,
#: hypothesis, numpy, jsonschema, yaml), the reference backend the mutants wrap, and the catalog they are in
PRELOAD = ("conformance_tests.cli.invocation", "conformance_tests.cli.usage_parser", "conformance_tests.cli.family_run",
           "conformance_tests.plugin",
           "pytest", "hypothesis", "numpy", "reference_impl.backend", "mutants.catalog")
#: the module a request's argv runs (``python -m conformance_tests ...``): the only program the zygote starts
PROGRAM = "conformance_tests"
#: how long the children may take to end after SIGTERM when the run is gone (stdin closed) before they are killed
STOP_GRACE_S = 2.0
#: the signals whose disposition a child gets back as a fresh interpreter has it (the zygote changes two)
RESTORED = (signal.SIGINT, signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE)


def warm() -> None:
    """Import what every certify process imports and fill the caches it fills once."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    from conformance_tests.report.htmlpage import environment
    from conformance_tests.report.schema import ReportError, validate_report
    from conformance_tests.spec import load_spec, operation_spec_path, specified_operations

    load_spec()  # the default (push_cache) spec, by its default path
    for api in specified_operations():
        load_spec(operation_spec_path(api))
    with contextlib.suppress(ReportError):  # the report schema's validator, checked once
        validate_report({})
    environment().get_template("report.html.j2")  # compiled once (jinja checks the file's stamp on each use)


def os_threads() -> int:
    """The OS threads of this process (1 where /proc does not say)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def exit_code(status: int) -> int:
    """A wait status as subprocess reports it: the exit status, or -N for signal N."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


class Zygote:
    """The request loop: one thread, a child forked per request, every child reaped and its end reported."""

    def __init__(self) -> None:
        self.dispositions = {s: signal.getsignal(s) for s in RESTORED}
        self.hash_seed = os.environ.get("PYTHONHASHSEED")
        self.live: dict[int, int] = {}  # pid -> request id
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)

    def say(self, **answer: Any) -> None:
        data = (json.dumps(answer) + "\n").encode()
        with contextlib.suppress(OSError):  # the run is gone: nobody to tell
            while data:
                data = data[os.write(1, data):]

    def serve(self) -> int:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run ends the zygote: a terminal's Ctrl-C is the run's
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # the wakeup fd wakes select when a child ends
        pending = b""
        while True:
            ready, _, _ = select.select([0, self.wake_r], [], [])
            if self.wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    while os.read(self.wake_r, 512):
                        pass
            self.reap()
            if 0 in ready:
                chunk = os.read(0, 65536)
                if not chunk:  # the run is gone, or done: no child outlives it
                    self.end_children()
                    return 0
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    if raw.strip():
                        self.start(json.loads(raw))

    def reap(self) -> None:
        while self.live:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.live.pop(pid, None)
            self.say(pid=pid, exit=exit_code(status))

    def refusal(self, request: dict[str, Any]) -> str | None:
        argv = request.get("argv") or []
        if list(argv[:3]) != [sys.executable, "-m", PROGRAM]:
            return f"the zygote runs `{sys.executable} -m {PROGRAM} ...` only, not {argv[:3]}"
        seed = (request.get("env") or {}).get("PYTHONHASHSEED")
        if seed != self.hash_seed:
            return f"PYTHONHASHSEED={seed}: the zygote was started with {self.hash_seed} (fixed at start)"
        return None

    def start(self, request: dict[str, Any]) -> None:
        why = self.refusal(request)
        if why is not None:
            self.say(id=request.get("id"), error=why)
            return
        sys.stdout.flush()  # nothing buffered is written twice
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self.child(request)  # never returns
        with contextlib.suppress(OSError):  # as the child does: its group exists before the run can signal it
            os.setpgid(pid, pid)
        self.live[pid] = request["id"]
        self.say(id=request["id"], pid=pid)

    def child(self, request: dict[str, Any]) -> None:
        code = 1
        try:
            os.setpgid(0, 0)
            signal.set_wakeup_fd(-1)
            for signum, disposition in self.dispositions.items():
                signal.signal(signum, disposition)
            os.close(self.wake_r)
            os.close(self.wake_w)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
            for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
                out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(out, fd)
                os.close(out)
            os.chdir(request.get("cwd") or os.getcwd())
            os.environ.clear()
            os.environ.update(request["env"])
            if "numpy.random" in sys.modules:  # a fresh process seeds numpy's global generator afresh
                sys.modules["numpy.random"].seed()
            code = run_program(request["argv"][3:])
        except BaseException:  # noqa: BLE001 - the child ends here whatever happened
            with contextlib.suppress(BaseException):
                traceback.print_exc()
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def end_children(self) -> None:
        """SIGTERM to each live child's group, SIGKILL to what is left after the grace, every child reaped."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            for pid in list(self.live):
                with contextlib.suppress(OSError):
                    os.killpg(pid, signum)
            deadline = time.monotonic() + (STOP_GRACE_S if signum == signal.SIGTERM else 60.0)
            while self.live and time.monotonic() < deadline:
                self.reap()
                time.sleep(0.05)


def run_program(args: list[str]) -> int:
    """``python -m conformance_tests *args`` in this process, to the exit status the interpreter would give."""
    import runpy

    sys.argv = ["-m", *args]  # runpy puts the module's path first, as -m does
    try:
        try:
            runpy.run_module(PROGRAM, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = system_exit_code(exc)
        except KeyboardInterrupt:
            traceback.print_exc()
            code = -signal.SIGINT
        except BaseException:  # noqa: BLE001 - as the interpreter: the traceback, exit status 1
            traceback.print_exc()
            code = 1
        shutdown = getattr(threading, "_shutdown", None)  # the interpreter's exit: non-daemon threads first
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
    if code == -signal.SIGINT:  # as the interpreter ends on an uncaught KeyboardInterrupt: by SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def system_exit_code(exc: SystemExit) -> int:
    """The exit status the interpreter gives for ``exc`` (its code; a message is printed, status 1)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    with contextlib.suppress(BaseException):
        print(exc.code, file=sys.stderr)
    return 1


def main() -> int:
    zygote = Zygote()
    try:
        warm()
    except Exception as exc:  # noqa: BLE001 - the run certifies in fresh processes instead
        zygote.say(ready=False, error=f"warming failed: {type(exc).__name__}: {exc}")
        return 1
    if threading.active_count() != 1:
        zygote.say(ready=False, error=f"threads started while warming: {[t.name for t in threading.enumerate()]}")
        return 1
    # what is here now lives as long as the process: out of the collector's sight, a child's collections (pytest
    # collects five times as a session ends) neither walk it nor copy its pages (half a focus run's time)
    gc.freeze()
    zygote.say(ready=True, pid=os.getpid(), os_threads=os_threads())
    return zygote.serve()


if __name__ == "__main__":
    sys.exit(main())

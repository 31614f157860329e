"""The call log of one test: every backend call is made through it once, and the reproduction is its text.

A step is either ``let`` (a Python expression evaluated in the log's namespace, e.g. the random source data)
or ``invoke`` (a call on a backend object, rendered from the arguments' own source text).  Either way the
line in the log is produced from what was executed, so the reproduction cannot drift from the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..backend import call_each
from ..inputs.values import Value
from ..resolution import is_file_target, split_target


def lit(obj: Any) -> Value:
    """A literal argument: its repr is its source text."""
    return Value(obj, repr(obj))


class Recorder:
    """Executes and logs the steps of one test against a backend."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {"np": np}
        self.verdict: list[str] = []  # the expectation's own check, rendered after the call under test

    def bind(self, name: str, obj: Any) -> Value:
        """Make ``obj`` known as ``name`` (no line: the caller's own step binds it)."""
        self.ns[name] = obj
        return Value(obj, name)

    def let(self, name: str, code: str) -> Value:
        """Evaluate ``code`` in the log's namespace and bind the result to ``name``."""
        obj = eval(code, self.ns)  # noqa: S307 - code the suite itself composed from spec data
        self.lines.append(f"{name} = {code}")
        return self.bind(name, obj)

    def comment(self, text: str) -> None:
        self.lines.append(f"# {text}")

    def invoke(self, bind: str | None, target: Value, path: str, *args: Value, **kwargs: Value) -> Any:
        """Call ``target.<path>(*args, **kwargs)``, log it once, bind the result; exceptions propagate."""
        fn: Any = target.obj
        for part in path.split("."):
            fn = getattr(fn, part)
        code = f"{target.code}.{path}({self._args_code(args, kwargs)})"
        self.lines.append(f"{bind} = {code}" if bind else code)
        result = fn(*[a.obj for a in args], **{k: v.obj for k, v in kwargs.items()})
        if bind:
            self.bind(bind, result)
        return result

    def loop(self, items: str, var: str, target: Value, path: str, args: Callable[[int], Sequence[Value]],
             count: int) -> None:
        """``for var in range(count): target.path(*args(var))`` — one line for a per-tensor step."""
        sample = args(0) if count else ()
        template = ", ".join(a.code for a in sample)
        self.lines.append(f"for {var} in {items}: {target.code}.{path}({template})")
        owner: Any = target.obj
        *parents, method = path.split(".")
        for part in parents:
            owner = getattr(owner, part)
        call_each(owner, method, [[a.obj for a in args(i)] for i in range(count)])

    @staticmethod
    def _args_code(args: Sequence[Value], kwargs: dict[str, Value]) -> str:
        return ", ".join([a.code for a in args] + [f"{k}={v.code}" for k, v in kwargs.items()])

    # ------------------------------------------------------------------------------------------- rendering

    def render(self, backend_spec: str, header: str) -> str:
        """A standalone script: import the backend, replay the log, check the verdict, close the cluster."""
        module, attr = split_target(backend_spec)
        body = [line for line in self.lines if not line.startswith("cluster = ")]
        opening = [line for line in self.lines if line.startswith("cluster = ")]
        if is_file_target(module):  # a backend file: loaded by its path, its folder on the path
            folder = str(Path(module).parent)
            load = ["import importlib.util", "import sys", "", "import numpy as np", "",
                    f"sys.path.insert(0, {folder!r})",
                    f"_spec = importlib.util.spec_from_file_location('push_cache_backend', {module!r})",
                    "_module = importlib.util.module_from_spec(_spec)",
                    "_spec.loader.exec_module(_module)",
                    f"backend = getattr(_module, {attr!r})"]
        else:
            load = ["import importlib", "", "import numpy as np", "",
                    f"backend = getattr(importlib.import_module({module!r}), {attr!r})"]
        out = [
            f'"""{header or "push_cache reproduction"}"""',
            *load,
            "if isinstance(backend, type):",
            "    backend = backend()",
            *opening,
            "try:",
            *["    " + line for line in body + self.verdict],
        ]
        if len(out) and out[-1] == "try:":
            out.append("    pass")
        out += ["finally:", "    cluster.close()" if opening else "    pass"]
        return "\n".join(out) + "\n"

"""The exception that means "the scenario could not be built or observed" (an error row, never a verdict), and
how an exception is told in one line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class HarnessError(Exception):
    """The scenario could not be built (the backend failed before or after the call under test)."""

    def __init__(self, step: str, detail: str) -> None:
        self.step = step
        super().__init__(f"{step} failed: {detail}")


def describe_exception(exc: BaseException) -> str:
    """``exc`` in one line: its type, the first line of its text (at most 200 characters) and its status code."""
    status = getattr(exc, "status_code", None)
    text = str(exc).splitlines()[0] if str(exc) else ""
    if len(text) > 200:
        text = text[:200] + "…"
    extra = f" status_code={status}" if status is not None else ""
    return f"{type(exc).__name__}({text!r}){extra}"


def step(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, a failure of it the HarnessError of backend step ``name``."""
    try:
        return fn(*args, **kwargs)
    except HarnessError:
        raise
    except Exception as exc:
        raise HarnessError(name, describe_exception(exc)) from exc

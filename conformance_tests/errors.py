"""The exception that means "the scenario could not be built or observed": an error row, never a verdict."""

from __future__ import annotations


class HarnessError(Exception):
    """The scenario could not be built (the backend failed before or after the call under test)."""

    def __init__(self, step: str, detail: str) -> None:
        self.step = step
        super().__init__(f"{step} failed: {detail}")

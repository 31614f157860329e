"""The transfer family's siblings across processes: not built yet, so refused the way the vendor refuses a feature
its configuration lacks (LLM_FEATURE_NOT_ENABLED); the in-process reference implements them."""

from __future__ import annotations

from typing import Any

from ..status import LLMException, LLMStatusCode


def _not_enabled(operation: str) -> LLMException:
    return LLMException(f"{operation} is not supported by the multi-process reference yet (the in-process "
                        "reference implements it)", status_code=LLMStatusCode.LLM_FEATURE_NOT_ENABLED)


class SiblingsRefused:
    """push_blocks, pull_cache and pull_blocks of a node process: each raises before looking at its arguments."""

    def push_blocks(self, *args: Any, **kwargs: Any) -> None:
        raise _not_enabled("push_blocks")

    def pull_cache(self, *args: Any, **kwargs: Any) -> None:
        raise _not_enabled("pull_cache")

    def pull_blocks(self, *args: Any, **kwargs: Any) -> None:
        raise _not_enabled("pull_blocks")

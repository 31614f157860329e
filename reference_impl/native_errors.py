"""How a failed native step reaches Python: ``handle_llm_status``'s LLMException, logged (facts §1.2)."""

from __future__ import annotations

from typing import Any

from .status import LLMException, LLMStatusCode, log


class NativeErrors:
    """``_native_error``: one place for the message shape every transfer's native failures share."""

    def _native_error(self, a: Any, status: LLMStatusCode, detail: str) -> LLMException:
        msg = f"[{a.operation}] failed, error code is {status}, {a.error_key}. {detail}"
        log.error(msg)
        return LLMException(msg, status_code=status)

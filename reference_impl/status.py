"""Status codes and the exception that carries them (mirrors ``llm_datadist.status``)."""

from __future__ import annotations

import logging
from enum import IntEnum
from typing import Any

log = logging.getLogger("reference_impl")
log.addHandler(logging.NullHandler())

_BASE = 0x5010B000


class LLMStatusCode(IntEnum):
    """Status codes; numeric values equal the native ``ge::Status`` values."""

    LLM_SUCCESS = 0
    LLM_FAILED = 0xFFFFFFFF
    LLM_WAIT_PROCESS_TIMEOUT = _BASE + 0x01
    LLM_KV_CACHE_NOT_EXIST = _BASE + 0x02
    LLM_REPEAT_REQUEST = _BASE + 0x03
    LLM_REQUEST_ALREADY_COMPLETED = _BASE + 0x04
    LLM_PARAM_INVALID = _BASE + 0x05
    LLM_ENGINE_FINALIZED = _BASE + 0x06
    LLM_NOT_YET_LINK = _BASE + 0x07
    LLM_ALREADY_LINK = _BASE + 0x08
    LLM_LINK_FAILED = _BASE + 0x09
    LLM_UNLINK_FAILED = _BASE + 0x0A
    LLM_NOTIFY_PROMPT_UNLINK_FAILED = _BASE + 0x0B
    LLM_CLUSTER_NUM_EXCEED_LIMIT = _BASE + 0x0C
    LLM_PROCESSING_LINK = _BASE + 0x0D
    LLM_DEVICE_OUT_OF_MEMORY = _BASE + 0x0E
    LLM_PREFIX_ALREADY_EXIST = _BASE + 0x0F
    LLM_PREFIX_NOT_EXIST = _BASE + 0x10
    LLM_SEQ_LENOVERLIMIT = _BASE + 0x11
    LLM_NO_FREE_BLOCK = _BASE + 0x12
    LLM_BLOCKS_OUT_OF_MEMORY = _BASE + 0x13
    LLM_EXIST_LINK = _BASE + 0x18
    LLM_FEATURE_NOT_ENABLED = _BASE + 0x19
    LLM_TIMEOUT = _BASE + 0x1A
    LLM_LINK_BUSY = _BASE + 0x1B
    LLM_OUT_OF_MEMORY = _BASE + 0x1C
    LLM_DEVICE_MEM_ERROR = 507053
    LLM_SUSPECT_REMOTE_ERROR = 507057
    LLM_UNKNOWN_ERROR = -1

    def __str__(self) -> str:
        return f"LLMStatusCode.{self.name}"


class LLMException(RuntimeError):
    """Error raised by the API; ``status_code`` tells which status the engine reported."""

    def __init__(self, *args: Any, status_code: LLMStatusCode = LLMStatusCode.LLM_SUCCESS) -> None:
        super().__init__(*args)
        self._status_code = status_code

    @property
    def status_code(self) -> LLMStatusCode:
        return self._status_code


def code_2_status(code: int) -> LLMStatusCode:
    """Map a raw native code to a status; unknown codes become LLM_FAILED."""
    try:
        return LLMStatusCode(code)
    except ValueError:
        return LLMStatusCode.LLM_FAILED


def raise_if_false(pred: bool, fmt: str, *args: Any,
                   status_code: LLMStatusCode = LLMStatusCode.LLM_PARAM_INVALID) -> None:
    if not pred:
        msg = fmt.format(*args)
        log.error(msg)
        raise LLMException(msg, status_code=status_code)


def raise_if_true(pred: bool, fmt: str, *args: Any,
                  status_code: LLMStatusCode = LLMStatusCode.LLM_PARAM_INVALID) -> None:
    raise_if_false(not pred, fmt, *args, status_code=status_code)


def fail(status_code: LLMStatusCode, msg: str) -> LLMException:
    """Build (not raise) an exception carrying ``status_code``."""
    return LLMException(msg, status_code=status_code)

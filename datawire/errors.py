"""Exceptions on the wire: an exception crosses as a record (kind, status code, message, traceback text) and the
receiving end rebuilds it with its own classes; nothing of the raiser's class travels.

The kind is one of :data:`datawire.vocabulary.KINDS`: the API's ``LLMException`` (its ``status_code`` crosses as
the member's name and value), else the nearest builtin class in the exception's MRO.  A kind that is not an
``Exception`` (``KeyboardInterrupt``, ``SystemExit``) comes back as :class:`RemoteInterrupt`, an ordinary
exception: whatever another process raised, it fails one call and never interrupts the receiver.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any

from .vocabulary import BUILTIN_CLASSES, LLM_EXCEPTION

#: the characters of a message and of a traceback a record keeps
MESSAGE_CHARS = 8000
TRACEBACK_CHARS = 20000


class RemoteInterrupt(Exception):
    """Another process raised KeyboardInterrupt, SystemExit or another BaseException that is not an Exception."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind} raised in another process" + (f": {message}" if message else ""))
        self.kind = kind


@dataclass(frozen=True)
class ErrorRecord:
    kind: str
    message: str
    traceback: str = ""
    type_name: str = ""  # the raiser's class, for people only
    status_name: str | None = None
    status_value: int | None = None

    def as_list(self) -> list[Any]:
        return [self.kind, self.message, self.traceback, self.type_name, self.status_name, self.status_value]

    @classmethod
    def from_list(cls, items: Any) -> ErrorRecord:
        if not isinstance(items, list) or len(items) != 6:
            raise ValueError("an error record is a list of six fields")
        kind, message, tb, type_name, status_name, status_value = items
        from .vocabulary import KINDS

        if kind not in KINDS:
            raise ValueError(f"exception kind {kind!r} is not one of the wire's kinds")
        for name, value, types in (("message", message, str), ("traceback", tb, str), ("type name", type_name, str),
                                   ("status name", status_name, (str, type(None))),
                                   ("status value", status_value, (int, type(None)))):
            if not isinstance(value, types) or isinstance(value, bool):
                raise ValueError(f"an error record's {name} is a {type(value).__name__}")
        return cls(kind, message, tb, type_name, status_name, status_value)


def _text(fn: Any, limit: int) -> str:
    try:
        text = str(fn())
    except Exception as exc:  # noqa: BLE001 - a message that cannot be made is reported as such
        text = f"<cannot be shown: {type(exc).__name__}>"
    return text if len(text) <= limit else text[:limit] + "…"


def _kind(exc: BaseException) -> str:
    mro = type(exc).__mro__
    if any(c.__name__ == LLM_EXCEPTION for c in mro):
        return LLM_EXCEPTION
    for c in mro:
        if BUILTIN_CLASSES.get(c.__name__) is c:
            return c.__name__
    return "BaseException"


def record_of(exc: BaseException) -> ErrorRecord:
    """The record an exception crosses as (in the raiser's process)."""
    kind = _kind(exc)
    status_name: str | None = None
    status_value: int | None = None
    if kind == LLM_EXCEPTION:
        try:
            status = getattr(exc, "status_code", None)
            name = getattr(status, "name", None)
            status_name = name if isinstance(name, str) else None
            value = getattr(status, "value", status)
            status_value = int(value) if isinstance(value, int) else None
        except Exception:  # noqa: BLE001 - a status that cannot be read crosses as none
            status_name, status_value = None, None
    return ErrorRecord(
        kind=kind,
        message=_text(lambda: exc, MESSAGE_CHARS),
        traceback=_text(lambda: "".join(traceback.format_exception(exc)), TRACEBACK_CHARS),
        type_name=_text(lambda: f"{type(exc).__module__}.{type(exc).__qualname__}", 300),
        status_name=status_name, status_value=status_value,
    )


def rebuild(record: ErrorRecord, llm_exception: Any = None, status_enum: Any = None,
            where: str = "another process") -> BaseException:
    """The exception a record stands for, made of the receiver's classes: ``llm_exception(message,
    status_code=member)`` for the API's exception (its member looked up by name, then by value, in
    ``status_enum``), else the builtin of that kind."""
    exc: BaseException
    if record.kind == LLM_EXCEPTION and llm_exception is not None:
        status: Any = record.status_value
        if status_enum is not None:
            member = getattr(status_enum, "__members__", {}).get(record.status_name or "")
            if member is None and record.status_value is not None:
                try:
                    member = status_enum(record.status_value)
                except (ValueError, TypeError):
                    member = None
            status = member if member is not None else status
        exc = llm_exception(record.message, status_code=status)
    elif record.kind == LLM_EXCEPTION:
        exc = RuntimeError(f"LLMException (status {record.status_name or record.status_value}): {record.message}")
    else:
        cls = BUILTIN_CLASSES[record.kind]
        exc = cls(record.message) if issubclass(cls, Exception) else RemoteInterrupt(record.kind, record.message)
    where_as = f"{where} as {record.type_name}" if record.type_name else where
    exc.add_note(f"(raised in {where_as}; its traceback follows)\n{record.traceback}".rstrip())
    return exc

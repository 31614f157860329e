"""What crosses the pipe between the kit and the backend's process: frames of the project's one wire
(:mod:`datawire`), data only.

A request (kit to backend) is a frame of one codec message: ``[rid, op, handle, name, args, kwargs, released,
threaded]``. A reply (backend to kit) is a frame of two sections, a plain header ``[rid, status, kind]`` and a codec
message (the payload), so the kit always learns which request a reply answers, even when the payload is not data
(that request then fails as an error row, and nothing of it becomes an object in the kit). The first frame is
``[0, "ready"]`` and a payload (the backend's name, version, target and capabilities), or ``[0, "error", text]``.

Plain data crosses by value; members of the API's enums cross by name (each end has its own classes:
:mod:`conformance_tests.isolation.api`); an exception crosses as a record (kind, status code, message,
traceback); every other object stays in the backend's process, and the kit gets a handle ``[number, type name]``
(a handle sent back, ``[number]``, is that very object again).
"""

from __future__ import annotations

from typing import Any

from datawire import WireError, decode_plain, encode_plain

#: a reply's status
OK, RAISE = "ok", "raise"
#: what an ``ok`` reply's payload is: a value, a method of the object's class, or a node's API described
VALUE, METHOD, API = "value", "method", "api"
#: requests (``op``)
OPS = ("getattr", "call", "each", "api", "stop")


def reply_frame(rid: int, status: str, kind: str, payload: Any) -> tuple[Any, ...]:
    """A reply's sections: its plain header, then its payload (a codec message's buffers)."""
    return encode_plain([rid, status, kind]), payload


def read_reply(sections: list[memoryview]) -> tuple[int, str, str, memoryview]:
    """A reply's header and payload; :class:`~datawire.WireError` when the frame is not one (the process then broke
    the protocol, and cannot be trusted with another request)."""
    got: Any = decode_plain(sections[0]) if len(sections) == 2 else None
    if not (isinstance(got, list) and len(got) == 3 and type(got[0]) is int and got[1] in (OK, RAISE)
            and got[2] in (VALUE, METHOD, API)):
        raise WireError("a reply that is not [request id, status, kind] and a payload")
    return got[0], got[1], got[2], sections[1]


def read_first(sections: list[memoryview]) -> tuple[str, Any]:
    """The first frame: ``("ready", payload)`` or ``("error", text)``."""
    got: Any = decode_plain(sections[0])
    if isinstance(got, list) and len(got) == 2 and got[0] == 0 and got[1] == "ready" and len(sections) == 2:
        return "ready", sections[1]
    if (isinstance(got, list) and len(got) == 3 and got[0] == 0 and got[1] == "error" and isinstance(got[2], str)
            and len(sections) == 1):
        return "error", got[2]
    raise WireError("a first message that is neither ready nor error")


def first_frame(kind: str, body: Any) -> tuple[Any, ...]:
    """The first frame's sections: ``ready`` and the payload (a codec message's buffers), or ``error`` and text."""
    return (encode_plain([0, kind]), body) if kind == "ready" else (encode_plain([0, kind, body]),)

"""What crosses the pipe between the kit and the backend's process: :mod:`datawire.rpc`'s requests and replies,
data only.

A request's op is one of ``getattr``, ``call``, ``each``, ``api`` (the notice ``stop`` ends the process) and its
arguments are the codec message ``[handle, name, args, kwargs, released, threaded]``: the object it is made on,
the attribute, the call's arguments, the handles the kit let go of since its last request, and whether it comes
from a thread of the kit's other than the main one (it then runs on a thread of the backend's process too). A
``getattr`` is answered with ``[kind, value]``: a value (:data:`VALUE`) or a bound method (:data:`METHOD`:
``[name, signature, class name]``, the class name None when the object's class does not define it, as for a
method an adapter forwards through ``__getattr__``: the kit then holds it for no other object); an ``api`` with
the node's API described (the kit builds its own classes by name: :mod:`conformance_tests.isolation.api`); the
others with their value. The first message is the hello: the backend's name, version, target and capabilities,
or why it could not start.

Plain data crosses by value; members of the API's enums cross by name; an exception crosses as a record (kind,
status code, message, traceback); every other object stays in the backend's process, and the kit gets a handle
``[number, type name]`` (a handle sent back, ``[number]``, is that very object again).
"""

from __future__ import annotations

import inspect
from typing import Any

from datawire import Codec, WireError

#: what a ``getattr`` found: a value, or a bound method (called by name on the object, its signature as data)
VALUE, METHOD = "value", "method"


def request_body(codec: Codec, hid: int, name: str | None, args: Any, kwargs: Any, released: list[int],
                 threaded: bool) -> list[Any]:
    """A request's arguments, as the codec message's buffers."""
    return codec.encode_parts([hid, name, args, kwargs, released, threaded])


def read_request(codec: Codec, body: Any) -> tuple[int, str | None, Any, Any, list[int], bool]:
    """A request's arguments; :class:`~datawire.WireError` when they are not what a request carries."""
    got = codec.decode(body)
    if not (isinstance(got, list) and len(got) == 6 and type(got[0]) is int and isinstance(got[2], (list, tuple))
            and isinstance(got[3], dict) and isinstance(got[4], list) and isinstance(got[5], bool)):
        raise WireError("a request that is not [handle, name, args, kwargs, released, threaded]")
    return got[0], got[1], got[2], got[3], got[4], got[5]


def read_attribute(got: Any) -> tuple[str, Any]:
    """A ``getattr``'s answer: ``(kind, value)``."""
    if not (isinstance(got, list) and len(got) == 2 and got[0] in (VALUE, METHOD)):
        raise WireError("an attribute that is not [kind, value]")
    if got[0] == METHOD and not (isinstance(got[1], list) and len(got[1]) == 3 and isinstance(got[1][0], str)
                                 and isinstance(got[1][1], (inspect.Signature, type(None)))
                                 and isinstance(got[1][2], (str, type(None)))):
        raise WireError("a method that is not [name, signature, class name]")
    return got[0], got[1]

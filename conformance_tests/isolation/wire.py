"""What crosses the pipe between the kit and the backend's process, and how.

Messages are pickled.  Plain data (numbers, text, numpy arrays, enum members, exceptions, classes, simple
namespaces, containers of these) travels by value, so ``node.api`` and the exceptions the backend raises are
the same classes in the kit's process (imported there by name).  Every other object the backend returns — a
cluster, a node, a cache manager, a Cache — stays in the backend's process; the kit gets a handle to it, and
a handle sent back as an argument becomes the very same object again (a backend may rely on identity): both
directions name it by a persistent id, ``("handle", number)``, resolved by the receiving side's own table.
"""

from __future__ import annotations

import enum
import inspect
import io
import pickle
import types
from typing import Any

import numpy as np

#: types pickled by value (containers are walked by pickle itself, element by element)
PLAIN = (type(None), bool, int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset,
         slice, range, np.ndarray, np.generic, np.dtype, types.SimpleNamespace, pickle.PickleBuffer, memoryview,
         inspect.Signature, inspect.Parameter)


def by_value(obj: Any) -> bool:
    return isinstance(obj, PLAIN) or isinstance(obj, (enum.Enum, BaseException, type)) or (
        isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) and "<" not in obj.__qualname__)


def dumps(obj: Any, persistent_id: Any) -> bytes:
    buf = io.BytesIO()
    p = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    if persistent_id is not None:
        p.persistent_id = persistent_id  # type: ignore[method-assign]
    p.dump(obj)
    return buf.getvalue()


def loads(data: bytes, persistent_load: Any) -> Any:
    u = pickle.Unpickler(io.BytesIO(data))
    if persistent_load is not None:
        u.persistent_load = persistent_load  # type: ignore[method-assign]
    return u.load()



class RemoteError(Exception):
    """An exception raised in the backend's process whose class could not be rebuilt in the kit's."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name

"""``node.api`` across the pipe: the backend's process describes it as data, the kit builds its own by name.

The backend's process describes a node's API (:func:`describe`): each of the API's enums as its members' names and
values, ``LLMException`` as the builtin classes it derives from, and every other class the kit names
(:data:`KIT_API_NAMES`) as a handle (calling it makes the object in the backend's process).  The kit builds
``node.api`` from that (:class:`KitApis`): its own enum classes with those members and values, its own
``LLMException`` class with the same builtin base, the handles for the rest.  A member crosses by name, so the
enums a test reads from ``node.api`` and those it gets back from the backend are the same objects; exceptions the
backend raises are rebuilt with the kit's ``LLMException`` (its ``status_code`` a member of the kit's
``LLMStatusCode``).  Nothing of the backend's classes reaches the kit: a class is never imported by name.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from datawire import Opaque
from datawire.vocabulary import BUILTIN_CLASSES, ENUMS, LLM_EXCEPTION, STATUS_ENUM

from ..backend import API_NAMES

#: the names of node.api the kit builds or hands on (the tests build their arguments from API_NAMES)
KIT_API_NAMES = tuple(dict.fromkeys((*API_NAMES, "LLMRole", "LLMConfig", "LLMClusterInfo")))

#: the enum value types an enum member may have on the wire (any other value crosses as its repr)
_PLAIN = (int, str, float, bytes, bool, type(None))


def describe(api: Any) -> tuple[dict[str, Any], dict[str, type]]:
    """(the description of ``api`` as data, with the other classes left as objects for the caller's handles;
    the API's enum classes by name)."""
    enums: dict[str, Any] = {}
    classes: dict[str, Any] = {}
    enum_classes: dict[str, type] = {}
    exception: list[str] | None = None
    for name in KIT_API_NAMES:
        try:
            value = getattr(api, name)
        except Exception:  # noqa: BLE001 - a name the API lacks (or cannot give) is left out
            continue
        if name in ENUMS and isinstance(value, type) and issubclass(value, enum.Enum):
            members = [[m, v.value if isinstance(v.value, _PLAIN) else Opaque(repr(v.value)[:200])]
                       for m, v in value.__members__.items()]
            enums[name] = [issubclass(value, int), members]
            enum_classes[name] = value
        elif name == LLM_EXCEPTION and isinstance(value, type) and issubclass(value, BaseException):
            exception = [c.__name__ for c in value.__mro__ if BUILTIN_CLASSES.get(c.__name__) is c]
        else:
            classes[name] = value
    return {"enums": enums, "exception": exception, "classes": classes}, enum_classes


class KitApi:
    """``node.api`` as the kit sees it (see the module docstring)."""

    def __init__(self, names: Mapping[str, Any]) -> None:
        self.__dict__.update(names)

    def __repr__(self) -> str:
        return f"<node.api of the backend's process: {', '.join(sorted(self.__dict__))}>"


def _str(self: enum.Enum) -> str:
    return f"{type(self).__name__}.{self.name}"


def _exception_class(bases: tuple[str, ...]) -> type[BaseException]:
    base: type[BaseException] = Exception
    for name in bases:
        cls = BUILTIN_CLASSES.get(name)
        if cls is not None and issubclass(cls, Exception):
            base = cls
            break

    def __init__(self: Any, *args: Any, status_code: Any = None) -> None:
        base.__init__(self, *args)
        self._status_code = status_code

    return type(LLM_EXCEPTION, (base,), {
        "__init__": __init__, "status_code": property(lambda self: self._status_code),
        "__module__": "node.api", "__doc__": f"The backend's LLMException, as the kit rebuilds it (a {base.__name__})",
    })


class KitApis:
    """The kit's API classes for one backend: one enum class per distinct description, one LLMException class per
    base, so every node of the backend shares them (and a new backend process describing the same API too)."""

    def __init__(self) -> None:
        self._enums: dict[tuple[Any, ...], type] = {}
        self._exceptions: dict[tuple[str, ...], type[BaseException]] = {}
        self.enums: dict[str, type] = {}  # by name: what members the backend sends are looked up in
        self.llm_exception: type[BaseException] | None = None

    def build(self, description: Any) -> KitApi:
        if not (isinstance(description, dict) and isinstance(description.get("enums"), dict)
                and isinstance(description.get("classes"), dict)):
            raise ValueError("a node.api description that is not {enums, exception, classes}")
        names: dict[str, Any] = {}
        for name, spec in description["enums"].items():
            if name not in ENUMS:
                raise ValueError(f"{name!r} is not one of the API's enums")
            names[name] = self._enum(name, spec)
        bases = description.get("exception")
        if bases is not None:
            if not (isinstance(bases, list) and all(isinstance(b, str) for b in bases)):
                raise ValueError("LLMException's bases are not names")
            key = tuple(bases)
            if key not in self._exceptions:
                self._exceptions[key] = _exception_class(key)
            names[LLM_EXCEPTION] = self.llm_exception = self._exceptions[key]
        for name, value in description["classes"].items():
            if name not in KIT_API_NAMES or name in ENUMS or name == LLM_EXCEPTION:
                raise ValueError(f"{name!r} is not one of the API's classes")
            names[name] = value
        return KitApi(names)

    def _enum(self, name: str, spec: Any) -> type:
        if not (isinstance(spec, list) and len(spec) == 2 and isinstance(spec[0], bool) and isinstance(spec[1], list)
                and all(isinstance(m, list) and len(m) == 2 and isinstance(m[0], str) and m[0].isidentifier()
                        and not m[0].startswith("_") for m in spec[1])):
            raise ValueError(f"{name}: members that are not [name, value] pairs")
        is_int = spec[0] and all(type(v) is int for _, v in spec[1])
        key = (name, is_int, tuple((m, v) for m, v in spec[1]))
        cls = self._enums.get(key)
        if cls is None:
            base: Any = enum.IntEnum if is_int else enum.Enum
            made: Any = base(name, [(m, v) for m, v in spec[1]], module="node.api")
            made.__str__ = _str
            cls = self._enums[key] = made
        self.enums[name] = cls
        return cls

    @property
    def status_enum(self) -> type | None:
        return self.enums.get(STATUS_ENUM)

"""``node.api`` across the pipe: the backend's process describes it as data, the kit builds its own by name.

The backend's process describes a node's API (:func:`describe`): each of the API's enums as its members' names and
values, ``LLMException`` as the builtin classes it derives from, and every other class the kit names
(:data:`KIT_API_NAMES`) as a handle (calling it makes the object in the backend's process).  The kit builds
``node.api`` from that (:class:`KitApis`): its own enum classes with those members and values, its own
``LLMException`` class with the same builtin base, the handles for the rest.  A member crosses by name, so the
enums a test reads from ``node.api`` and those it gets back from the backend are the same objects; exceptions the
backend raises are rebuilt with the kit's ``LLMException`` (its ``status_code`` a member of the kit's
``LLMStatusCode``).  Nothing of the backend's classes reaches the kit: a class is never imported by name.

A description is taken name by name: a name whose entry is not what the wire expects (members that are not
[name, value] pairs of plain values, a class that is not a handle) is rejected with what the backend's process
sent, and so is a name that process could not read (its error); the rest of ``node.api`` is built. A rejected or
undescribed name, read later, raises AttributeError saying so and why (:class:`KitApi`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from datawire import Names, Opaque
from datawire.vocabulary import BUILTIN_CLASSES, ENUMS, LLM_EXCEPTION, NODE_API_NAMES, STATUS_ENUM

#: the names of node.api the kit builds or hands on (the tests build their arguments from API_NAMES): the wire's
KIT_API_NAMES = NODE_API_NAMES

#: the enum value types an enum member may have on the wire (any other value crosses as its repr)
_PLAIN = (int, str, float, bytes, bool, type(None))
#: the characters of what the backend's process sent that a rejection quotes
SHOWN = 160


def shown(value: Any) -> str:
    """What the backend's process sent, for a one-line message."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= SHOWN else text[:SHOWN] + "…"


def describe(api: Any) -> tuple[dict[str, Any], dict[str, type]]:
    """(the description of ``api`` as data, with the other classes left as objects for the caller's handles;
    the API's enum classes by name)."""
    enums: dict[str, Any] = {}
    classes: dict[str, Any] = {}
    enum_classes: dict[str, type] = {}
    exception: list[str] | None = None
    left_out: dict[str, str] = {}
    for name in KIT_API_NAMES:
        try:
            value = getattr(api, name)
        except AttributeError:  # a name the API lacks: the kit says so if a test reads it
            continue
        except Exception as exc:  # noqa: BLE001 - a name the API cannot give: left out, with why
            left_out[name] = f"reading it raised {type(exc).__name__}: {str(exc)[:SHOWN]}"
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
    return {"enums": enums, "exception": exception, "classes": classes, "left_out": left_out}, enum_classes


class KitApi:
    """``node.api`` as the kit sees it (see the module docstring); ``rejected``: why each name the description
    gave but the kit did not take was rejected."""

    def __init__(self, names: Mapping[str, Any], rejected: Mapping[str, str]) -> None:
        self.__dict__.update(names)
        self.__dict__["_rejected"] = dict(rejected)

    def __getattr__(self, name: str) -> Any:  # only for a name the description did not give
        why = self.__dict__["_rejected"].get(name)
        if why is not None:
            raise AttributeError(f"node.api.{name} was rejected when the backend's process described node.api: {why}",
                                 name=name, obj=self)
        raise AttributeError(f"node.api has no {name}: the backend's process did not describe it", name=name, obj=self)

    def __repr__(self) -> str:
        return f"<node.api of the backend's process: {', '.join(sorted(k for k in self.__dict__ if k[0] != '_'))}>"


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

    def build(self, description: Any, names: Names) -> KitApi:
        """``node.api`` from a description, its enums registered in ``names`` (members of them decode as members of
        the kit's classes); ValueError (one line) when it is not a description at all."""
        if not (isinstance(description, dict) and isinstance(description.get("enums"), dict)
                and isinstance(description.get("classes"), dict)
                and isinstance(description.get("left_out", {}), dict)):
            raise ValueError(f"a node.api description that is not {{enums, exception, classes}}: {shown(description)}")
        made: dict[str, Any] = {}
        rejected = {str(name)[:SHOWN]: f"reading it in the backend's process failed ({shown(why)})"
                    for name, why in description.get("left_out", {}).items()}
        for name, spec in description["enums"].items():
            try:
                if name not in ENUMS:
                    raise ValueError("not one of the API's enums")  # rejected like a malformed entry, with the others
                made[name] = self._enum(name, spec)
            except ValueError as exc:
                rejected[str(name)[:SHOWN]] = f"{exc}; it sent {name!r}: {shown(spec)}"
        bases = description.get("exception")
        if bases is not None:
            if isinstance(bases, list) and all(isinstance(b, str) for b in bases):
                key = tuple(bases)
                if key not in self._exceptions:
                    self._exceptions[key] = _exception_class(key)
                made[LLM_EXCEPTION] = self.llm_exception = self._exceptions[key]
            else:
                rejected[LLM_EXCEPTION] = f"its bases are not a list of names; it sent {shown(bases)}"
        for name, value in description["classes"].items():
            if name not in KIT_API_NAMES or name in ENUMS or name == LLM_EXCEPTION:
                rejected[str(name)[:SHOWN]] = f"not one of the API's classes; it sent {name!r}: {shown(value)}"
            elif not callable(value):
                rejected[str(name)[:SHOWN]] = f"a class that is not a handle to one; it sent {name!r}: {shown(value)}"
            else:
                made[name] = value
        for enum_name, cls in self.enums.items():
            names.add_enum(enum_name, cls, replace=True)
        return KitApi(made, rejected)

    def _enum(self, name: str, spec: Any) -> type:
        if not (isinstance(spec, list) and len(spec) == 2 and isinstance(spec[0], bool) and isinstance(spec[1], list)
                and all(isinstance(m, list) and len(m) == 2 and isinstance(m[0], str) and m[0].isidentifier()
                        and not m[0].startswith("_") for m in spec[1])):
            raise ValueError("an enum whose members are not [name, value] pairs")
        odd = [(m, v) for m, v in spec[1] if not isinstance(v, (*_PLAIN, Opaque))]
        if odd:  # an enum's key below must hash, and a member's value is plain data or its repr
            raise ValueError(f"the value of its member {odd[0][0]} is a {type(odd[0][1]).__name__}, not plain data: "
                             f"{shown(odd[0][1])}")
        is_int = spec[0] and all(type(v) is int for _, v in spec[1])
        key = (name, is_int, tuple((m, v) for m, v in spec[1]))
        cls = self._enums.get(key)
        if cls is None:
            base: Any = enum.IntEnum if is_int else enum.Enum
            try:
                made: Any = base(name, [(m, v) for m, v in spec[1]], module="node.api")
            except (TypeError, ValueError) as exc:  # a member named twice, say
                raise ValueError(f"an enum that cannot have these members ({str(exc)[:SHOWN]})") from None
            made.__str__ = _str
            cls = self._enums[key] = made
        self.enums[name] = cls
        return cls

    @property
    def status_enum(self) -> type | None:
        return self.enums.get(STATUS_ENUM)

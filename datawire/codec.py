"""The codec: values to bytes and back, over msgpack, for a closed vocabulary.

What may cross, and nothing else:

* None, bool, int (any size), float, str, bytes, and lists, tuples and dicts of what may cross;
* numpy arrays and scalars of booleans and numbers, as dtype + shape + bytes; ``range``; a fresh ``object()``
  (a value of no documented type, which some checks pass on purpose);
* the API's enums and value types by name (:mod:`datawire.vocabulary`), rebuilt with the receiving end's own
  classes from its :class:`Names` table: a member by its name, a value through its class's constructor;
* handles: what an end's ``export`` hook makes of an object that is not data (the object stays where it is;
  the other end's ``import_handle`` hook turns the handle's data into its own stand-in);
* exceptions as :class:`~datawire.errors.ErrorRecord` (kind, status code, message, traceback text);
* a function signature, as its parameters' names, kinds and defaults (a default that is not data crosses as
  :class:`Opaque`, its repr).

Decoding never executes code from the message and never imports a module: msgpack builds only its own types,
and each extension type is rebuilt here from data; what a message may make the receiver allocate is bounded
(:mod:`datawire.bounds`). Anything else is a :class:`WireError` (decoding) or a :class:`NotData` (encoding), one
line each.
"""

from __future__ import annotations

import enum
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np

from .bounds import MAX_VALUES, Budget, WireError
from .errors import ErrorRecord
from .vocabulary import ENUMS, VALUE_TYPES

#: the largest message any end accepts (a frame's length is checked before anything is read)
MAX_FRAME = 1 << 30
#: how deeply containers may nest
MAX_DEPTH = 64
#: the digits of an int beyond 64 bits
MAX_BIGINT_DIGITS = 400

# extension type codes
TUPLE, BIGINT, ARRAY, SCALAR, RANGE, OBJECT, ENUM, VALUE, HANDLE, ERROR, SIGNATURE, OPAQUE, ARRAY_OOB, REF = range(1, 15)
#: the extension types a message's body may name again by reference (REF: the n-th of them in the body, in order)
NAMED = (ENUM, VALUE, HANDLE)
#: raw array bytes after a message's body start at a multiple of this
ALIGN = 8

_DTYPE = re.compile(r"^[<>|=]?[biufc][0-9]{1,2}$")


class NotData(TypeError):
    """An object the wire cannot carry."""


@dataclass(frozen=True)
class Opaque:
    """A value that is not data, shown by its repr (a signature's default)."""

    text: str

    def __repr__(self) -> str:
        return self.text


class Names:
    """The API names one end of a wire knows: its enum classes and value types, by name (both ways)."""

    def __init__(self) -> None:
        self.enums: dict[str, type] = {}
        self.values: dict[str, type] = {}
        self._by_class: dict[type, tuple[str, str]] = {}  # class -> ("enum" | "value", name)

    @classmethod
    def of(cls, api: Any, values: bool = True) -> Names:
        """The vocabulary's names as ``api`` (a module or a namespace of the API's classes) has them; value types
        only with ``values`` (an end that keeps them where they are made leaves them out)."""
        names = cls()
        for name in ENUMS:
            got = getattr(api, name, None)
            if isinstance(got, type) and issubclass(got, enum.Enum):
                names.add_enum(name, got)
        if values:
            for name in VALUE_TYPES:
                got = getattr(api, name, None)
                if isinstance(got, type):
                    names.add_value(name, got)
        return names

    def add_enum(self, name: str, cls: type, replace: bool = False) -> None:
        """``replace``: members of this name now decode as members of ``cls`` (members of the class it replaces
        still encode by name)."""
        if replace:
            self.enums[name] = cls
        else:
            self.enums.setdefault(name, cls)
        self._by_class.setdefault(cls, ("enum", name))

    def add_value(self, name: str, cls: type) -> None:
        self.values.setdefault(name, cls)
        self._by_class.setdefault(cls, ("value", name))

    def kind_of(self, cls: type) -> tuple[str, str] | None:
        got = self._by_class.get(cls)
        if got is not None:
            return got
        for base in cls.__mro__[1:]:  # a subclass of a value type crosses as that type
            got = self._by_class.get(base)
            if got is not None and got[0] == "value":
                return got
        return None


class Codec:
    """Encode and decode for one end of a wire.

    ``names``: the API classes this end rebuilds by name; ``export(obj)``: the handle (a list of data) for an
    object that is not data, or None when it may not cross; ``import_handle(data)``: this end's object for a
    handle the other end sent; ``make_error(record)``: what an exception record becomes here (default: the
    record itself).
    """

    def __init__(self, names: Names | None = None, export: Callable[[Any], list[Any] | None] | None = None,
                 import_handle: Callable[[list[Any]], Any] | None = None,
                 make_error: Callable[[ErrorRecord], Any] | None = None) -> None:
        self.names = names or Names()
        self.export = export
        self.import_handle = import_handle
        self.make_error = make_error

    # ------------------------------------------------------------------------------------------ encoding

    def encode(self, obj: Any) -> bytes:
        """The bytes of ``obj``; :class:`NotData` names what cannot cross."""
        return b"".join(self.encode_parts(obj))

    def encode_parts(self, obj: Any) -> list[Any]:
        """The message as buffers to write one after the other (no copy of an array's bytes): the body's length,
        the body (msgpack), then each array's bytes (aligned), in the order the body names them."""
        raws: list[memoryview] = []
        body = msgpack.packb(self._wire(obj, 0, _Out(raws, {}, {})), use_bin_type=True)
        parts: list[Any] = [len(body).to_bytes(4, "little"), body]
        offset = 4 + len(body)
        for raw in raws:
            pad = -offset % ALIGN
            if pad:
                parts.append(bytes(pad))
                offset += pad
            parts.append(raw)
            offset += raw.nbytes
        return parts

    def _pack(self, obj: Any, depth: int, out: _Out | None = None) -> bytes:
        """An extension value's payload, packed apart (its arrays in band)."""
        return msgpack.packb(self._wire(obj, depth, _Out(None, out.memo if out is not None else {})),
                             use_bin_type=True)

    def _wire(self, obj: Any, depth: int, out: _Out | None = None) -> Any:
        """``obj`` as msgpack's types and extension values; arrays out of band into ``out.raws`` where there is one
        (inside an extension value, which is packed apart, they stay in band); an object named by its class
        (an enum member, a value, a handle) is made once per message however often the message names it."""
        out = out if out is not None else _Out(None, {})
        t = type(obj)
        if obj is None or t is bool or t is float or t is str or t is bytes:
            return obj
        if t is int:
            if -(1 << 63) <= obj < (1 << 64):
                return obj
            return msgpack.ExtType(BIGINT, str(obj).encode("ascii"))
        if depth > MAX_DEPTH:
            raise NotData(f"containers nested more than {MAX_DEPTH} deep")
        if t is list:
            return [self._wire(x, depth + 1, out) for x in obj]
        if t is dict:  # a tuple key cannot be a list: it crosses packed in its tuple extension
            return {(msgpack.ExtType(TUPLE, self._pack(list(k), depth + 1, out)) if type(k) is tuple
                     else self._wire(k, depth + 1, out)): self._wire(v, depth + 1, out) for k, v in obj.items()}
        if t is tuple:  # a list led by the tuple mark (no packing apart, so its arrays may stay out of band)
            return [_TUPLE_MARK, *(self._wire(x, depth + 1, out) for x in obj)]
        if isinstance(obj, np.ndarray):
            if out.raws is None:
                return msgpack.ExtType(ARRAY, _array_bytes(obj))
            head, body = _array_parts(obj)
            out.raws.append(body)
            return msgpack.ExtType(ARRAY_OOB, head)
        if isinstance(obj, np.generic) and not isinstance(obj, (np.str_, np.bytes_, np.void)):
            return msgpack.ExtType(SCALAR, _array_bytes(np.asarray(obj)))
        if t is range:
            return msgpack.ExtType(RANGE, self._pack([obj.start, obj.stop, obj.step], depth + 1, out))
        if t is object:
            return msgpack.ExtType(OBJECT, b"")
        if t is bytearray or t is memoryview:
            return bytes(obj)
        if isinstance(obj, BaseException):
            from .errors import record_of

            return msgpack.ExtType(ERROR, self._pack(record_of(obj).as_list(), depth + 1, out))
        if t is ErrorRecord:
            return msgpack.ExtType(ERROR, self._pack(obj.as_list(), depth + 1, out))
        if t is inspect.Signature:
            return msgpack.ExtType(SIGNATURE, self._pack(self._signature(obj), depth + 1, out))
        if t is Opaque:
            return msgpack.ExtType(OPAQUE, obj.text.encode("utf-8"))
        key = id(obj)
        if out.sent is not None:
            ref = out.sent.get(key)
            if ref is not None:  # named before in this body: a reference to it, not its bytes again
                return ref
        made = out.memo.get(key)
        if made is None:
            made = out.memo[key] = self._named(obj, t, depth, out)
        if out.sent is not None:
            out.sent[key] = msgpack.ExtType(REF, len(out.sent).to_bytes(4, "little"))
        return made

    def _named(self, obj: Any, t: type, depth: int, out: _Out) -> msgpack.ExtType:
        """An enum member, a value or a handle (an object named by its class, or exported)."""
        named = self.names.kind_of(t)
        if named is not None:
            kind, name = named
            if kind == "enum":
                made = msgpack.ExtType(ENUM, self._pack([name, obj.name], depth + 1, out))
            else:
                made = msgpack.ExtType(VALUE, self._pack(self._value_args(name, obj), depth + 1, out))
        else:
            handle = self.export(obj) if self.export is not None else None
            if handle is None:
                raise NotData(f"a {t.__module__}.{t.__qualname__} is not data")
            made = msgpack.ExtType(HANDLE, self._pack(handle, depth + 1, out))
        return made

    @staticmethod
    def _value_args(name: str, obj: Any) -> list[Any]:
        positional, keywords = VALUE_TYPES[name]
        args: list[Any] = []
        for attrs in positional:
            found = [getattr(obj, a) for a in attrs if hasattr(obj, a)]
            if not found:
                break
            args.append(found[0])
        kwargs: dict[str, Any] = {}
        for param, attrs in keywords:
            found = [getattr(obj, a) for a in attrs if hasattr(obj, a)]
            if found:
                kwargs[param] = found[0]
        return [name, args, kwargs]

    def _signature(self, sig: inspect.Signature) -> list[Any]:
        params = []
        for p in sig.parameters.values():
            if p.default is inspect.Parameter.empty:
                params.append([p.name, int(p.kind), False, None, _annotation(p.annotation)])
                continue
            try:
                self._wire(p.default, MAX_DEPTH - 2)
                default: Any = p.default
            except NotData:
                default = Opaque(repr(p.default)[:200])
            params.append([p.name, int(p.kind), True, default, _annotation(p.annotation)])
        return [params, _annotation(sig.return_annotation)]

    # ------------------------------------------------------------------------------------------ decoding

    def decode(self, data: Any) -> Any:
        """The value a message (``encode``'s bytes, or a buffer holding them) holds; :class:`WireError` (one line)
        for anything that is not the wire's data. Its arrays are views of ``data`` where that is writable (a
        received frame), copies otherwise."""
        try:
            message = _Message(self, data)
            message.budget.buffer(message.body)
            value = _unpack(message.body, message.ext)
            message.done()
        except WireError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the bytes were (nested too deep included), one line
            raise WireError(f"{type(exc).__name__}: {str(exc)[:200]}") from None
        if value is _TUPLE:
            raise WireError("a tuple mark out of place")
        return value

    def _ext(self, code: int, data: bytes, budget: Budget) -> Any:
        budget.copy(len(data))  # msgpack made the payload a bytes of its own
        if code == TUPLE:  # the mark that leads a tuple's list, or (a dict's key) a tuple packed whole
            return tuple(self._inner(data, budget, list)) if data else _TUPLE
        if code == BIGINT:
            if len(data) > MAX_BIGINT_DIGITS or not re.fullmatch(rb"-?[0-9]+", data):
                raise WireError("a big int that is not a decimal number")
            return int(data)
        if code == ARRAY:
            return _array(data)
        if code == SCALAR:
            return _array(data)[()]
        if code == RANGE:
            start, stop, step = self._ints(data, budget, 3)
            return range(start, stop, step)
        if code == OBJECT:
            return object()
        if code == ENUM:
            name, member = self._inner(data, budget, list, 2)
            cls = self.names.enums.get(name) if isinstance(name, str) else None
            if cls is None:
                raise WireError(f"enum {name!r} is not one this end knows")
            members: Any = getattr(cls, "__members__", {})
            found = members.get(member) if isinstance(member, str) else None
            if found is None:
                raise WireError(f"{name} has no member {member!r}")
            return found
        if code == VALUE:
            name, args, kwargs = self._inner(data, budget, list, 3)
            cls = self.names.values.get(name) if isinstance(name, str) else None
            if cls is None:
                raise WireError(f"value type {name!r} is not one this end knows")
            if not isinstance(args, list) or not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
                raise WireError(f"{name}: its arguments are not a list and a dict of names")
            return cls(*args, **kwargs)
        if code == HANDLE:
            fields = self._inner(data, budget, list)
            if self.import_handle is None:
                raise WireError("a handle, where this end takes none")
            return self.import_handle(fields)
        if code == ERROR:
            record = ErrorRecord.from_list(self._inner(data, budget, list))
            return self.make_error(record) if self.make_error is not None else record
        if code == SIGNATURE:
            return _signature(self._inner(data, budget, list))
        if code == OPAQUE:
            return Opaque(data.decode("utf-8")[:400])
        if code == REF:
            raise WireError("a reference inside an extension value (only a message's body has them)")
        raise WireError(f"extension type {code} is not the wire's")

    def _inner(self, data: bytes, budget: Budget, kind: type[list[Any]], length: int | None = None) -> Any:
        budget.buffer(data)
        value: Any = _unpack(data, lambda code, inner: self._ext(code, inner, budget))
        if not isinstance(value, kind):
            raise WireError(f"a malformed extension value ({type(value).__name__})")
        if length is not None and len(value) != length:
            raise WireError(f"an extension value of {len(value)} fields, not {length}")
        return value

    def _ints(self, data: bytes, budget: Budget, length: int) -> list[int]:
        values = self._inner(data, budget, list, length)
        if not all(type(v) is int for v in values):
            raise WireError("a range of something else than ints")
        return values


class _Out:
    """One message being encoded: the arrays to write after its body (None inside an extension value), what each
    object named by its class was made into, and (in the body, None inside an extension value) the reference that
    names it again once the body has it (both by ``id``: the message holds every such object while it is
    encoded). A read of 128 tensors of one cache names the cache 128 times: its handle, with every tensor's address,
    is in the body once."""

    __slots__ = ("raws", "memo", "sent")

    def __init__(self, raws: list[memoryview] | None, memo: dict[int, Any],
                 sent: dict[int, msgpack.ExtType] | None = None) -> None:
        self.raws = raws
        self.memo = memo
        self.sent = sent


class _Message:
    """One message being decoded: its body, and the arrays' bytes after it (taken in order)."""

    def __init__(self, codec: Codec, data: Any) -> None:
        self.codec = codec
        self.data = data
        view = memoryview(data).cast("B")
        if len(view) < 4:
            raise WireError("a message shorter than its length prefix")
        n = int.from_bytes(view[:4], "little")
        if 4 + n > len(view):
            raise WireError("a message body longer than the message")
        self.view = view
        self.body = view[4:4 + n]
        self.offset = 4 + n
        self.writable = not view.readonly
        self.memo: dict[tuple[int, bytes], Any] = {}
        self.named: list[Any] = []  # what the body's enums, values and handles became, in order (REF's targets)
        self.budget = Budget(len(view))

    def ext(self, code: int, data: bytes) -> Any:
        if code == REF:
            i = int.from_bytes(data, "little") if len(data) == 4 else -1
            if not 0 <= i < len(self.named):
                raise WireError("a reference to nothing the message named before it")
            return self.named[i]
        if code in NAMED:  # the same bytes in one message are the same thing: made once
            made = self.memo.get((code, data))
            if made is None:
                made = self.memo[(code, data)] = self.codec._ext(code, data, self.budget)
            self.named.append(made)
            return made
        if code != ARRAY_OOB:
            return self.codec._ext(code, data, self.budget)
        self.budget.copy(len(data))
        dtype, shape, count = _array_head(data)
        self.offset += -self.offset % ALIGN
        nbytes = count * dtype.itemsize
        if self.offset + nbytes > len(self.view):
            raise WireError("an array's bytes run past the message")
        arr = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.offset).reshape(shape)
        self.offset += nbytes
        return arr if self.writable else arr.copy()

    def done(self) -> None:
        if self.offset != len(self.view):
            raise WireError(f"{len(self.view) - self.offset} bytes after the message's last array")


#: what a tuple's list starts with on the wire; decoded, the mark becomes this object until the list is a tuple
_TUPLE = object()
_TUPLE_MARK = msgpack.ExtType(TUPLE, b"")


def _unpack(data: Any, ext_hook: Callable[[int, bytes], Any]) -> Any:
    """msgpack's decoding of one buffer (its budget charged first), its containers no longer than a message may
    hold values: msgpack makes a list of the length the header declares before it reads an element."""
    return msgpack.unpackb(data, ext_hook=ext_hook, list_hook=_tuples, object_pairs_hook=_mapping, raw=False,
                           strict_map_key=False, max_array_len=MAX_VALUES, max_map_len=MAX_VALUES)


def _tuples(items: list[Any]) -> Any:
    if items and items[0] is _TUPLE:
        items = items[1:]
        kind: Any = tuple
    else:
        kind = list
    if any(x is _TUPLE for x in items):
        raise WireError("a tuple mark out of place")
    return kind(items) if kind is tuple else items


def _mapping(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    if any(k is _TUPLE or v is _TUPLE for k, v in pairs):
        raise WireError("a tuple mark out of place")
    return dict(pairs)


#: array headers made and parsed so far, by (dtype, shape) and by their bytes: a read of every tensor of every cache
#: sends thousands of arrays of a few shapes, and a header costs more to make and check than a small array's bytes
_HEADS_OUT: dict[tuple[str, tuple[int, ...]], bytes] = {}
_HEADS_IN: dict[bytes, tuple[np.dtype[Any], tuple[int, ...], int]] = {}
_HEAD_MEMO = 4096
#: the longest array header (dtype and shape) a message may carry
MAX_HEAD = 4096


def _array_parts(arr: np.ndarray) -> tuple[bytes, memoryview]:
    """(the array's header: dtype and shape, its bytes as a view)."""
    if arr.dtype.kind not in "biufc" or arr.dtype.hasobject:
        raise NotData(f"a numpy array of {arr.dtype} is not data (only booleans and numbers are)")
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    flat: Any = arr.reshape(-1)
    key = (arr.dtype.str, arr.shape)
    head = _HEADS_OUT.get(key)
    if head is None:
        if len(_HEADS_OUT) >= _HEAD_MEMO:
            _HEADS_OUT.clear()
        head = _HEADS_OUT[key] = msgpack.packb([arr.dtype.str, list(arr.shape)])
    return head, memoryview(flat).cast("B")


def _array_bytes(arr: np.ndarray) -> bytes:
    head, body = _array_parts(arr)
    return b"".join((len(head).to_bytes(4, "little"), head, body))


def _array_head(head_bytes: bytes) -> tuple[np.dtype[Any], tuple[int, ...], int]:
    """(dtype, shape, element count) of an array header: a numeric dtype and a shape, nothing else."""
    known = _HEADS_IN.get(head_bytes)
    if known is not None:
        return known
    parsed = _parse_head(head_bytes)
    if len(_HEADS_IN) >= _HEAD_MEMO:
        _HEADS_IN.clear()
    _HEADS_IN[bytes(head_bytes)] = parsed
    return parsed


def _parse_head(head_bytes: bytes) -> tuple[np.dtype[Any], tuple[int, ...], int]:
    if len(head_bytes) > MAX_HEAD:  # a dtype and at most 32 dimensions: msgpack is not asked to build more
        raise WireError(f"an array header of {len(head_bytes)} bytes (at most {MAX_HEAD})")
    head: Any = msgpack.unpackb(head_bytes, raw=False)
    if not (isinstance(head, list) and len(head) == 2 and isinstance(head[0], str) and isinstance(head[1], list)
            and _DTYPE.match(head[0]) and all(type(d) is int and d >= 0 for d in head[1]) and len(head[1]) <= 32):
        raise WireError("an array header that is not a numeric dtype and a shape")
    count = 1
    for d in head[1]:
        count *= d
    return np.dtype(head[0]), tuple(head[1]), count


def _array(data: bytes) -> np.ndarray:
    n = int.from_bytes(data[:4], "little")
    if n > MAX_HEAD or len(data) < 4 + n:
        raise WireError("a malformed array header")
    dtype, shape, count = _array_head(data[4:4 + n])
    if count * dtype.itemsize != len(data) - 4 - n:
        raise WireError(f"an array of shape {list(shape)} and dtype {dtype.str} with {len(data) - 4 - n} bytes")
    return np.frombuffer(data, dtype=dtype, count=count, offset=4 + n).reshape(shape).copy()


def _annotation(annotation: Any) -> str | None:
    """An annotation as text (None: none); a string annotation (``from __future__ import annotations``) as itself."""
    if annotation is inspect.Parameter.empty:
        return None
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _signature(fields: list[Any]) -> inspect.Signature:
    if not (len(fields) == 2 and isinstance(fields[0], list) and isinstance(fields[1], (str, type(None)))):
        raise WireError("a malformed signature")
    out = []
    for item in fields[0]:
        if not (isinstance(item, list) and len(item) == 5 and isinstance(item[0], str) and type(item[1]) is int
                and 0 <= item[1] <= 4 and isinstance(item[2], bool) and isinstance(item[4], (str, type(None)))):
            raise WireError("a malformed signature parameter")
        name, kind, has_default, default, annotation = item
        out.append(inspect.Parameter(name, inspect._ParameterKind(kind),
                                     default=default if has_default else inspect.Parameter.empty,
                                     annotation=inspect.Parameter.empty if annotation is None else annotation))
    returns = inspect.Signature.empty if fields[1] is None else fields[1]
    return inspect.Signature(out, return_annotation=returns)


def decode_plain(data: Any) -> Any:
    """A message of msgpack's own types only (a frame's header): no extension type is accepted."""
    def refuse(code: int, _data: bytes) -> Any:
        raise WireError(f"extension type {code} where plain data was expected")

    try:
        Budget(len(data)).buffer(data)
        return msgpack.unpackb(data, ext_hook=refuse, raw=False, strict_map_key=False, max_array_len=MAX_VALUES,
                               max_map_len=MAX_VALUES)
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise WireError(f"{type(exc).__name__}: {str(exc)[:200]}") from None


def encode_plain(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)

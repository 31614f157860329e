"""The one loader of the push_cache spec: YAML → validated (:mod:`.validate`) → typed objects (:mod:`.model`).

The typed objects are built here and nowhere else: the refines convention is applied, every clause's and case's
scenario is merged over the baseline and read into a :class:`~.model.Scenario`, every ``expect`` into an
expectation form, every value of the case value language into a typed expression.
"""

from __future__ import annotations

import hashlib
import pathlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import yaml

from .bounded_yaml import MAX_ALIASES, BoundedLoader, LimitError, read_bounded
from .errors import SpecError
from .expect import parse_expect
from .levels import Level
from .model import (
    Bounds,
    CacheSpec,
    Case,
    Clause,
    Coverage,
    CoverageDimension,
    DelayClass,
    Delays,
    Encoding,
    EnumTable,
    Fault,
    FieldSpec,
    FirstPush,
    Generate,
    Generation,
    Histories,
    HistoryStream,
    Member,
    ModelLayout,
    NodeSpec,
    Operation,
    Parameter,
    ProcedureSpec,
    Products,
    RecordType,
    Scenario,
    Signature,
    Source,
    Spec,
    TransferPair,
    Types,
    frozen,
)
from .paths import default_spec_path
from .validate import validate
from .value_language import parse_value


def load_spec(path: str | pathlib.Path | None = None, release: str | None = None) -> Spec:
    """Load, validate and type a spec (default: the packaged one); optionally select one release.

    Results are cached per (resolved path, mtime, size) of the file and of the file it shares types with, so
    repeated loads are cheap and see edits of either.
    """
    file = pathlib.Path(path) if path is not None else default_spec_path()
    try:
        resolved = file.resolve()
        stat = resolved.stat()
    except OSError as exc:
        raise SpecError(file, "$", f"cannot read spec: {exc.strerror or exc}") from None
    spec = _load_cached(str(resolved), stat.st_mtime_ns, stat.st_size, _shared_stamp(resolved))
    return spec.for_release(release) if release is not None else spec


#: the file each loaded spec shares types with (learnt at its first load; its stamp keys the cache from then on)
_SHARES: dict[str, pathlib.Path] = {}


def _shared_stamp(resolved: pathlib.Path) -> tuple[int, int] | None:
    other = _SHARES.get(str(resolved))
    try:
        return None if other is None else (other.stat().st_mtime_ns, other.stat().st_size)
    except OSError:
        return None


#: loaded specs by (resolved path, mtime, size, the stamp of the file it shares types with)
_LOADED: dict[tuple[str, int, int, tuple[int, int] | None], Spec] = {}
#: how many loads _LOADED keeps (a run loads the family's four specs and maybe a few of the user's)
_KEEP = 16


def _load_cached(path: str, mtime_ns: int, size: int, shared_stamp: tuple[int, int] | None) -> Spec:
    key = (path, mtime_ns, size, shared_stamp)
    spec = _LOADED.get(key)
    if spec is None:
        spec = _load(pathlib.Path(path))
        if len(_LOADED) >= _KEEP:
            _LOADED.clear()
        _LOADED[key] = spec
        # a first load learns the file the spec shares types with, and later loads key on its stamp too: the
        # spec is kept under that key as well, or the next load would parse and validate it all again
        _LOADED[(path, mtime_ns, size, _shared_stamp(pathlib.Path(path)))] = spec
    return spec


def _load(file: pathlib.Path) -> Spec:
    data = _read(file, file, "$", "cannot read spec", "spec file too large")
    raw = _parse_yaml(file, data)
    digest = hashlib.sha256(data)
    if isinstance(raw, dict) and isinstance(raw.get("shares"), str):
        if "types" in raw:
            raise SpecError(file, "$.types", f"a spec that shares {raw['shares']}'s types has none of its own")
        shared, shared_data = _shared(file, raw["shares"])
        raw = {**raw, "types": shared.get("types") if isinstance(shared, dict) else None}
        digest.update(shared_data)  # the file's meaning includes what it shares: so does its hash
    validate(file, raw)
    return _build(file, raw, digest.hexdigest())


def _shared(file: pathlib.Path, name: str) -> tuple[Any, bytes]:
    """The spec file ``name`` beside ``file`` whose data model ``file`` shares (``shares``), parsed."""
    other = file.parent / name
    if other.resolve() == file.resolve():
        raise SpecError(file, "$.shares", f"a spec cannot share its own types ({name})")
    _SHARES[str(file)] = other.resolve()
    data = _read(file, other, "$.shares", f"cannot read the shared spec {name}", f"shared spec {name} too large")
    return _parse_yaml(other, data), data


def _read(file: pathlib.Path, what: pathlib.Path, where: str, cannot: str, too_large: str) -> bytes:
    """The bytes of ``what`` (bounded); a problem is ``file``'s one-line SpecError at ``where``."""
    try:
        return read_bounded(what)
    except OSError as exc:
        raise SpecError(file, where, f"{cannot}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise SpecError(file, where, f"{too_large}: {exc}") from None


# ---- YAML -----------------------------------------------------------------------------------------------------


class _StrictMappings(yaml.constructor.SafeConstructor):
    """Rejects a key repeated in one mapping (YAML would silently keep the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} in one mapping", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


class _StrictLoader(_StrictMappings, BoundedLoader):
    """The bounded SafeLoader, in Python: what it refuses it says with a line and column."""


#: libyaml's parser under the same constructor, where PyYAML has it: it reads the packaged spec in a third of the
#: pure-Python loader's time, and every certify process (a family's, a test's) reads its spec once
_FastLoader: Any = type("_FastLoader", (_StrictMappings, yaml.CSafeLoader), {}) if yaml.__with_libyaml__ else None


def _parse_yaml(file: pathlib.Path, data: bytes) -> Any:
    if _FastLoader is not None:
        try:
            aliases = sum(isinstance(e, yaml.AliasEvent) for e in yaml.parse(data, Loader=yaml.CSafeLoader))
            if aliases <= MAX_ALIASES:
                return yaml.load(data, Loader=_FastLoader)  # noqa: S506 - a SafeLoader's constructor
        except yaml.YAMLError:
            pass  # the pure-Python loader below refuses it as it always has, with its line and column
    try:
        return yaml.load(data, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
        what = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            what = f"{exc.context}: {exc.problem}"
        raise SpecError(file, where, f"YAML: {what}") from None
    except LimitError as exc:
        raise SpecError(file, "$", str(exc)) from None
    except yaml.YAMLError as exc:
        raise SpecError(file, "YAML", f"YAML error: {exc}") from None


# ---- scenarios ------------------------------------------------------------------------------------------------


#: the scenario keys whose entries are replaced whole, never merged: a call's arguments are values of the value
#: language, so an overriding key ({key: CacheKeyByIdAndIndex, ...}) must not keep the baseline key's ``args``
WHOLE_ENTRIES = frozenset({"call"})


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any] | None, *, whole: bool = False) -> dict[str, Any]:
    """``override`` merged into a copy of ``base``: mappings merge key by key, anything else replaces; under
    ``WHOLE_ENTRIES`` (``whole``) each entry replaces the baseline's whole."""
    out = dict(base)
    for key, value in (override or {}).items():
        if not whole and isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value, whole=key in WHOLE_ENTRIES)
        else:
            out[key] = value
    return out


def _node(raw: Mapping[str, Any]) -> NodeSpec:
    # an option set to null in an override is removed from the node's options
    options = {str(k): str(v) for k, v in (raw.get("options") or {}).items() if v is not None}
    return NodeSpec(int(raw["cluster_id"]), str(raw.get("role", "PROMPT")), MappingProxyType(options))


def _cache(raw: Mapping[str, Any]) -> CacheSpec:
    return CacheSpec(int(raw["num_tensors"]), tuple(int(d) for d in raw["shape"]), str(raw["data_type"]),
                     str(raw["placement"]), raw.get("batch_dim_index"), raw.get("seq_len_dim_index"),
                     raw.get("register"), bool(raw.get("remote_accessible", True)), bool(raw.get("blocks", False)),
                     tuple((int(k["req_id"]), int(k["model_id"])) for k in raw.get("cache_keys") or ()),
                     int(raw["model_id"]) if raw.get("model_id") is not None else None)


def _fault(raw: Mapping[str, Any]) -> Fault:
    seconds = raw.get("seconds")
    return Fault(str(raw["kind"]), str(raw.get("node", "local")), float(seconds) if seconds is not None else None,
                 raw.get("peer"))


def _first(raw: Mapping[str, Any] | None) -> FirstPush | None:
    if raw is None:
        return None
    return FirstPush(_args(raw.get("args")), _fault(raw["fault"]) if raw.get("fault") is not None else None)


def _args(raw: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType({str(k): parse_value(v) for k, v in (raw or {}).items()})


def scenario_of(raw: Mapping[str, Any]) -> Scenario:
    """A whole scenario (the baseline with every override merged in) as a typed object."""
    fault = raw.get("fault")
    faults = fault if isinstance(fault, list) else [fault] if fault else []
    return Scenario(_node(raw["local"]), _node(raw["remote"]), bool(raw.get("link", True)), _cache(raw["src"]),
                    _cache(raw["dst"]), _args(raw.get("call")), tuple(_fault(f) for f in faults))


# ---- clauses --------------------------------------------------------------------------------------------------


def _inherit(raw_clauses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Apply the refines convention: a refining clause without cases takes the refined clause's cases (those
    without their own expect), scenario (its own scenario merged over it), procedure and requires (union)."""
    by_id = {c["id"]: c for c in raw_clauses}
    done: dict[str, dict[str, Any]] = {}

    def resolve(clause: dict[str, Any]) -> dict[str, Any]:
        if clause["id"] in done:
            return done[clause["id"]]
        result = clause
        target = clause.get("refines")
        if target in by_id and not clause.get("cases"):
            parent = resolve(by_id[target])
            result = dict(clause)
            result["cases"] = [k for k in parent.get("cases") or () if k.get("expect") is None]
            result["scenario"] = deep_merge(parent.get("scenario") or {}, clause.get("scenario") or {})
            requires = list(parent.get("requires") or ())
            requires += [r for r in clause.get("requires") or () if r not in requires]
            result["requires"] = requires
            result.setdefault("procedure", parent.get("procedure"))
        done[clause["id"]] = result
        return result

    return [resolve(c) for c in raw_clauses]


def _procedure(raw: Mapping[str, Any] | None) -> ProcedureSpec:
    raw = raw or {}
    return ProcedureSpec(str(raw.get("name", "call")), str(raw.get("style", "keywords")), tuple(raw.get("steps") or ()),
                         raw.get("type"), raw.get("table"), raw.get("sizes"), int(raw.get("threads", 4)),
                         raw.get("each"), bool(raw.get("kwargs_may_be_named", False)),
                         tuple(raw.get("products") or ()), bool(raw.get("unlisted", False)), raw.get("data_types"))


def _clause(raw: Mapping[str, Any], baseline: Mapping[str, Any]) -> Clause:
    merged = deep_merge(baseline, raw.get("scenario"))
    expect = parse_expect(raw["expect"])
    cases = tuple(
        Case(name=str(k["name"]), args=_args(k.get("args")), scenario=scenario_of(deep_merge(merged, k.get("scenario"))),
             expect=parse_expect(k["expect"]) if k.get("expect") is not None else expect,
             steps=tuple(k.get("steps") or ()), note=k.get("note"), first=_first(k.get("first")))
        for k in raw.get("cases") or ()
    )
    gen = raw.get("generate")
    src = raw["source"]
    return Clause(
        id=str(raw["id"]), title=str(raw["title"]), level=Level(raw["level"]), family=str(raw["family"]),
        source=Source(str(src["kind"]), str(src["ref"]), src.get("en"), src.get("zh")),
        expect=expect, scenario=scenario_of(merged), cases=cases, procedure=_procedure(raw.get("procedure")),
        generate=Generate(tuple(gen["rules"]), tuple(gen["sides"]) if gen.get("sides") else None,
                          bool(gen.get("pairs", False))) if gen else None,
        requires=tuple(raw.get("requires") or ()), since=raw.get("since"), until=raw.get("until"),
        refines=raw.get("refines"), deviation=raw.get("deviation"), note=raw.get("note"), history=raw.get("history"),
    )


# ---- types, signature, generation -----------------------------------------------------------------------------


def _bounds(raw: Mapping[str, Any]) -> Bounds:
    return Bounds(int(raw["min"]), int(raw["max"]))


def _types(raw: Mapping[str, Any]) -> Types:
    enums, records = {}, {}
    for name, table in raw.items():
        if isinstance(table, Mapping) and "members" in table:
            members = {m: Member(int(e["value"]), e.get("size"), e.get("size_source"), _encoding(e.get("encoding")))
                       for m, e in table["members"].items()}
            enums[name] = EnumTable(str(table["kind"]), frozen(members))
        elif isinstance(table, Mapping) and "fields" in table:
            fields = {f: FieldSpec(str(e["type"]), e.get("domain"), "default" in e, e.get("default"),
                                   bool(e.get("attribute", True)))
                      for f, e in table["fields"].items()}
            records[name] = RecordType(frozen(fields), table.get("base"))
    products = raw.get("products") or {}
    only_named = {k: tuple(v) for k, v in (products.get("only_named") or {}).items() if isinstance(v, list)}
    lists = {k: tuple(v) for k, v in products.items() if isinstance(v, list)}
    lists["only_named"] = tuple(only_named)
    pairs = (raw.get("transfers") or {}).get("pairs") or ()
    return Types(
        enums=frozen(enums), records=frozen(records),
        products=Products(frozen(lists), frozen(only_named)),
        transfers=tuple(TransferPair(str(p["src"]), str(p["dst"]), Level(p["level"])) for p in pairs),
        domains=frozen({k: _bounds(v) for k, v in (raw.get("domains") or {}).items()}),
        byte_order=str(raw.get("byte_order", "little")),
    )


def _encoding(raw: Mapping[str, Any] | None) -> Encoding | None:
    if not raw:
        return None
    return Encoding(str(raw["kind"]), int(raw.get("exponent_bits", 0)), int(raw.get("mantissa_bits", 0)))


def _signature(raw: Mapping[str, Any]) -> Signature:
    params = tuple(Parameter(str(p["name"]), str(p["kind"]), str(p["type"]), bool(p.get("required", False)),
                             "default" in p, _default(p.get("default")),
                             tuple((str(k), _default(v)) for k, v in (p.get("keyword_defaults") or {}).items()))
                   for p in raw["parameters"])
    return Signature(raw.get("since"), raw.get("until"), params, raw.get("returns"), bool(raw.get("var_kwargs")))


def _default(raw: Any) -> Any:
    """A parameter's documented default: a YAML scalar or list as it reads, ``{tuple: [...]}`` a tuple (YAML has
    none, and push_blocks' block lists default to ``()``)."""
    if isinstance(raw, Mapping) and set(raw) == {"tuple"}:
        return tuple(raw["tuple"])
    return raw


def _generation(raw: Mapping[str, Any] | None, domains: Mapping[str, Bounds]) -> Generation | None:
    if not raw:
        return None
    layers = _bounds(raw["layers"])
    # without tensor bounds: as many tensors as layers, up to two per layer
    tensors = _bounds(raw["tensors"]) if "tensors" in raw else Bounds(layers.min, layers.max * 2)
    return Generation(_bounds(raw["rank"]), _bounds(raw["batch"]), layers, tensors, _bounds(raw["tensor_bytes"]),
                      frozen({str(k): int(v) for k, v in raw["examples"].items()}),
                      _histories(raw.get("histories"), domains))


#: a node's pool size when the spec gives no pool_bytes bounds
DEFAULT_POOL_BYTES = 64 << 20


def _histories(raw: Mapping[str, Any] | None, domains: Mapping[str, Bounds]) -> Histories | None:
    """The stateful suite's domains; a domain named by ``{domain: name}`` is the types.domains entry (checked to
    exist by the validator)."""
    if not raw:
        return None
    streams = {str(name): HistoryStream(str(name), int(s["steps"]), str(s.get("layouts", "drawn")),
                                        int(s.get("pushes", 0)), int(s.get("wait_ms", 0)),
                                        int(s["bytes"]) if s.get("bytes") is not None else None,
                                        tuple(s["situations"]) if s.get("situations") is not None else None,
                                        bool(s.get("shrink", True)))
               for name, s in raw["streams"].items()}
    models = tuple(ModelLayout(str(m["model"]), str(m["source"]), int(m["layers"]), int(m["tensors_per_layer"]),
                               tuple(int(d) for d in m["shape"]), str(m["data_type"]))
                   for m in raw.get("model_layouts") or ())
    pool = _bounds(raw["pool_bytes"]) if "pool_bytes" in raw else Bounds(DEFAULT_POOL_BYTES, DEFAULT_POOL_BYTES)
    return Histories(_bounds(raw["nodes"]), domains[raw["cluster_id"]["domain"]], domains[raw["cache_id"]["domain"]],
                     _bounds(raw["sync_kv_timeout_ms"]), _bounds(raw["pool_page_shift"]), pool,
                     _bounds(raw["guard_bytes"]), _bounds(raw["repeat"]), frozen(streams), _delays(raw["delays"]),
                     models, raw.get("overtime"), raw.get("companion"),
                     tuple(str(a) for a in raw.get("alongside") or ()))


def _delays(raw: Mapping[str, Any]) -> Delays:
    bounds = [0.0] + [float(c["below"]) for c in raw["within"]]
    within = tuple(DelayClass(str(c["name"]), bounds[i], bounds[i + 1]) for i, c in enumerate(raw["within"]))
    return Delays(within, float(raw["draw_below"]), float(raw["beyond"]), float(raw["per_layer"]))


def _build(file: pathlib.Path, raw: dict[str, Any], sha256: str) -> Spec:
    clauses = tuple(_clause(c, raw["scenario"]) for c in _inherit(raw["clauses"]))
    types = _types(raw["types"])
    return Spec(
        version=str(raw["spec_version"]),
        api=str(raw["api"]),
        operation=_operation(raw["operation"]),
        releases=tuple(str(r["name"]) for r in raw["releases"]),
        clauses=clauses,
        scenario=scenario_of(raw["scenario"]),
        types=types,
        signatures=tuple(_signature(s) for s in raw["signature"]),
        generation=_generation(raw.get("generation"), types.domains),
        path=file,
        sha256=sha256,
        _by_id=frozen({c.id: c for c in clauses}),
        coverage=_coverage(raw.get("coverage")),
    )


def _operation(raw: Mapping[str, Any]) -> Operation:
    return Operation(str(raw["direction"]), str(raw["key"]), str(raw["cache"]), str(raw["unit"]),
                     str(raw["entries"]["src"]), str(raw["entries"]["dst"]))


def _coverage(raw: Mapping[str, Any] | None) -> Coverage | None:
    if not raw:
        return None
    dims = {str(n): CoverageDimension(str(n), str(d["kind"]), frozen({k: v for k, v in d.items() if k != "kind"}))
            for n, d in raw["dimensions"].items()}
    return Coverage(frozen(dims), tuple((str(a), str(b)) for a, b in raw["pairs"]), bool(raw["blocks_verdict"]))

"""The typed spec: what :func:`conformance_tests.spec.load_spec` returns.

Every object here is built once, at load, from a spec that passed its schema and the loader's checks; nothing
downstream reads the YAML. Clauses and cases are identified by their object (one per load), so they compare
and hash by identity; the value objects (scenarios, caches, faults, expectations) compare by value.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from .errors import SpecError, suggest
from .expect import Expectation
from .levels import Level
from .value_language import ValueExpr

EMPTY: Mapping[str, Any] = MappingProxyType({})


def frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only view of a mapping built at load."""
    return MappingProxyType(dict(mapping or {}))


# ---------------------------------------------------------------------------------------------------- scenario


@dataclass(frozen=True)
class NodeSpec:
    """One node of a scenario: its cluster id, role and the llm.* options its LLMConfig would generate."""

    cluster_id: int
    role: str
    options: Mapping[str, str] = field(default_factory=lambda: EMPTY)

    def protocol(self) -> dict[str, Any]:
        """The node spec the backend protocol's ``open_cluster`` takes."""
        return {"cluster_id": self.cluster_id, "role": self.role, "options": dict(self.options)}

    def option_int(self, name: str) -> int | None:
        value = self.options.get(name)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None


@dataclass(frozen=True)
class CacheSpec:
    """One cache of a scenario. ``register`` None lets the kit choose (registered memory with guard bands where
    the backend can, for a destination)."""

    num_tensors: int
    shape: tuple[int, ...]
    data_type: str
    placement: str
    batch_dim_index: int | None = None
    seq_len_dim_index: int | None = None
    register: bool | None = None
    remote_accessible: bool = True
    blocks: bool = False
    cache_keys: tuple[tuple[int, int], ...] = ()  # (req_id, model_id) bound to batch entries 0, 1, ... when made
    model_id: int | None = None  # a blocks cache's BlocksCacheKey(<its node's cluster id>, model_id), bound when made

    def with_(self, **changes: Any) -> CacheSpec:
        return replace(self, **changes)


@dataclass(frozen=True)
class Fault:
    """Injected with ``Node.inject`` on ``node`` after the caches are set up and linked, before the call."""

    kind: str
    node: str = "local"
    seconds: float | None = None
    peer: str | None = None

    def protocol(self, cluster_ids: Mapping[str, int]) -> dict[str, Any]:
        """The fault the protocol's ``inject`` takes (a peer named by role becomes its cluster id)."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.seconds is not None:
            out["seconds"] = self.seconds
        if self.peer is not None:
            out["peer"] = cluster_ids[self.peer]
        return out


@dataclass(frozen=True)
class Scenario:
    """What a test opens before its call: two nodes, a link, a source and a destination cache, the baseline call
    (arguments in the value language) and the faults to inject."""

    local: NodeSpec
    remote: NodeSpec
    link: bool
    src: CacheSpec
    dst: CacheSpec
    call: Mapping[str, ValueExpr]
    faults: tuple[Fault, ...] = ()

    def with_(self, **changes: Any) -> Scenario:
        return replace(self, **changes)

    def needs(self) -> list[str]:
        """Capabilities the scenario needs from a backend (placements, registered memory, blocks caches)."""
        need = []
        for cache in (self.src, self.dst):
            need.append(f"placements.{cache.placement}")
            if cache.register:
                need += ["register_cache", "raw_memory"]
            if cache.blocks:
                need.append("blocks_cache")
        return need


# ---------------------------------------------------------------------------------------------------- clauses


@dataclass(frozen=True)
class Source:
    kind: str  # doc | facts
    ref: str
    en: str | None = None
    zh: str | None = None


#: the procedure of the stateful suite (a clause whose tests are histories)
HISTORY_PROCEDURE = "history"


@dataclass(frozen=True)
class ProcedureSpec:
    """How a clause's tests run: a registered procedure (``name``) and its settings."""

    name: str = "call"
    style: str = "keywords"  # call: keywords, positional, only_given
    steps: tuple[str, ...] = ()  # call: run before the call under test
    type: str | None = None  # construct: the node.api type
    table: str | None = None  # enum_values: the types table
    sizes: str | None = None  # element_size: documented | vendor
    threads: int = 4  # concurrent
    each: str | None = None  # random_layouts: one stream per data_type / transfer
    kwargs_may_be_named: bool = False  # inspect_signature: names taken through **kwargs may be named parameters
    products: tuple[str, ...] = ()  # product: the types.products lists whose products the clause judges
    unlisted: bool = False  # product: the clause also judges a product in no list (none declared, an emulator)
    data_types: str | None = None  # covering_array: same | different (the destination's data type)


@dataclass(frozen=True)
class Generate:
    """Invalid inputs generated from a clause's restriction: each rule on each side named, and in pairs."""

    rules: tuple[str, ...]
    sides: tuple[str, ...] | None = None
    pairs: bool = False


@dataclass(frozen=True)
class FirstPush:
    """A push a case makes before its call under test (the baseline call with ``args``, under ``fault``), which
    must be refused: what a later push over the same link must survive."""

    args: Mapping[str, ValueExpr]
    fault: Fault | None = None


@dataclass(frozen=True, eq=False)
class Case:
    """One input that triggers a clause: its arguments, its whole scenario and the outcome it expects."""

    name: str
    args: Mapping[str, ValueExpr]
    scenario: Scenario
    expect: Expectation
    steps: tuple[str, ...] = ()
    note: str | None = None
    first: FirstPush | None = None

    def __repr__(self) -> str:
        return f"Case({self.name})"


@dataclass(frozen=True, eq=False)
class Clause:
    id: str
    title: str
    level: Level
    family: str
    source: Source
    expect: Expectation
    scenario: Scenario  # the baseline merged with the clause's overrides
    cases: tuple[Case, ...] = ()
    procedure: ProcedureSpec = ProcedureSpec()
    generate: Generate | None = None
    requires: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    refines: str | None = None
    deviation: str | None = None
    note: str | None = None
    history: str | None = None  # the situation of a push in a history that this clause judges

    def __repr__(self) -> str:
        return f"Clause({self.id})"


# ---------------------------------------------------------------------------------------------------- types


@dataclass(frozen=True)
class Encoding:
    """How an element of a DataType encodes its value: ``float`` (a sign bit, ``exponent_bits``,
    ``mantissa_bits``), ``signed`` (two's complement), ``unsigned`` or ``bool``."""

    kind: str
    exponent_bits: int = 0
    mantissa_bits: int = 0


@dataclass(frozen=True)
class Member:
    """One member of an enum table; ``size`` (DataType) is the element size in bytes, ``size_source`` says
    whose it is where the documentation gives none (vendor), ``encoding`` how an element encodes its value."""

    value: int
    size: int | None = None
    size_source: str | None = None
    encoding: Encoding | None = None


@dataclass(frozen=True)
class EnumTable:
    kind: str  # Enum | IntEnum
    members: Mapping[str, Member]


@dataclass(frozen=True)
class FieldSpec:
    """A field of one of the API's value types (a constructor argument and, unless ``attribute`` is false, an
    attribute of the object)."""

    type: str
    domain: str | None = None
    has_default: bool = False
    default: Any = None
    attribute: bool = True


@dataclass(frozen=True)
class RecordType:
    fields: Mapping[str, FieldSpec]
    base: str | None = None  # an exception's base class


@dataclass(frozen=True)
class Bounds:
    min: int
    max: int


@dataclass(frozen=True)
class TransferPair:
    src: str
    dst: str
    level: Level


@dataclass(frozen=True)
class Products:
    """The applicability tables: named lists of product names (``supported``, ``unsupported``, ...), and
    ``only_named``: the product families within which only the listed products are supported (the A2 note); as a
    list, ``only_named`` holds the families."""

    lists: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: EMPTY)
    only_named: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: EMPTY)

    def lists_holding(self, product: str) -> list[str]:
        """The names of the lists that hold ``product`` (case aside)."""
        name = product.lower()
        return [k for k, names in self.lists.items() if name in {n.lower() for n in names}]


@dataclass(frozen=True)
class Operation:
    """What kind of transfer a spec's operation is (its ``operation`` section): which side is written and judged,
    which parameters hold the remote key and the local cache, and what one moved entry is."""

    direction: str  # push: the local cache is read and the remote one written; pull: the other way round
    key: str  # the parameter holding the remote cache's key
    cache: str  # the parameter holding the local Cache
    unit: str  # batch: one batch entry per tensor (single indices); blocks: block lists, pairwise
    src_entries: str  # the parameter naming the source entries
    dst_entries: str  # ... and the destination's (dst_batch_index: the key's batch index)

    @property
    def lists(self) -> bool:
        """Whether the entries parameters are lists (blocks) rather than single indices (a batch entry)."""
        return self.unit == "blocks"

    @property
    def pulls(self) -> bool:
        return self.direction == "pull"

    @property
    def src_node(self) -> str:
        """The node the source cache lives on: the local one for a push, the remote (the key's) for a pull."""
        return "remote" if self.pulls else "local"

    @property
    def dst_node(self) -> str:
        """The node the destination cache lives on (the side a call is judged on)."""
        return "local" if self.pulls else "remote"

    @property
    def remote_side(self) -> str:
        """Which of the call's caches (``src`` or ``dst``) the key names: the one on the remote node."""
        return "src" if self.pulls else "dst"

    @property
    def local_side(self) -> str:
        """Which of the call's caches (``src`` or ``dst``) the ``cache`` parameter passes: the local one."""
        return "dst" if self.pulls else "src"

    @property
    def key_entries(self) -> str | None:
        """The entries name a batch key carries (its batch index): the remote side's (push_cache's
        dst_batch_index, pull_cache's src_batch_index), a name no parameter has; None for block lists, which
        are parameters of their own."""
        if self.lists:
            return None
        return self.src_entries if self.pulls else self.dst_entries


@dataclass(frozen=True)
class Types:
    enums: Mapping[str, EnumTable]
    records: Mapping[str, RecordType]
    products: Products
    transfers: tuple[TransferPair, ...]
    domains: Mapping[str, Bounds]
    byte_order: str = "little"  # of a tensor element in memory

    def element_size(self, data_type: str) -> int | None:
        member = self.enums["DataType"].members.get(data_type) if "DataType" in self.enums else None
        return member.size if member is not None else None

    def field_type(self, name: str) -> str | None:
        """The type of the first value-type field called ``name`` (constructor arguments are typed by it)."""
        for record in self.records.values():
            if name in record.fields:
                return record.fields[name].type
        return None


# ---------------------------------------------------------------------------------------------------- signature


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: str  # positional_or_keyword | var_keyword
    type: str
    required: bool = False
    has_default: bool = False
    default: Any = None
    #: a var_keyword entry's documented defaults, (keyword, default) in the spec's order
    keyword_defaults: tuple[tuple[str, Any], ...] = ()

    @property
    def through_kwargs(self) -> tuple[str, ...]:
        """The parameter names a ``var_keyword`` entry takes (listed, comma-separated, in its type)."""
        return tuple(n.strip() for n in self.type.split(",") if n.strip()) if self.kind == "var_keyword" else ()


@dataclass(frozen=True)
class Signature:
    """push_cache's signature over a range of releases ([since, until))."""

    since: str | None
    until: str | None
    parameters: tuple[Parameter, ...]
    returns: str | None = None
    var_kwargs: bool = False

    @property
    def declared(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.kind != "var_keyword")

    @property
    def names(self) -> tuple[str, ...]:
        """Every parameter name the release takes: declared ones, then those taken through ``**kwargs``."""
        return tuple(p.name for p in self.declared) + self.through_kwargs

    @property
    def through_kwargs(self) -> tuple[str, ...]:
        """The parameter names the release takes through ``**kwargs`` (passed by keyword, whatever the call's
        style)."""
        return tuple(n for p in self.parameters for n in p.through_kwargs)

    @property
    def takes_var_kwargs(self) -> bool:
        return self.var_kwargs or any(p.kind == "var_keyword" for p in self.parameters)

    @property
    def defaulted(self) -> tuple[str, ...]:
        """The parameters a call may leave to a default: declared ones with a default (not required), then the
        keywords ``**kwargs`` takes whose default the spec states."""
        return (tuple(p.name for p in self.declared if p.has_default and not p.required)
                + tuple(name for p in self.parameters for name, _ in p.keyword_defaults))

    def default(self, name: str) -> Any:
        for p in self.declared:
            if p.name == name and p.has_default:
                return p.default
        for p in self.parameters:
            for keyword, value in p.keyword_defaults:
                if keyword == name:
                    return value
        return None


# ---------------------------------------------------------------------------------------------------- spec


@dataclass(frozen=True)
class ModelLayout:
    """A real model's KV cache as push_cache sees it: ``layers`` x ``tensors_per_layer`` tensors of ``shape``."""

    model: str
    source: str
    layers: int
    tensors_per_layer: int
    shape: tuple[int, ...]
    data_type: str

    @property
    def num_tensors(self) -> int:
        return self.layers * self.tensors_per_layer


@dataclass(frozen=True)
class HistoryStream:
    """One stream of histories: steps per history, a long run of pushes over one link first, where its caches'
    layouts come from (``drawn`` or ``models``), what its injected delays may cost (ms) and its live caches hold
    (bytes) in all."""

    name: str
    steps: int
    layouts: str = "drawn"
    pushes: int = 0
    wait_ms: int = 0
    bytes: int | None = None
    situations: tuple[str, ...] | None = None  # the situations its pushes are drawn in (None: every one; (): none)
    shrink: bool = True  # whether a failing history is shrunk


@dataclass(frozen=True)
class DelayClass:
    """A class of injected delays within the budget: fractions of llm.SyncKvCacheWaitTime in [start, below)."""

    name: str
    start: float
    below: float


@dataclass(frozen=True)
class Delays:
    """The histories' injected delays as fractions of their node's budget (generation.histories.delays)."""

    within: tuple[DelayClass, ...]
    draw_below: float
    beyond: float
    per_layer: float

    def class_of(self, fraction: float) -> str | None:
        """The within class ``fraction`` falls in (None: at or past the budget)."""
        return next((c.name for c in self.within if c.start <= fraction < c.below), None)


@dataclass(frozen=True)
class Histories:
    """The domains the stateful suite draws its histories from (domains named in the spec resolved to bounds)."""

    nodes: Bounds
    cluster_id: Bounds
    cache_id: Bounds
    sync_kv_timeout_ms: Bounds
    pool_page_shift: Bounds
    pool_bytes: Bounds
    guard_bytes: Bounds
    repeat: Bounds
    streams: Mapping[str, HistoryStream]
    delays: Delays
    model_layouts: tuple[ModelLayout, ...] = ()
    #: the clause saying what a transfer that took longer than its node's budget may do (None: the clause of the
    #: situation delay_over_layers, a push's)
    overtime: str | None = None
    #: the family operation the histories mix in, moving the run's unit the other way (None: none)
    companion: str | None = None
    #: the family operations the histories mix in on the other unit, on caches of their own kind (none: none)
    alongside: tuple[str, ...] = ()


@dataclass(frozen=True)
class Generation:
    """Bounds of the layouts property tests draw, and the examples per stream (certify profile)."""

    rank: Bounds
    batch: Bounds
    layers: Bounds
    tensors: Bounds
    tensor_bytes: Bounds
    examples: Mapping[str, int]
    histories: Histories | None = None  # the stateful suite's domains (None: the spec has no histories)


@dataclass(frozen=True)
class CoverageDimension:
    """One dimension of the coverage section: its kind (the spec's comment on the section says what each means)
    and that kind's parameters as the spec gives them."""

    name: str
    kind: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Coverage:
    """The dimensions whose partitions every certify run must reach, and the pairs of them it must reach."""

    dimensions: Mapping[str, CoverageDimension]
    pairs: tuple[tuple[str, str], ...]
    blocks_verdict: bool = False  # a full run leaving one unreached is NOT CERTIFIED


@dataclass(frozen=True, eq=False)
class Spec:
    version: str
    api: str  # the operation the spec describes: its method on CacheManager
    operation: Operation
    releases: tuple[str, ...]
    clauses: tuple[Clause, ...]
    scenario: Scenario
    types: Types
    signatures: tuple[Signature, ...]
    generation: Generation | None  # None: the spec draws no layouts
    path: pathlib.Path
    sha256: str
    release: str | None = None  # set by for_release(): the release the clauses were selected for
    coverage: Coverage | None = None  # None: the spec asks for no domain coverage
    _by_id: Mapping[str, Clause] = field(default_factory=lambda: EMPTY, repr=False)

    def clause(self, id: str) -> Clause:  # noqa: A002 - the public API names it id
        found = self._by_id.get(id)
        if found is None or found not in self.clauses:
            scope = f" for release {self.release}" if self.release else ""
            raise KeyError(f"no clause {id!r} in {self.path}{scope}{suggest(id, [c.id for c in self.clauses])}")
        return found

    def release_index(self, release: str) -> int:
        try:
            return self.releases.index(release)
        except ValueError:
            raise SpecError(self.path, "release argument", f"unknown release {release!r}; known releases: "
                            f"{', '.join(self.releases)}") from None

    def in_range(self, since: str | None, until: str | None, release: str) -> bool:
        """Whether ``release`` lies in [since, until)."""
        index = self.release_index(release)
        low = self.releases.index(since) if since is not None else 0
        high = self.releases.index(until) if until is not None else len(self.releases)
        return low <= index < high

    def applies(self, clause: Clause, release: str) -> bool:
        return self.in_range(clause.since, clause.until, release)

    def for_release(self, release: str) -> Spec:
        """A copy holding only the clauses that hold in ``release``."""
        self.release_index(release)
        kept = tuple(c for c in self.clauses if self.applies(c, release))
        return replace(self, clauses=kept, release=release)

    def signature_for(self, release: str) -> Signature:
        """The signature whose [since, until) range contains ``release`` (the loader checked that one does)."""
        return next(s for s in self.signatures if self.in_range(s.since, s.until, release))

    def situations(self) -> dict[str, Clause]:
        """The history situations the clauses declare, each with its clause (within one release, at most one)."""
        return {c.history: c for c in self.clauses if c.history is not None}

    def all_parameters(self) -> tuple[str, ...]:
        """Every parameter name of every release's signature, the newest declaration order first, then those
        some release takes through ``**kwargs``."""
        names: dict[str, None] = {}
        for sig in reversed(self.signatures):
            names.update(dict.fromkeys(p.name for p in sig.declared))
        for sig in self.signatures:
            names.update(dict.fromkeys(n for p in sig.parameters for n in p.through_kwargs))
        return tuple(names)

    def newest_release(self, declared: Any = None) -> str:
        """The newest release the backend declares (capabilities ``spec_versions``), else the newest."""
        if declared:
            known = [r for r in self.releases if r in set(declared)]
            if known:
                return known[-1]
        return self.releases[-1]

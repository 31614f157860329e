"""The one loader for the push_cache spec (``spec/push_cache.yaml``, installed as ``push_cache_spec``).

``load_spec()`` parses the YAML, validates it against ``spec.schema.json`` (JSON Schema draft 2020-12) and then
checks the cross-references the schema cannot express. Every problem is a :class:`SpecError` whose text is one
line: ``<file>: <where>: <what was expected>``, where ``<where>`` is a JSON path such as ``$.clauses[3].level``
(or ``line L, column C`` for a YAML syntax error).

The returned objects are frozen dataclasses; the dicts inside them (``args``, ``scenario``, ``expect``, ``types``,
``raw`` ...) are shared with the load cache, so treat them as read-only.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import importlib.resources
import json
import pathlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import yaml

__all__ = [
    "EXCEPTIONS",
    "FAMILIES",
    "LEVELS",
    "Case",
    "Clause",
    "Spec",
    "SpecError",
    "default_schema_path",
    "default_spec_path",
    "describe_expect",
    "load_spec",
]

SPEC_PACKAGE = "push_cache_spec"
SPEC_FILE = "push_cache.yaml"
SCHEMA_FILE = "spec.schema.json"

LEVELS: tuple[str, ...] = ("must", "should", "may")
FAMILIES: tuple[str, ...] = (
    "signature", "types", "param", "restriction", "order", "remote", "data",
    "safety", "timeout", "config", "applicability",
)
EXCEPTIONS: tuple[str, ...] = ("TypeError", "ValueError", "LLMException")


# --------------------------------------------------------------------------------------------------------------
# errors


class SpecError(Exception):
    """A spec that cannot be used. ``str(e)`` is one line: ``<file>: <where>: <what>``."""

    def __init__(self, file: str | pathlib.Path, where: str, what: str) -> None:
        self.file = str(file)
        self.where = _one_line(where)
        self.what = _one_line(what)
        #: every (where, what) found by the semantic checks; the message shows the first
        self.problems: list[tuple[str, str]] = [(self.where, self.what)]
        super().__init__(f"{self.file}: {self.where}: {self.what}")


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _path(*parts: str | int) -> str:
    """JSON path in the same notation jsonschema uses: ``$.clauses[3].level``."""
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# --------------------------------------------------------------------------------------------------------------
# data model


@dataclass(frozen=True)
class Case:
    """One input that triggers a clause. ``expect`` is None when the clause's expect applies."""

    name: str
    args: dict[str, Any]
    scenario: dict[str, Any]
    expect: dict[str, Any] | None
    note: str | None
    steps: tuple[str, ...] = ()  # run after the scenario is built, before the call under test

    def __hash__(self) -> int:  # the dict fields are not hashable; equal cases share name and note
        return hash((Case, self.name, self.note))


@dataclass(frozen=True)
class Clause:
    id: str
    title: str
    level: str
    family: str
    source: dict[str, Any]
    since: str | None
    until: str | None
    refines: str | None
    requires: tuple[str, ...]
    deviation: str | None
    scenario: dict[str, Any]
    cases: tuple[Case, ...]
    expect: dict[str, Any]
    procedure: dict[str, Any] = dataclasses.field(default_factory=lambda: {"name": "call"})
    note: str | None = None
    generate: dict[str, Any] | None = None  # invalid inputs generated from the clause's restriction

    def __hash__(self) -> int:  # equal clauses share their id
        return hash((Clause, self.id, self.level))

    @property
    def doc_sentence(self) -> tuple[str | None, str | None]:
        """The source sentence as (English, Chinese); None where the spec has none."""
        return self.source.get("en"), self.source.get("zh")

    def expect_for(self, case: Case) -> dict[str, Any]:
        """The outcome expected for ``case``: its own ``expect`` if it has one, else the clause's."""
        return case.expect if case.expect is not None else self.expect

    @property
    def outcome_summary(self) -> str:
        return describe_expect(self.expect)


@dataclass(frozen=True)
class Spec:
    version: str
    releases: tuple[str, ...]
    clauses: tuple[Clause, ...]
    scenario: dict[str, Any]
    types: dict[str, Any]
    signature: tuple[dict[str, Any], ...]
    path: pathlib.Path
    sha256: str
    raw: dict[str, Any]
    release: str | None = None  # set by for_release(): the release the clauses were selected for

    def __hash__(self) -> int:  # equal specs come from the same file content and release
        return hash((Spec, str(self.path), self.sha256, self.release, len(self.clauses)))

    def clause(self, id: str) -> Clause:  # noqa: A002 - the public API names it id
        for clause in self.clauses:
            if clause.id == id:
                return clause
        ids = [c.id for c in self.clauses]
        scope = f" for release {self.release}" if self.release else ""
        raise KeyError(f"no clause {id!r} in {self.path}{scope}{_suggest(id, ids)}")

    @property
    def generation(self) -> dict[str, Any]:
        """Bounds for the layouts property tests draw (the spec's ``generation`` section; empty if absent)."""
        return dict(self.raw.get("generation") or {})

    def release_index(self, release: str) -> int:
        try:
            return self.releases.index(release)
        except ValueError:
            raise SpecError(self.path, "release argument", f"unknown release {release!r}; known releases: "
                            f"{', '.join(self.releases)}") from None

    def _in_range(self, since: str | None, until: str | None, release: str) -> bool:
        index = self.release_index(release)
        low = self.releases.index(since) if since is not None else 0
        high = self.releases.index(until) if until is not None else len(self.releases)
        return low <= index < high

    def applies(self, clause: Clause, release: str) -> bool:
        """Whether ``clause`` holds in ``release`` (``since`` inclusive, ``until`` exclusive)."""
        return self._in_range(clause.since, clause.until, release)

    def for_release(self, release: str) -> Spec:
        """A copy holding only the clauses that hold in ``release``."""
        self.release_index(release)
        kept = tuple(c for c in self.clauses if self.applies(c, release))
        return dataclasses.replace(self, clauses=kept, release=release)

    def families(self) -> list[str]:
        """Families that have at least one clause, in the canonical order of FAMILIES."""
        present = {c.family for c in self.clauses}
        return [f for f in FAMILIES if f in present]

    def signature_for(self, release: str) -> dict[str, Any]:
        """The signature entry whose [since, until) range contains ``release``."""
        self.release_index(release)
        for entry in self.signature:
            if self._in_range(entry.get("since"), entry.get("until"), release):
                return entry
        raise SpecError(self.path, "$.signature", f"no signature entry covers release {release!r}")


def signature_parameters(entry: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """A signature entry's parameter names: those it declares, and those it takes through ``**kwargs`` (listed,
    comma-separated, in that parameter's type text)."""
    declared, through_kwargs = [], []
    for p in entry.get("parameters", []):
        if p.get("kind") == "var_keyword":
            through_kwargs += [n.strip() for n in str(p.get("type", "")).split(",") if n.strip()]
        else:
            declared.append(p["name"])
    return declared, through_kwargs


def describe_expect(expect: Mapping[str, Any] | None) -> str:
    """A short human summary: ``raises LLMException(LLM_PARAM_INVALID)``, ``success``, ``any of: ...``."""
    if not expect:
        return "-"
    if "raises" in expect:
        names = list(expect["raises"])
        if expect.get("status") and names == ["LLMException"]:
            return f"raises LLMException({expect['status']})"
        return "raises " + " or ".join(names)
    if expect.get("outcome") == "any_of":
        return "any of: " + " | ".join(describe_expect(e) for e in expect.get("allowed", ()))
    if expect.get("outcome") == "success":
        return f"success ({expect['post']})" if expect.get("post") else "success"
    return str(expect.get("outcome", "?"))


# --------------------------------------------------------------------------------------------------------------
# loading


def default_spec_path() -> pathlib.Path:
    """The packaged spec: ``push_cache_spec/push_cache.yaml``."""
    return pathlib.Path(str(importlib.resources.files(SPEC_PACKAGE) / SPEC_FILE))


def default_schema_path() -> pathlib.Path:
    return pathlib.Path(str(importlib.resources.files(SPEC_PACKAGE) / SCHEMA_FILE))


def load_spec(path: str | pathlib.Path | None = None, release: str | None = None) -> Spec:
    """Load, validate and check a spec (default: the packaged one); optionally select one release.

    Results are cached per (resolved path, mtime, size), so repeated loads are cheap and see edits.
    """
    file = pathlib.Path(path) if path is not None else default_spec_path()
    try:
        resolved = file.resolve()
        stat = resolved.stat()
    except OSError as exc:
        raise SpecError(file, "$", f"cannot read spec: {exc.strerror or exc}") from None
    spec = _load_cached(str(resolved), stat.st_mtime_ns, stat.st_size)
    return spec.for_release(release) if release is not None else spec


@functools.lru_cache(maxsize=16)
def _load_cached(path: str, _mtime_ns: int, _size: int) -> Spec:
    file = pathlib.Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise SpecError(file, "$", f"cannot read spec: {exc.strerror or exc}") from None
    raw = _parse_yaml(file, data)
    _validate_schema(file, raw)
    problems = list(_semantic_problems(raw))
    if problems:
        where, what = problems[0]
        error = SpecError(file, where, what)
        error.problems = problems
        raise error
    return _build(file, raw, hashlib.sha256(data).hexdigest())


# ---- YAML -----------------------------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key repeated in one mapping (YAML would silently keep the last one)."""

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


def _parse_yaml(file: pathlib.Path, data: bytes) -> Any:
    try:
        return yaml.load(data, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
        what = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            what = f"{exc.context}: {exc.problem}"
        raise SpecError(file, where, f"YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise SpecError(file, "YAML", f"YAML error: {exc}") from None


# ---- schema ---------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(default_schema_path().read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
               float: "a number", type(None): "null"}


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _got(value: Any) -> str:
    return "null" if value is None else f"{_json_type(value)} {_short(value)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _validate_schema(file: pathlib.Path, raw: Any) -> None:
    errors = list(_validator().iter_errors(raw))
    if not errors:
        return
    best = jsonschema.exceptions.best_match(errors)
    assert best is not None
    where, what = _describe_schema_error(best)
    raise SpecError(file, where, what)


def _parts(error: jsonschema.ValidationError) -> tuple[str, Any, Any, Any]:
    """(keyword, the keyword's value in the schema, the offending instance, the subschema)."""
    return str(error.validator), error.validator_value, error.instance, error.schema


def _describe_schema_error(error: jsonschema.ValidationError) -> tuple[str, str]:
    where = error.json_path
    kind, expected, value, schema = _parts(error)
    if isinstance(schema, dict) and "x-error" in schema:
        return where, str(schema["x-error"])
    if "propertyNames" in error.schema_path:
        # jsonschema reports a bad key at the mapping that holds it; point at the key itself.
        return f"{where}.{value}", f"key {value!r} is not allowed here; {_describe_schema_error_text(error)}"
    if kind == "additionalProperties" and isinstance(value, dict):
        allowed = sorted(schema.get("properties", {}))
        extra = [k for k in value if k not in allowed]
        if extra:
            if not isinstance(extra[0], str):
                hint = (" (YAML 1.1 reads unquoted on/off/yes/no/true/false/null and numbers as non-strings; "
                        "quote the key)")
                return f"{where}.{extra[0]}", (f"unknown key {extra[0]!r}{hint}; "
                                               f"allowed keys: {', '.join(allowed)}")
            key = extra[0]
            return f"{where}.{key}", (f"unknown key {key!r}{_suggest(key, allowed)}; "
                                      f"allowed keys: {', '.join(allowed)}")
    if kind == "required" and isinstance(value, dict):
        missing = [k for k in expected if k not in value]
        return where, f"missing required key {missing[0]!r}" if missing else error.message
    if kind == "dependentRequired" and isinstance(value, dict):
        for key, needs in expected.items():
            lacking = [n for n in needs if key in value and n not in value]
            if lacking:
                return where, f"key {key!r} needs key {lacking[0]!r} alongside it"
    return where, _describe_schema_error_text(error)


def _describe_schema_error_text(error: jsonschema.ValidationError) -> str:
    kind, expected, value, schema = _parts(error)
    if kind == "enum":
        return f"expected one of {', '.join(map(str, expected))}; got {_short(value)}"
    if kind == "const":
        return f"expected {_short(expected)}; got {_short(value)}"
    if kind == "type":
        names = [expected] if isinstance(expected, str) else list(expected)
        return f"expected {' or '.join(names)}; got {_got(value)}"
    if kind == "pattern":
        return f"expected a string matching {expected}; got {_short(value)}"
    if kind == "minItems":
        return f"expected at least {expected} item(s); got {len(value)}"
    if kind == "maxItems":
        return f"expected at most {expected} item(s); got {len(value)}"
    if kind == "minProperties":
        return f"expected at least {expected} key(s); got none" if not value else error.message
    if kind == "maxProperties":
        return f"expected at most {expected} key(s); got {len(value)}"
    if kind == "minLength":
        return "expected a non-empty string"
    if kind == "uniqueItems":
        return f"expected unique items; got duplicates in {_short(value)}"
    return error.message


# ---- semantic checks ------------------------------------------------------------------------------------------

Problem = tuple[str, str]


def _semantic_problems(raw: dict[str, Any]) -> Iterator[Problem]:
    releases = [r["name"] for r in raw["releases"]]
    yield from _check_releases(raw, releases)
    yield from _check_types(raw)
    yield from _check_signature(raw, releases)
    statuses = set(raw["types"]["LLMStatusCode"]["members"])
    clauses = raw["clauses"]

    by_id: dict[str, int] = {}
    for i, clause in enumerate(clauses):
        cid = clause["id"]
        if cid in by_id:
            yield _path("clauses", i, "id"), f"duplicate clause id {cid!r} (first at {_path('clauses', by_id[cid])})"
        else:
            by_id[cid] = i

    for i, clause in enumerate(clauses):
        at = ("clauses", i)
        cid = clause["id"]
        family = cid.split(".")[1]
        if family != clause["family"]:
            yield (_path(*at, "family"),
                   f"family {clause['family']!r} does not match the id {cid!r} (second component {family!r})")
        yield from _check_range(clause, releases, at)
        source = clause["source"]
        if clause["level"] == "must" and source["kind"] == "doc":
            missing = [lang for lang in ("en", "zh") if not source.get(lang)]
            if missing:
                yield (_path(*at, "source"),
                       f"a must clause sourced from the documentation needs both en and zh sentences "
                       f"(missing: {', '.join(missing)})")
        target = clause.get("refines")
        if target is not None:
            yield from _check_refines(clause, target, clauses, by_id, at)
        yield from _check_expect(clause["expect"], statuses, (*at, "expect"))
        names: dict[str, int] = {}
        for j, case in enumerate(clause.get("cases") or ()):
            cat = (*at, "cases", j)
            if case["name"] in names:
                yield (_path(*cat, "name"), f"duplicate case name {case['name']!r} in clause {cid} "
                       f"(first at {_path(*at, 'cases', names[case['name']])})")
            names.setdefault(case["name"], j)
            if case.get("expect") is not None:
                yield from _check_expect(case["expect"], statuses, (*cat, "expect"))


def _check_releases(raw: dict[str, Any], releases: list[str]) -> Iterator[Problem]:
    seen: dict[str, int] = {}
    for i, name in enumerate(releases):
        if name in seen:
            yield _path("releases", i, "name"), f"duplicate release {name!r} (first at {_path('releases', seen[name])})"
        seen.setdefault(name, i)
    if raw["spec_version"] != releases[-1]:
        yield (_path("spec_version"), f"expected the newest release, {releases[-1]!r} (the last entry of "
               f"releases); got {raw['spec_version']!r}")


def _check_types(raw: dict[str, Any]) -> Iterator[Problem]:
    for name, table in raw["types"].items():
        if not (isinstance(table, dict) and "members" in table):
            continue  # not an enum table (the schema checked the shape of those that are)
        seen: dict[int, str] = {}
        for member, entry in table["members"].items():
            value = entry["value"]
            if value in seen:
                yield (_path("types", name, "members", member, "value"),
                       f"value {value} already used by {name}.{seen[value]}")
            seen.setdefault(value, member)


def _check_marker(value: str | None, releases: list[str], at: tuple[str | int, ...]) -> Iterator[Problem]:
    if value is not None and value not in releases:
        yield _path(*at), f"unknown release {value!r}{_suggest(value, releases)}; known releases: {', '.join(releases)}"


def _check_range(obj: Mapping[str, Any], releases: list[str], at: tuple[str | int, ...]) -> Iterator[Problem]:
    since, until = obj.get("since"), obj.get("until")
    problems = [*_check_marker(since, releases, (*at, "since")), *_check_marker(until, releases, (*at, "until"))]
    yield from problems
    if not problems and since is not None and until is not None:
        if releases.index(since) >= releases.index(until):
            yield (_path(*at, "until"), f"until ({until}) must be a later release than since ({since}); "
                   "until is exclusive")


def _check_signature(raw: dict[str, Any], releases: list[str]) -> Iterator[Problem]:
    covered: dict[str, int] = {}
    for i, entry in enumerate(raw["signature"]):
        at = ("signature", i)
        problems = list(_check_range(entry, releases, at))
        yield from problems
        names: set[str] = set()
        for j, param in enumerate(entry["parameters"]):
            if param["name"] in names:
                yield _path(*at, "parameters", j, "name"), f"duplicate parameter {param['name']!r}"
            names.add(param["name"])
        if problems:
            continue
        low = releases.index(entry["since"]) if entry.get("since") else 0
        high = releases.index(entry["until"]) if entry.get("until") else len(releases)
        for release in releases[low:high]:
            if release in covered:
                yield (_path(*at), f"release {release} is also covered by {_path('signature', covered[release])}; "
                       "signature ranges must not overlap")
                break
            covered[release] = i


def _check_refines(clause: Mapping[str, Any], target: str, clauses: list[dict[str, Any]],
                   by_id: Mapping[str, int], at: tuple[str | int, ...]) -> Iterator[Problem]:
    where = _path(*at, "refines")
    if target == clause["id"]:
        yield where, "a clause cannot refine itself"
        return
    if target not in by_id:
        yield where, f"refines names no clause: {target!r}{_suggest(target, by_id)}"
        return
    refined = clauses[by_id[target]]
    if clause["level"] == "should" and refined["level"] not in ("must", "may"):
        yield (where, f"a should clause must refine a must or may clause; {target} is "
               f"{refined['level']!r}")
        return
    seen = {clause["id"]}
    current: Mapping[str, Any] | None = refined
    while current is not None and current.get("refines"):
        if current["id"] in seen:
            yield where, f"refines forms a cycle through {current['id']}"
            return
        seen.add(current["id"])
        nxt = current["refines"]
        current = clauses[by_id[nxt]] if nxt in by_id else None


def _check_expect(expect: Mapping[str, Any], statuses: set[str], at: tuple[str | int, ...]) -> Iterator[Problem]:
    if "status" in expect:
        status = expect["status"]
        raises = list(expect.get("raises", ()))
        if raises != ["LLMException"]:
            yield (_path(*at, "status"), f"status is only allowed with raises: [LLMException]; "
                   f"got raises: [{', '.join(raises)}]")
        if status not in statuses:
            yield (_path(*at, "status"), f"unknown status {status!r}{_suggest(status, statuses)}; "
                   "expected a member of types.LLMStatusCode.members")
    for k, allowed in enumerate(expect.get("allowed") or ()):
        yield from _check_expect(allowed, statuses, (*at, "allowed", k))


# ---- building -------------------------------------------------------------------------------------------------


def _deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` merged into a copy of ``base``; mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _inherit(raw_clauses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Apply the refines convention: a refining clause without cases takes the refined clause's cases (those
    without their own expect), scenario (its own scenario merged over it) and requires (union)."""
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
            result["scenario"] = _deep_merge(parent.get("scenario") or {}, clause.get("scenario") or {})
            requires = list(parent.get("requires") or ())
            requires += [r for r in clause.get("requires") or () if r not in requires]
            result["requires"] = requires
            result.setdefault("procedure", parent.get("procedure"))
        done[clause["id"]] = result
        return result

    return [resolve(c) for c in raw_clauses]


def _build(file: pathlib.Path, raw: dict[str, Any], sha256: str) -> Spec:
    clauses = tuple(_build_clause(c) for c in _inherit(raw["clauses"]))
    return Spec(
        version=str(raw["spec_version"]),
        releases=tuple(r["name"] for r in raw["releases"]),
        clauses=clauses,
        scenario=raw["scenario"],
        types=raw["types"],
        signature=tuple(raw["signature"]),
        path=file,
        sha256=sha256,
        raw=raw,
    )


def _build_clause(c: dict[str, Any]) -> Clause:
    cases = tuple(
        Case(
            name=k["name"],
            args=k.get("args") or {},
            scenario=k.get("scenario") or {},
            expect=k.get("expect"),
            note=k.get("note"),
            steps=tuple(k.get("steps") or ()),
        )
        for k in c.get("cases") or ()
    )
    return Clause(
        id=c["id"],
        title=c["title"],
        level=c["level"],
        family=c["family"],
        source=c["source"],
        since=c.get("since"),
        until=c.get("until"),
        refines=c.get("refines"),
        requires=tuple(c.get("requires") or ()),
        deviation=c.get("deviation"),
        scenario=c.get("scenario") or {},
        cases=cases,
        expect=c["expect"],
        procedure=dict(c.get("procedure") or {"name": "call"}),
        generate=c.get("generate"),
        note=c.get("note"),
    )

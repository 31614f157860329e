"""Whether a parsed spec can be used: its JSON Schema (draft 2020-12), then the cross-references the schema
cannot express (unique ids and case names, release markers, signature ranges, refines, status names).

Every problem is a (JSON path, what was expected) pair; :func:`validate` raises the first as a
:class:`~conformance_tests.spec.errors.SpecError` and keeps them all in ``problems``.
"""

from __future__ import annotations

import functools
import pathlib
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema

from .errors import SpecError, json_path, suggest
from .levels import Level
from .paths import schema
from .value_language import ValueLanguageError, parse_value


def validate(file: pathlib.Path, raw: Any) -> None:
    """Raise a SpecError for the first problem of ``raw`` (the parsed YAML of ``file``)."""
    _validate_schema(file, raw)
    problems = list(_semantic_problems(raw))
    if problems:
        where, what = problems[0]
        error = SpecError(file, where, what)
        error.problems = problems
        raise error


# ---- schema ---------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    # the packaged schema's own validity is a self-test's (tests/spec/test_packaged_spec.py), not every run's:
    # checking it against the metaschema took a fifth of a certify process's start
    document = schema()
    return jsonschema.validators.validator_for(document)(document)


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
            return f"{where}.{key}", (f"unknown key {key!r}{suggest(key, allowed)}; "
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
    yield from _check_generation(raw)
    yield from _check_coverage(raw)
    yield from _check_operation(raw)
    statuses = set(raw["types"]["LLMStatusCode"]["members"])
    clauses = raw["clauses"]
    yield from _check_values((raw["scenario"].get("call") or {}), ("scenario", "call"))

    languages = raw.get("languages", ["en", "zh"])  # the languages of the operation's recorded pages
    by_id: dict[str, int] = {}
    for i, clause in enumerate(clauses):
        cid = clause["id"]
        if cid in by_id:
            yield json_path("clauses", i, "id"), f"duplicate clause id {cid!r} (first at {json_path('clauses', by_id[cid])})"
        else:
            by_id[cid] = i
        if not cid.startswith(f"{raw['api']}."):
            yield json_path("clauses", i, "id"), f"a clause of {raw['api']} must be named {raw['api']}.<family>...; got {cid!r}"

    for i, clause in enumerate(clauses):
        at = ("clauses", i)
        cid = clause["id"]
        family = cid.split(".")[1]
        if family != clause["family"]:
            yield (json_path(*at, "family"),
                   f"family {clause['family']!r} does not match the id {cid!r} (second component {family!r})")
        yield from _check_range(clause, releases, at)
        source = clause["source"]
        if clause["level"] == "must" and source["kind"] == "doc":
            missing = [lang for lang in languages if not source.get(lang)]
            if missing:
                yield (json_path(*at, "source"),
                       f"a must clause sourced from the documentation needs its sentence in each language of "
                       f"the operation's pages ({', '.join(languages)}; missing: {', '.join(missing)})")
        target = clause.get("refines")
        if target is not None:
            yield from _check_refines(clause, target, clauses, by_id, at)
        yield from _check_expect(clause["expect"], statuses, (*at, "expect"))
        names: dict[str, int] = {}
        for j, case in enumerate(clause.get("cases") or ()):
            cat = (*at, "cases", j)
            if case["name"] in names:
                yield (json_path(*cat, "name"), f"duplicate case name {case['name']!r} in clause {cid} "
                       f"(first at {json_path(*at, 'cases', names[case['name']])})")
            names.setdefault(case["name"], j)
            if case.get("expect") is not None:
                yield from _check_expect(case["expect"], statuses, (*cat, "expect"))
            yield from _check_values(case.get("args") or {}, (*cat, "args"))
            yield from _check_values((case.get("first") or {}).get("args") or {}, (*cat, "first", "args"))
            yield from _check_values((case.get("scenario") or {}).get("call") or {}, (*cat, "scenario", "call"))
        yield from _check_values((clause.get("scenario") or {}).get("call") or {}, (*at, "scenario", "call"))
    yield from _check_situations(clauses, releases, raw)


def _check_operation(raw: dict[str, Any]) -> Iterator[Problem]:
    """The operation section names the key and the local cache, and a blocks operation its block lists, as
    parameters every release's signature declares (a batch entry may be the key's own index, no parameter)."""
    op = raw["operation"]
    roles = [("key",), ("cache",)] + ([("entries", "src"), ("entries", "dst")] if op["unit"] == "blocks" else [])
    for sig_at, sig in enumerate(raw["signature"]):
        declared = {p["name"] for p in sig["parameters"]}
        for role in roles:
            name = op[role[0]] if len(role) == 1 else op[role[0]][role[1]]
            if name not in declared:
                yield (json_path("operation", *role), f"{name!r} is not a parameter of "
                       f"{json_path('signature', sig_at)} ({', '.join(sorted(declared))})")


def _check_values(args: Mapping[str, Any], at: tuple[str | int, ...]) -> Iterator[Problem]:
    """Every value of the case value language reads (an {int: ...} within its bounds, every symbol known)."""
    for name, value in args.items():
        try:
            parse_value(value)
        except ValueLanguageError as exc:
            yield json_path(*at, name), str(exc)


def _check_releases(raw: dict[str, Any], releases: list[str]) -> Iterator[Problem]:
    seen: dict[str, int] = {}
    for i, name in enumerate(releases):
        if name in seen:
            yield json_path("releases", i, "name"), f"duplicate release {name!r} (first at {json_path('releases', seen[name])})"
        seen.setdefault(name, i)
    if raw["spec_version"] != releases[-1]:
        yield (json_path("spec_version"), f"expected the newest release, {releases[-1]!r} (the last entry of "
               f"releases); got {raw['spec_version']!r}")


def _check_types(raw: dict[str, Any]) -> Iterator[Problem]:
    for name, table in raw["types"].items():
        if not (isinstance(table, dict) and "members" in table):
            continue  # not an enum table (the schema checked the shape of those that are)
        seen: dict[int, str] = {}
        for member, entry in table["members"].items():
            value = entry["value"]
            if value in seen:
                yield (json_path("types", name, "members", member, "value"),
                       f"value {value} already used by {name}.{seen[value]}")
            seen.setdefault(value, member)


def _check_marker(value: str | None, releases: list[str], at: tuple[str | int, ...]) -> Iterator[Problem]:
    if value is not None and value not in releases:
        yield json_path(*at), f"unknown release {value!r}{suggest(value, releases)}; known releases: {', '.join(releases)}"


def _check_range(obj: Mapping[str, Any], releases: list[str], at: tuple[str | int, ...]) -> Iterator[Problem]:
    since, until = obj.get("since"), obj.get("until")
    problems = [*_check_marker(since, releases, (*at, "since")), *_check_marker(until, releases, (*at, "until"))]
    yield from problems
    if not problems and since is not None and until is not None:
        if releases.index(since) >= releases.index(until):
            yield (json_path(*at, "until"), f"until ({until}) must be a later release than since ({since}); "
                   "until is exclusive")


def _check_keyword_defaults(param: Mapping[str, Any], at: tuple[str | int, ...]) -> Iterator[Problem]:
    """A parameter's keyword_defaults: on a var_keyword entry only, each naming a keyword its type lists."""
    given = param.get("keyword_defaults") or {}
    if given and param["kind"] != "var_keyword":
        yield json_path(*at, "keyword_defaults"), "only a var_keyword parameter takes keyword defaults"
        return
    taken = {n.strip() for n in str(param["type"]).split(",")}
    for name in given:
        if name not in taken:
            yield (json_path(*at, "keyword_defaults", name),
                   f"{name!r} is not a keyword this parameter takes ({', '.join(sorted(taken))})")


def _check_signature(raw: dict[str, Any], releases: list[str]) -> Iterator[Problem]:
    covered: dict[str, int] = {}
    broken = False  # a bad range: coverage is not judged
    for i, entry in enumerate(raw["signature"]):
        at = ("signature", i)
        problems = list(_check_range(entry, releases, at))
        broken = broken or bool(problems)
        yield from problems
        names: set[str] = set()
        for j, param in enumerate(entry["parameters"]):
            if param["name"] in names:
                yield json_path(*at, "parameters", j, "name"), f"duplicate parameter {param['name']!r}"
            names.add(param["name"])
            yield from _check_keyword_defaults(param, (*at, "parameters", j))
        if problems:
            continue
        low = releases.index(entry["since"]) if entry.get("since") else 0
        high = releases.index(entry["until"]) if entry.get("until") else len(releases)
        for release in releases[low:high]:
            if release in covered:
                yield (json_path(*at), f"release {release} is also covered by {json_path('signature', covered[release])}; "
                       "signature ranges must not overlap")
                break
            covered[release] = i
    uncovered = [r for r in releases if r not in covered]
    if uncovered and not broken:
        yield json_path("signature"), f"no signature entry covers release(s) {', '.join(uncovered)}"


def _check_refines(clause: Mapping[str, Any], target: str, clauses: list[dict[str, Any]],
                   by_id: Mapping[str, int], at: tuple[str | int, ...]) -> Iterator[Problem]:
    where = json_path(*at, "refines")
    if target == clause["id"]:
        yield where, "a clause cannot refine itself"
        return
    if target not in by_id:
        yield where, f"refines names no clause: {target!r}{suggest(target, by_id)}"
        return
    refined = clauses[by_id[target]]
    if not Level(clause["level"]).blocking and not Level(refined["level"]).blocking:
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
            yield (json_path(*at, "status"), f"status is only allowed with raises: [LLMException]; "
                   f"got raises: [{', '.join(raises)}]")
        if status not in statuses:
            yield (json_path(*at, "status"), f"unknown status {status!r}{suggest(status, statuses)}; "
                   "expected a member of types.LLMStatusCode.members")
    for k, allowed in enumerate(expect.get("allowed") or ()):
        yield from _check_expect(allowed, statuses, (*at, "allowed", k))


def _check_generation(raw: dict[str, Any]) -> Iterator[Problem]:
    """The histories' domain names are types.domains entries; a model layout's data type has a documented size
    and its shape a batch dimension; a float encoding's bits fill the element's size."""
    members = raw["types"].get("DataType", {}).get("members", {})
    for name, entry in members.items():
        enc = entry.get("encoding")
        if enc and enc["kind"] == "float" and entry.get("size") is not None:
            bits = 1 + enc["exponent_bits"] + enc["mantissa_bits"]
            if bits != 8 * entry["size"]:
                yield (json_path("types", "DataType", "members", name, "encoding"),
                       f"1 + exponent_bits + mantissa_bits = {bits} bits, but the element has {8 * entry['size']}")
        elif enc and enc["kind"] == "bool" and entry.get("size") not in (None, 1):
            yield json_path("types", "DataType", "members", name, "encoding"), "a bool element is one byte"
    hist = (raw.get("generation") or {}).get("histories")
    if not hist:
        return
    domains = raw["types"].get("domains") or {}
    for key in ("cluster_id", "cache_id"):
        name = hist[key]["domain"]
        if name not in domains:
            yield (json_path("generation", "histories", key, "domain"),
                   f"unknown domain {name!r}{suggest(name, domains)}; expected a key of types.domains")
    for key in ("nodes", "sync_kv_timeout_ms", "pool_page_shift", "pool_bytes", "guard_bytes", "repeat"):
        bounds = hist.get(key)
        if bounds and bounds["min"] > bounds["max"]:
            yield json_path("generation", "histories", key), f"min {bounds['min']} > max {bounds['max']}"
    if hist["nodes"]["min"] < 2:
        yield json_path("generation", "histories", "nodes", "min"), "a history needs at least two nodes"
    for i, model in enumerate(hist.get("model_layouts") or ()):
        entry = members.get(model["data_type"])
        if entry is None or entry.get("size") is None or entry.get("size_source") == "vendor":
            yield (json_path("generation", "histories", "model_layouts", i, "data_type"),
                   f"{model['data_type']!r} is not a DataType member with a documented size")
    yield from _check_delays(hist["delays"])
    overtime = hist.get("overtime")
    ids = [c["id"] for c in raw["clauses"]]
    if overtime is not None and overtime not in ids:
        yield json_path("generation", "histories", "overtime"), f"names no clause: {overtime!r}{suggest(overtime, ids)}"
    for name, stream in hist["streams"].items():
        if stream["layouts"] == "models" and not hist.get("model_layouts"):
            yield json_path("generation", "histories", "streams", name, "layouts"), "no model_layouts to draw from"


def _check_delays(delays: Mapping[str, Any]) -> Iterator[Problem]:
    """The within classes' bounds ascend to the budget (1), with room to draw the last below draw_below."""
    at = ("generation", "histories", "delays")
    bounds = [c["below"] for c in delays["within"]]
    for i in range(1, len(bounds)):
        if bounds[i] <= bounds[i - 1]:
            yield json_path(*at, "within", i, "below"), f"{bounds[i]} is not above the class before ({bounds[i - 1]})"
    if bounds[-1] != 1:
        yield json_path(*at, "within", len(bounds) - 1, "below"), f"the last class ends at the budget (1), not {bounds[-1]}"
    start = bounds[-2] if len(bounds) > 1 else 0
    if not start < delays["draw_below"] <= bounds[-1]:
        yield json_path(*at, "draw_below"), f"{delays['draw_below']} leaves nothing of the last class to draw"


def _check_situations(clauses: list[dict[str, Any]], releases: list[str], raw: dict[str, Any]) -> Iterator[Problem]:
    """A history situation is declared by must or may clauses only (histories judge no should refinement), by at
    most one clause per release; a history procedure needs generation.histories."""
    declared: dict[tuple[str, str], int] = {}
    for i, clause in enumerate(clauses):
        at = ("clauses", i)
        if (clause.get("procedure") or {}).get("name") == "history" and not (raw.get("generation") or {}).get(
                "histories"):
            yield json_path(*at, "procedure"), "the history procedure needs generation.histories"
        situation = clause.get("history")
        if situation is None:
            continue
        if not Level(clause["level"]).blocking:
            yield (json_path(*at, "history"), "a should clause cannot declare a history situation (histories judge "
                   "must and may promises; its refined clause declares it)")
        since, until = clause.get("since"), clause.get("until")
        if (since is not None and since not in releases) or (until is not None and until not in releases):
            continue  # reported by the release-marker check
        low = releases.index(since) if since else 0
        high = releases.index(until) if until else len(releases)
        for release in releases[low:high]:
            first = declared.setdefault((situation, release), i)
            if first != i:
                yield (json_path(*at, "history"), f"situation {situation!r} is also declared by "
                       f"{clauses[first]['id']} in release {release}; one clause per situation and release")
                break


def _check_coverage(raw: dict[str, Any]) -> Iterator[Problem]:
    """A coverage dimension names an enum the spec declares and a clause that exists; a pair, two dimensions."""
    section = raw.get("coverage")
    if not section:
        return
    dims = section["dimensions"]
    enums = [n for n, t in raw["types"].items() if isinstance(t, Mapping) and "members" in t]
    ids = [c["id"] for c in raw["clauses"]]
    for name, dim in dims.items():
        if dim["kind"] == "members" and dim["type"] not in enums:
            yield (json_path("coverage", "dimensions", name, "type"),
                   f"names no enum type: {dim['type']!r}{suggest(dim['type'], enums)}")
        if dim["kind"] == "counts" and dim["max"] - dim["min"] < 2:
            yield (json_path("coverage", "dimensions", name, "max"),
                   f"leaves no interior count between min {dim['min']} and max {dim['max']}")
        for field in ("past", "covered_by", "within"):
            if dim.get(field) is not None and dim[field] not in ids:
                yield (json_path("coverage", "dimensions", name, field),
                       f"names no clause: {dim[field]!r}{suggest(dim[field], ids)}")
    for i, pair in enumerate(section["pairs"]):
        for j, name in enumerate(pair):
            if name not in dims:
                yield json_path("coverage", "pairs", i, j), f"names no dimension: {name!r}{suggest(name, list(dims))}"
        if pair[0] == pair[1]:
            yield json_path("coverage", "pairs", i), f"pairs a dimension with itself: {pair[0]!r}"

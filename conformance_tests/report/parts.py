"""The report's parts as types: one TypedDict per object of report.schema.json, with the schema's property names
and its required ones (tests/report/test_parts.py holds the two together, so a schema change without its type
fails).

TypedDicts, not classes: a report stays the JSON value it is (``json.dumps`` writes the bytes it always wrote,
``json.loads`` gives it back), and the type checker sees every key the builder writes and every renderer reads.
Objects the schema leaves open (a backend's capabilities, a test's parameters and push) are :data:`JSONObject`.
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired from evaluated annotations only (on Python
# 3.11 a string annotation leaves every key required in __required_keys__, which tests/report/test_parts.py reads)
from typing import NotRequired, TypeAlias, TypedDict, Union

from ..spec.paths import DEFAULT_OPERATION
from .model import VerdictKind

#: a JSON value, as json.loads gives it
JSONValue: TypeAlias = Union[str, int, float, bool, None, list["JSONValue"], dict[str, "JSONValue"]]  # noqa: UP007
#: an object whose keys the schema leaves open
JSONObject: TypeAlias = dict[str, JSONValue]


# ------------------------------------------------------------------------------------------- the header


class Suite(TypedDict):
    name: str
    version: str


def operation_of(report: "Report") -> str:
    """The operation a report certified: its ``spec.operation``, push_cache for a report written before the
    family (the only operation then)."""
    return report["spec"].get("operation", DEFAULT_OPERATION)


class SpecInfo(TypedDict):
    """``spec``: the release the run was checked against, and the spec file's hash."""

    version: str
    sha256: str | None
    path: NotRequired[str | None]
    operation: NotRequired[str]


class BackendInfo(TypedDict):
    name: str
    version: str | None
    spec: NotRequired[str | None]
    capabilities: JSONObject


class Environment(TypedDict, total=False):
    python: str
    numpy: str | None
    platform: str
    hostname: str | None
    hypothesis: str | None
    pytest: str | None


class RunExpectations(TypedDict):
    path: str | None
    sha256: str | None
    strict: bool


class DomainCoverage(TypedDict):
    partitions: int
    partitions_reached: int
    pairs: int
    pairs_reached: int
    unreached_partitions: list[str]
    unreached_pairs: list[str]
    blocks_verdict: bool
    excluded: NotRequired[list[str]]


class FeatureValues(TypedDict, total=False):
    """The values one feature took in the passing pushes of one class (``run.passing_push_features``)."""

    values: list[JSONValue]
    more: bool
    min: float | None
    max: float | None


#: push class ("returned", "raised") -> feature -> its values
PassingFeatures: TypeAlias = dict[str, dict[str, FeatureValues]]


class ShardSource(TypedDict):
    """One entry of a merged report's ``run.merged_from``."""

    index: int
    count: int
    source: NotRequired[str]
    sha256: str
    tests: NotRequired[int]
    started: NotRequired[str | None]
    duration_s: NotRequired[float | None]
    distinct_layouts: NotRequired[int | None]
    hostname: NotRequired[str | None]


class Run(TypedDict):
    started: str | None
    duration_s: float
    hypothesis_profile: NotRequired[str | None]
    hypothesis_seed: NotRequired[int | str | None]
    expectations: NotRequired[RunExpectations]
    argv: NotRequired[list[str]]
    certify_args: NotRequired[list[str] | None]
    push_calls: NotRequired[int | None]
    distinct_layouts: NotRequired[int | None]
    domain_coverage: NotRequired[DomainCoverage | None]
    layouts_sha256: NotRequired[str | None]
    histories: NotRequired[int | None]
    history_steps: NotRequired[int | None]
    history_pushes: NotRequired[int | None]
    isolation: NotRequired[str]
    backend_processes: NotRequired[int | None]
    max_time_s: NotRequired[float | None]
    out_of_time: NotRequired[str | None]
    passing_push_features: NotRequired[PassingFeatures]
    layout_keys: NotRequired[list[str]]
    summed: NotRequired[list[str]]
    merged_from: NotRequired[list[ShardSource]]
    reruns: NotRequired[int | None]


# ------------------------------------------------------------------------------------------------ rows


class TestWaiver(TypedDict, total=False):
    """``test.waiver``: the expectations entry that waived a test."""

    entry: int | None
    match: str | None
    outcome: str | None
    reason: str | None
    link: str | None
    expires: str | None


class HypothesisInfo(TypedDict, total=False):
    example: str | None
    seed: int | str | None


class Attempt(TypedDict):
    outcome: str
    message: NotRequired[str]


class TestRow(TypedDict):
    id: str
    clauses: list[str]
    failed_clauses: NotRequired[list[str]]
    level: str
    params: JSONObject
    outcome: str
    expected: str
    waiver: NotRequired[TestWaiver | None]
    message: str | None
    repro: str | None
    hypothesis: HypothesisInfo | None
    duration_s: float
    push: NotRequired[JSONObject | None]
    attempts: NotRequired[list[Attempt]]


class ClauseRow(TypedDict):
    id: str
    level: str
    family: str
    title: str
    tests: list[str]
    outcome: str
    covered: bool
    deviation: NotRequired[str]


# ---------------------------------------------------------------------------------------- expectations


class Entry(TypedDict):
    """One entry of the expectations file, with how many tests it matched."""

    index: int
    match: str
    outcome: str
    reason: str
    link: NotRequired[str | None]
    expires: NotRequired[str | None]
    expired: NotRequired[bool]
    hits: NotRequired[int]


class WaivedTest(TypedDict):
    test: str
    level: str
    clauses: NotRequired[list[str]]
    expected: str
    outcome: str
    entry: NotRequired[int | None]
    match: NotRequired[str | None]
    reason: str | None
    expires: str | None
    link: NotRequired[str | None]


class Expectations(TypedDict):
    path: NotRequired[str | None]
    sha256: NotRequired[str | None]
    strict: NotRequired[bool]
    entries: NotRequired[list[Entry]]
    expired: NotRequired[list[Entry]]
    waived: NotRequired[list[WaivedTest]]
    unmatched: list[str]
    unexpected_passes: list[str]


# ------------------------------------------------------------------------------------------------ counts


class Summary(TypedDict):
    """Test counts by test outcome."""

    tests: int
    passed: int
    failed: int
    flaky: NotRequired[int]
    incompatible: int
    xfailed: int
    xpassed: int
    skipped: int
    not_supported: int
    error: int


class ClauseSummary(TypedDict):
    """Clause counts by clause outcome."""

    clauses: int
    covered: int
    failed: NotRequired[int]
    flaky: NotRequired[int]
    incompatible: NotRequired[int]
    xfailed: NotRequired[int]
    passed: NotRequired[int]
    not_supported: NotRequired[int]
    skipped: NotRequired[int]
    untested: NotRequired[int]


# ------------------------------------------------------------------------------------------ completeness


class LeftOut(TypedDict):
    id: str
    why: str


class Shard(TypedDict):
    """``completeness.shard``: the part of the selection a shard run ran."""

    index: int
    count: int
    selection: list[str]
    assigned: NotRequired[list[int]]
    reason: str


class Completeness(TypedDict):
    full: bool
    reasons: list[str]
    selected: NotRequired[int | None]
    left_out_count: int
    left_out_counts: NotRequired[dict[str, int]]
    left_out: list[LeftOut]
    interrupted: NotRequired[str | None]
    spec: NotRequired[JSONObject | None]
    shard: NotRequired[Shard]


# ----------------------------------------------------------------------------------------------- verdict


class Verdict(TypedDict):
    certified: bool
    label: str
    kind: NotRequired[VerdictKind]
    partial: NotRequired[bool]
    no_passing: NotRequired[list[str]]
    waived_must_tests: NotRequired[list[str]]
    flaky_tests: NotRequired[list[str]]
    reasons: NotRequired[list[str]]
    unchecked: NotRequired[list[str]]
    blocking: list[str]
    blocking_tests: NotRequired[list[str]]
    compatibility: float | None


class LikelyCause(TypedDict):
    predicate: str | None
    statement: str
    failures: int
    tests: list[str]
    clauses: list[str]
    first_message: NotRequired[str | None]


class BlockingDetail(TypedDict):
    id: str
    title: NotRequired[str | None]
    level: NotRequired[str | None]
    outcome: NotRequired[str | None]
    failing_tests: int
    first_test: NotRequired[str | None]
    first_message: NotRequired[str | None]
    deviation: NotRequired[str | None]


# ------------------------------------------------------------------------------------------------ report


class Report(TypedDict):
    """A whole report.json."""

    schema_version: int
    suite: Suite
    spec: SpecInfo
    backend: BackendInfo
    environment: Environment
    run: Run
    tests: list[TestRow]
    clauses: list[ClauseRow]
    expectations: Expectations
    summary: Summary
    clause_summary: NotRequired[ClauseSummary]
    completeness: NotRequired[Completeness]
    verdict: Verdict
    warnings: NotRequired[list[str]]
    likely_causes: NotRequired[list[LikelyCause]]
    blocking_details: NotRequired[list[BlockingDetail]]


def outcome_count(counts: Summary | ClauseSummary, outcome: str) -> int:
    """The count of an outcome named at run time (a TypedDict's keys are names the type checker knows; an
    outcome from TEST_OUTCOMES or CLAUSE_OUTCOMES is not one); 0 where the report has none (written before the
    outcome existed)."""
    value = dict(counts).get(outcome, 0)
    return value if isinstance(value, int) else 0


def full_run() -> Completeness:
    """The completeness of a report that has none (written before completeness existed): a full run."""
    return {"full": True, "reasons": [], "left_out_count": 0, "left_out": []}

"""Merging shard reports: the reports of ``certify --shard K/N`` runs become, through :func:`build_report`, the
report one serial run of the same selection gives (rows in the selection's order, the verdict recomputed).

The merged report is full only when the shards are 1..N of one N, cover the whole selection, and agree on
everything that decides what a test checks (spec, kit, backend, hypothesis profile and seed, expectations file,
command line apart from the options that differ by design); anything else is a reason in its ``completeness``,
so the merged verdict is PARTIAL (or NOT CERTIFIED (PARTIAL RUN)) and says why. Nothing a shard says about itself is
taken: the verdict is built from the rows against the packaged spec's clauses, and a shard that contradicts itself
is refused (shard_checks.py).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..cli.options import without_options
from ..judging.push_features import merge_stats
from ..running.reproducible import VERSIONED, layouts_sha256
from ..selecting.selection import WHY_NOT_RUN, WHY_OTHER_SHARD, WHY_SHARD_MISSING
from .builder import build_report
from .parts import (
    DomainCoverage,
    Entry,
    Environment,
    Expectations,
    LeftOut,
    PassingFeatures,
    Report,
    Run,
    Shard,
    ShardSource,
    TestRow,
)
from .schema import ReportError, load_report
from .shard_checks import clause_spec, contradictions, packaged_clauses

#: the run-header fields of a merged report that are sums of the shards' (named in ``run.summed``)
SUMMED = ("duration_s", "push_calls", "histories", "history_steps", "history_pushes", "backend_processes")
#: options that may differ between the shards of one run without changing what any test checks: which shard it
#: is and where it wrote; --rootdir, which the kit adds (where it is installed: machines differ); and
#: pytest-xdist's workers, which write the same report as a serial run (README, "parallel runs"), so that
#: machines of different sizes can run the shards of one run
PER_SHARD_OPTIONS = ("--shard", "--report-dir", "--rootdir", "-n", "--numprocesses", "--dist")
#: the most values a disagreement reason shows
SHOWN = 4


@dataclass(frozen=True)
class ShardReport:
    """One shard's report as the merge reads it: where it came from, the sha256 of its bytes, its content."""

    source: str
    sha256: str
    report: Report

    @property
    def shard(self) -> Shard:
        return self.report["completeness"]["shard"]

    @property
    def index(self) -> int:
        return int(self.shard["index"])

    @property
    def count(self) -> int:
        return int(self.shard["count"])

    @property
    def name(self) -> str:
        return f"shard {self.index}/{self.count}"


def read_shard(path: str | Path) -> ShardReport:
    """A shard report from a file; a one-line ReportError for a file that is unreadable, not a valid report, or
    the report of a run that was not a shard (``certify --shard K/N`` writes ``completeness.shard``)."""
    path = Path(path)
    report = load_report(path)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:  # read a moment ago: gone or unreadable since
        raise ReportError(f"{path}: cannot read: {exc.strerror or exc}") from None
    completeness = report.get("completeness")
    shard = completeness.get("shard") if completeness else None
    if not isinstance(shard, Mapping):
        raise ReportError(f"{path}: not a shard report (its completeness has no shard; `certify --shard K/N` "
                          "writes one)")
    return ShardReport(str(path), digest, report)


def shard_argv(argv: Iterable[str]) -> list[str]:
    """``argv`` without the options that may differ between the shards of one run (PER_SHARD_OPTIONS) and their
    values, however spelled (``--shard 1/2``, ``--shard=1/2``, ``-n 2``, ``-n2``)."""
    return without_options(argv, PER_SHARD_OPTIONS)


#: what the shards of one run share, each as (what a reason calls it, how to read it from a report)
AGREEMENT: tuple[tuple[str, Callable[[Report], object]], ...] = (
    ("spec sha256", lambda r: r["spec"].get("sha256")),
    ("spec release", lambda r: r["spec"].get("version")),
    ("kit version", lambda r: f"{r['suite'].get('name')} {r['suite'].get('version')}"),
    ("backend name", lambda r: r["backend"].get("name")),
    ("backend target", lambda r: r["backend"].get("spec")),
    ("backend version", lambda r: r["backend"].get("version")),
    ("backend capabilities", lambda r: r["backend"].get("capabilities")),
    ("hypothesis profile", lambda r: r["run"].get("hypothesis_profile")),
    *((f"{name} version", lambda r, name=name: dict(r.get("environment") or {}).get(name))  # type: ignore[misc]
      for name in VERSIONED),
    ("hypothesis seed", lambda r: r["run"].get("hypothesis_seed")),
    ("expectations sha256", lambda r: dict(r["run"].get("expectations") or {}).get("sha256")),
    ("command line (apart from " + ", ".join(PER_SHARD_OPTIONS) + ")",
     lambda r: shard_argv(r["run"].get("argv") or [])),
    ("clauses", lambda r: [clause_spec(c) for c in r["clauses"]]),
    ("shard count", lambda r: r["completeness"]["shard"]["count"]),
    ("selection", lambda r: r["completeness"]["shard"]["selection"]),
    ("assignment of tests to shards", lambda r: r["completeness"]["shard"].get("assigned")),
)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value) if not isinstance(value, list) or len(value) < 8 else f"<{len(value)} items>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def disagreements(shards: Sequence[ShardReport]) -> list[str]:
    """A reason for each thing the shards do not agree on, naming each shard's value."""
    reasons = []
    for what, read in AGREEMENT:
        values = [read(s.report) for s in shards]
        if any(v != values[0] for v in values[1:]):
            shown = ", ".join(f"{s.name} ({s.source}) {_short(v)}" for s, v in zip(shards, values, strict=True))
            reasons.append(f"shards disagree on {what}: {shown}")
    return reasons


def _earliest(values: Iterable[Any]) -> str | None:
    parsed = []
    for v in values:
        try:
            parsed.append((_dt.datetime.fromisoformat(str(v)), str(v)))
        except (TypeError, ValueError):
            continue
    try:
        return min(parsed)[1] if parsed else None
    except TypeError:  # naive and aware times cannot be compared: keep the text that sorts first
        return min(p[1] for p in parsed)


def _sum(values: Sequence[Any]) -> Any:
    """The sum of the shards' numbers; None when any shard has none (the sum would claim more than is known)."""
    if any(not isinstance(v, int | float) or isinstance(v, bool) for v in values):
        return None
    total = sum(values)
    return round(total, 3) if isinstance(total, float) else total


def _joined(values: Iterable[Any]) -> Any:
    distinct = list(dict.fromkeys(v for v in values if v is not None))
    if not distinct:
        return None
    return distinct[0] if len(distinct) == 1 else ", ".join(str(v) for v in distinct)


def passing_push_features(shards: Sequence[ShardReport]) -> PassingFeatures:
    """The union of the shards' ``run.passing_push_features``, folded as a serial run folds its tests' (per
    class of push, per feature: values up to the limit, ``more`` when any shard or the union passed it, the
    smallest and largest number)."""
    out: PassingFeatures = {}
    for s in shards:
        for cls, stats in (s.report["run"].get("passing_push_features") or {}).items():
            merge_stats(cast(dict[str, dict[str, Any]], out.setdefault(cls, {})), stats)
    return out


def drawn_layouts(shards: Sequence[ShardReport]) -> set[str] | None:
    """The distinct layouts the shards drew together: the union of their ``run.layout_keys`` (a count per shard
    cannot be added up: two shards may draw the same layout); None when a shard lacks them."""
    keys: set[str] = set()
    for s in shards:
        mine = s.report["run"].get("layout_keys")
        if not isinstance(mine, list):
            return None
        keys.update(str(k) for k in mine)
    return keys


def merged_environment(shards: Sequence[ShardReport]) -> Environment:
    """The machines' environment: a field the shards share as it is, one that differs as its values, joined."""
    envs = [dict(s.report.get("environment") or {}) for s in shards]
    fields = list(dict.fromkeys(k for env in envs for k in env))
    return cast(Environment, {k: _joined(env.get(k) for env in envs) for k in fields})


def merged_coverage(covs: Sequence[DomainCoverage | None]) -> DomainCoverage | None:
    """The shards' domain coverage together: a partition or pair is unreached only where every shard left it
    unreached (the shards derive the same universe from the same spec; None when a shard has none)."""
    if not covs or any(not isinstance(c, dict) for c in covs):
        return None
    first, *others = [c for c in covs if c is not None]
    out = first.copy()
    partitions = [k for k in first["unreached_partitions"] if all(k in c["unreached_partitions"] for c in others)]
    out["unreached_partitions"] = partitions
    out["partitions_reached"] = out["partitions"] - len(partitions)
    pairs = [k for k in first["unreached_pairs"] if all(k in c["unreached_pairs"] for c in others)]
    out["unreached_pairs"] = pairs
    out["pairs_reached"] = out["pairs"] - len(pairs)
    return out


def merged_run(shards: Sequence[ShardReport]) -> Run:
    """The run header of the merged report: the first shard's settings (the shards agree on them, or a reason
    says they do not), the earliest start, sums (``run.summed``), the union of layouts and of the passing pushes'
    features, and where each shard's report came from (``run.merged_from``)."""
    runs = [s.report["run"] for s in shards]
    # the summed fields are named at run time (SUMMED), so the run is built as a plain dict and typed at the end
    run: dict[str, Any] = {k: v for k, v in runs[0].items() if k != "layout_keys"}
    run["started"] = _earliest(r.get("started") for r in runs)
    for key in SUMMED:
        run[key] = _sum([dict(r).get(key) for r in runs])
    run["duration_s"] = run["duration_s"] or 0.0
    run["summed"] = list(SUMMED)
    run["argv"] = shard_argv(runs[0].get("argv") or [])
    # `report verify` of the merged report runs the whole selection serially
    certify_args = runs[0].get("certify_args")
    run["certify_args"] = None if certify_args is None else shard_argv(certify_args)
    layouts = drawn_layouts(shards)
    run["distinct_layouts"] = None if layouts is None else len(layouts)
    run["layouts_sha256"] = None if layouts is None else layouts_sha256(layouts)
    run["passing_push_features"] = passing_push_features(shards)
    run["domain_coverage"] = merged_coverage([r.get("domain_coverage") for r in runs])
    run["out_of_time"] = _joined(f"{s.name}: {r['out_of_time']}" if r.get("out_of_time") else None
                                 for s, r in zip(shards, runs, strict=True))
    run["merged_from"] = [ShardSource({"index": s.index, "count": s.count, "source": s.source, "sha256": s.sha256,
                           "tests": len(s.report["tests"]), "started": s.report["run"].get("started"),
                           "duration_s": s.report["run"].get("duration_s"),
                           "distinct_layouts": s.report["run"].get("distinct_layouts"),
                           "hostname": (s.report.get("environment") or {}).get("hostname")}) for s in shards]
    return cast(Run, run)


def _rows(shards: Sequence[ShardReport], selection: Sequence[str]) -> tuple[list[TestRow], list[str]]:
    """Every shard's rows, each test once (from the first shard that has it), in the selection's order (a row
    outside the selection after them); and the reasons the rows give."""
    by_id: dict[str, TestRow] = {}
    seen_in: dict[str, str] = {}
    twice: list[str] = []
    for s in shards:
        for row in s.report["tests"]:
            if row["id"] in by_id:
                twice.append(f"{row['id']} ({seen_in[row['id']]} and {s.name})")
                continue
            by_id[row["id"]] = row
            seen_in[row["id"]] = s.name
    position = {n: i for i, n in enumerate(selection)}
    outside = [n for n in by_id if n not in position]
    rows = sorted(by_id.values(), key=lambda r: position.get(r["id"], len(position)))
    reasons = []
    if twice:
        reasons.append(f"{len(twice)} test(s) in more than one shard report, each kept from the first: "
                       + "; ".join(twice[:SHOWN]) + (" …" if len(twice) > SHOWN else ""))
    if outside:
        reasons.append(f"{len(outside)} test(s) outside the shards' selection: " + ", ".join(outside[:SHOWN])
                       + (" …" if len(outside) > SHOWN else ""))
    return rows, reasons


def _shard_reasons(shards: Sequence[ShardReport]) -> list[str]:
    """The shards' own reasons, less the one each added for being a shard: a reason every shard gives once,
    the others under the shard's name."""
    own = [[r for r in s.report["completeness"]["reasons"] if r != s.shard.get("reason")] for s in shards]
    common = [r for r in own[0] if all(r in mine for mine in own[1:])]
    out = list(common)
    for s, mine in zip(shards, own, strict=True):
        out += [f"{s.name}: {r}" for r in mine if r not in common]
    return out


def _left_out(shards: Sequence[ShardReport], selection: Sequence[str], assigned: Sequence[int],
              ran: set[str], present: set[int]) -> list[LeftOut]:
    """What a serial run would list as left out: what the shards' own selection left out (the same for every
    shard of one command line), then each selected test without a row: not run by its shard, or of a shard
    whose report is missing."""
    out: list[LeftOut] = []
    listed: set[str] = set()
    for s in shards:
        for entry in s.report["completeness"]["left_out"]:
            if entry["why"] in (WHY_OTHER_SHARD, WHY_NOT_RUN) or entry["id"] in listed:
                continue
            out.append(LeftOut(id=entry["id"], why=entry["why"]))
            listed.add(entry["id"])
    for test, shard in zip(selection, assigned, strict=True):
        if test not in ran and test not in listed:
            out.append({"id": test, "why": WHY_NOT_RUN if shard in present else WHY_SHARD_MISSING})
    return out


def _expectations(shards: Sequence[ShardReport], rows: Sequence[TestRow]) -> Expectations:
    """The expectations section as a serial run would give it: the file and its entries (with the hits of every
    shard added up), the entries no shard matched, the unexpected passes."""
    first = shards[0].report["expectations"]
    hits: dict[int | None, int] = {}
    for s in shards:
        for e in s.report["expectations"].get("entries") or []:
            hits[e.get("index")] = hits.get(e.get("index"), 0) + int(e.get("hits") or 0)
    entries = [cast(Entry, {**e, **({"hits": hits.get(e.get("index"), 0)} if "hits" in e else {})})
               for e in first.get("entries") or []]
    unmatched = [m for m in first.get("unmatched") or []
                 if all(m in (s.report["expectations"].get("unmatched") or []) for s in shards[1:])]
    xpassed = {n for s in shards for n in s.report["expectations"].get("unexpected_passes") or []}
    return {"path": first.get("path"), "sha256": first.get("sha256"), "strict": bool(first.get("strict")),
            "entries": entries, "expired": list(first.get("expired") or []), "unmatched": unmatched,
            "unexpected_passes": [r["id"] for r in rows if r["id"] in xpassed]}


def merge_reports(shards: Sequence[ShardReport]) -> Report:
    """The report of the run the shards are parts of (see the module docstring); built and validated by
    :func:`build_report`. ReportError when there is nothing to merge."""
    if not shards:
        raise ReportError("no reports to merge")
    for s in shards:
        problems = contradictions(s.report)
        if problems:
            more = f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
            raise ReportError(f"{s.source}: {s.name} contradicts itself, so it is not merged: "
                              + "; ".join(problems[:SHOWN]) + more)
    shards = sorted(shards, key=lambda s: s.index)  # stable: a shard given twice keeps the order it was given in
    base = shards[0]
    count = base.count
    selection = list(base.shard["selection"])
    assigned = [int(k) for k in base.shard.get("assigned") or [0] * len(selection)]
    reasons = disagreements(shards)
    given: dict[int, list[str]] = {}
    for s in shards:
        given.setdefault(s.index, []).append(s.source)
    for index, sources in given.items():
        if len(sources) > 1:
            reasons.append(f"shard {index}/{count} given {len(sources)} times: {', '.join(sources)}")
    present = set(given)
    reasons += [f"{s.name} ({s.source}) is not one of shards 1..{s.count}" for s in shards
                if not 1 <= s.index <= s.count]
    for index in range(1, count + 1):
        if index not in present:
            missing = sum(1 for k in assigned if k == index)
            reasons.append(f"shard {index}/{count} missing: {missing} test(s) not run")
    rows, row_reasons = _rows(shards, selection)
    reasons += row_reasons
    ran = {r["id"] for r in rows}
    not_run = [n for n, k in zip(selection, assigned, strict=True) if n not in ran and k in present]
    if not_run:
        reasons.append(f"{len(not_run)} selected test(s) not run")
    reasons = _shard_reasons(shards) + reasons
    completeness = {
        "reasons": reasons,
        "selected": len(selection),
        "left_out": _left_out(shards, selection, assigned, ran, present),
        "interrupted": _joined(f"{s.name}: {s.report['completeness']['interrupted']}"
                               if s.report["completeness"].get("interrupted") else None for s in shards),
        "spec": base.report["completeness"].get("spec"),
    }
    header = {"suite": base.report["suite"], "spec": base.report["spec"], "backend": base.report["backend"],
              "environment": merged_environment(shards), "run": merged_run(shards)}
    # the verdict is built against the spec's clauses, never the list a shard gives (which could leave some out)
    clauses = packaged_clauses(base.report["spec"].get("sha256"), base.report["spec"].get("version"))
    if clauses is None:
        clauses = [clause_spec(c) for c in base.report["clauses"]]
        completeness["reasons"].append(
            f"spec release {base.report['spec'].get('version')} (sha256 {str(base.report['spec'].get('sha256'))[:12]}) "
            "is not this kit's packaged spec, so the shards' clause list cannot be checked against it")
    return build_report(header, rows, clauses, _expectations(shards, rows), completeness)

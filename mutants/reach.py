"""Whether a mutant's condition was reached: the domain-coverage keys its registration declares (``reaches``),
looked up in its certification's ``run.domain_coverage``.

A mutant that survives where its condition was never drawn tells the suite's author what to add (a partition
the run must reach), not that the clause is weak.  Every declared key must be reached (they are the conjunction
of what the defect needs); a key is reached when the run's universe (the spec's partitions and pairs for the
run's release, less those the backend's capabilities exclude) holds it and the run did not leave it unreached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from conformance_tests.coverage.universe import universe
from conformance_tests.spec import Spec

#: the cell of a mutant that declares no condition
UNDECLARED = "—"


def spec_keys(spec: Spec) -> set[str]:
    """Every partition and pair key the spec's coverage section has, for any release (a declared key must be one)."""
    out: set[str] = set()
    for signature in spec.signatures:
        uni = universe(spec, signature)
        if uni is not None:
            out |= set(uni.partition_keys()) | set(uni.pair_keys())
    return out


def unknown_keys(reaches: Iterable[str], known: set[str]) -> list[str]:
    return [k for k in reaches if k not in known]


def run_keys(spec: Spec, report: Mapping[str, Any]) -> set[str] | None:
    """The partition and pair keys of ``report``'s run: its release's, less what its backend's capabilities exclude
    (None: the report names a release this spec does not have)."""
    release = str((report.get("spec") or {}).get("version") or spec.releases[-1])
    if release not in spec.releases:
        return None
    caps = (report.get("backend") or {}).get("capabilities") or {}
    uni = universe(spec, spec.signature_for(release), caps)
    return set(uni.partition_keys()) | set(uni.pair_keys()) if uni is not None else set()


def not_reached(reaches: Sequence[str], report: Mapping[str, Any], spec: Spec) -> list[str] | None:
    """The declared keys ``report``'s run did not reach (None: the report measured no domain coverage of this spec)."""
    cov = (report.get("run") or {}).get("domain_coverage")
    if not isinstance(cov, Mapping):
        return None
    ours = run_keys(spec, report)
    if ours is None:
        return None
    missed = set(cov.get("unreached_partitions") or ()) | set(cov.get("unreached_pairs") or ())
    return [k for k in reaches if k not in ours or k in missed]


def cell(reaches: Sequence[str], report: Mapping[str, Any], spec: Spec) -> str:
    """The matrix's "condition reached" cell: ``yes``, ``no: <keys>``, ``unknown: ...`` or ``—`` (none declared)."""
    if not reaches:
        return UNDECLARED
    missed = not_reached(reaches, report, spec)
    if missed is None:
        return "unknown: the report has no domain coverage of this spec"
    return f"no: {', '.join(missed)}" if missed else "yes"

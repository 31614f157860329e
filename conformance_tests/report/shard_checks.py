"""What ``report merge`` checks of a shard report before it believes it.

A shard report is a file anyone can edit, and the merge must never take what a shard says about itself: the
merged verdict is built from the rows, against the spec's clauses (:func:`packaged_clauses`), and a shard that
contradicts itself is refused (:func:`contradictions`), one line:

- its derived sections (``summary``, ``clause_summary``, ``verdict``, the clauses' outcomes) are not what its own
  rows give (:func:`derived_differences`);
- a row says more than its outcome allows (:data:`NEVER_WITH`), or its attempts settle to another outcome
  (:func:`row_contradictions`);
- its clause list is not the spec release's it names (:func:`clause_list_problem`);
- its backend is not the one its own record names (:func:`identity_problems`): the target its command line's
  ``--backend`` gives, the isolation ``--isolation auto`` gives that target, and the kit's own backends by their
  own names.

What a report cannot show is not checked here: a backend relabelled in every field alike, rows rewritten with
all their evidence. ``report verify`` finds those, by running the certification again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any, cast

from ..resolution import IN_PROCESS_BY_DEFAULT, available_backends, is_file_target, split_target
from ..running.attempts import FAILING, PASSING
from .builder import build_report
from .parts import Attempt, ClauseRow, Report, TestRow

#: the report sections build_report derives from the rows, which a shard must agree with
DERIVED = ("summary", "clause_summary", "verdict", "clauses")
#: clause-row fields that come from the spec (the rest build_report derives from the rows)
CLAUSE_FIELDS_DERIVED = ("tests", "outcome", "covered")
#: what a row of an outcome never carries (running/rows.py): a passed test's phases give no message and no failed clauses,
#: and only a judged failure keeps its last push (for the likely-cause analysis)
NEVER_WITH: dict[str, tuple[str, ...]] = {"passed": ("message", "failed_clauses", "push")}
#: the most items a problem line names
SHOWN = 3


def _listed(items: Sequence[Any]) -> str:
    return ", ".join(map(str, items[:SHOWN])) + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def clause_spec(row: ClauseRow) -> dict[str, object]:
    """A clause row less what build_report derives from the tests."""
    return {k: v for k, v in row.items() if k not in CLAUSE_FIELDS_DERIVED}


def packaged_clauses(sha256: object, release: object) -> list[dict[str, object]] | None:
    """The clause rows a run of spec release ``release`` lists, as certify writes them, when ``sha256`` is this
    kit's packaged spec's; None for any other spec (its clauses are not known here)."""
    from ..spec import load_spec
    from ..spec.errors import SpecError

    spec = load_spec()
    if sha256 != spec.sha256 or release not in spec.releases:
        return None
    try:
        chosen = spec.for_release(str(release))
    except SpecError:
        return None
    return [{"id": c.id, "level": c.level.value, "family": c.family, "title": c.title,
             **({"deviation": c.deviation} if c.deviation else {})} for c in chosen.clauses]


def clause_list_problem(clauses: Sequence[ClauseRow], spec: Sequence[Mapping[str, object]]) -> str | None:
    """Why a report's clause list is not the spec's (by ID and level), or None."""
    mine: dict[str, object] = {str(c.get("id")): c.get("level") for c in clauses}
    theirs = {str(c["id"]): c["level"] for c in spec}
    missing = [cid for cid in theirs if cid not in mine]
    extra = [cid for cid in mine if cid not in theirs]
    level = [f"{cid} ({mine[cid]}, the spec says {theirs[cid]})" for cid in theirs
             if cid in mine and mine[cid] != theirs[cid]]
    said = [f"{len(missing)} of its clauses missing: {_listed(missing)}" if missing else "",
            f"{len(extra)} not in it: {_listed(extra)}" if extra else "",
            f"{len(level)} of another level: {_listed(level)}" if level else ""]
    said = [s for s in said if s]
    return "; ".join(said) if said else None


def derived_differences(report: Report) -> list[str]:
    """The derived sections (DERIVED) of ``report`` that are not what build_report makes of its own rows."""
    sections = cast(Mapping[str, object], report)  # the sections named at run time (DERIVED)
    expectations = {k: v for k, v in report["expectations"].items() if k != "waived"}
    header = {k: sections.get(k) for k in ("suite", "spec", "backend", "environment", "run")}
    again = cast(Mapping[str, object], build_report(header, report["tests"], [clause_spec(c) for c in report["clauses"]],
                                                    expectations, report.get("completeness")))
    return [key for key in DERIVED if sections.get(key) != again[key]]


def settled_outcome(attempts: Sequence[Attempt]) -> str | None:
    """The outcome a row's attempts settle to (running/attempts.py): failed then passed is flaky, else the last one."""
    outcomes = [a.get("outcome") for a in attempts]
    if outcomes and outcomes[-1] in PASSING and any(o in FAILING for o in outcomes):
        return "flaky"
    return outcomes[-1] if outcomes else None


def row_contradictions(rows: Sequence[TestRow]) -> list[str]:
    """A line for each row whose own record contradicts its outcome."""
    out = []
    for row in rows:
        outcome = row.get("outcome")
        fields = cast(Mapping[str, object], row)  # the fields named at run time (NEVER_WITH)
        carried = [key for key in NEVER_WITH.get(str(outcome), ()) if fields.get(key)]
        if carried:
            out.append(f"{row['id']} is {outcome} but carries {', '.join(carried)}")
        attempts = row.get("attempts")
        if isinstance(attempts, list) and attempts and settled_outcome(attempts) != outcome:
            shown = " -> ".join(str(a.get("outcome")) for a in attempts)
            out.append(f"{row['id']} is {outcome} but its attempts ({shown}) give {settled_outcome(attempts)}")
    return out


def _last_value(args: Sequence[str], name: str) -> str | None:
    value = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def _names_target(named: str, target: str) -> bool | None:
    """Whether a ``--backend`` value names ``target`` (found as certify finds it, never imported); None when it
    cannot be told here (an entry point not installed on this machine)."""
    entry = available_backends().get(named)
    if entry is not None:
        module, attr = split_target(entry)
        return f"{module}:{attr}" == target
    if is_file_target(named):  # a file is recorded by its absolute path on the machine that ran it
        file, attr = split_target(named)
        there, there_attr = split_target(target)
        return PurePath(file).name == PurePath(there).name and attr == there_attr
    module, attr = split_target(named)
    if f"{module}:{attr}" == target:
        return True
    # a bare word may be an entry point of the machine that ran the shard
    return None if ":" not in named and "." not in named else False


def own_backends() -> dict[str, str]:
    """The kit's own backends that have an entry point: target -> name (the entry point's name is the backend's
    own ``name``: tests/kit/test_hostile_reports.py checks it)."""
    out = {}
    for name, value in available_backends().items():
        module, attr = split_target(value)
        if f"{module}:{attr}" in IN_PROCESS_BY_DEFAULT:
            out[f"{module}:{attr}"] = name
    return out


def identity_problems(report: Report) -> list[str]:
    """Where a report's backend is not the one its own record names (see the module docstring)."""
    backend, run = report["backend"], report["run"]
    target, name = backend.get("spec"), backend.get("name")
    args = run.get("certify_args") or []
    out = []
    named = _last_value(args, "--backend")
    if target and named is not None and _names_target(named, str(target)) is False:
        out.append(f"its command line names backend {named!r}, but its backend section says {target}")
    isolation = _last_value(args, "--isolation") or "auto"
    if target and isolation == "auto" and run.get("isolation") is not None:
        expected = "off" if target in IN_PROCESS_BY_DEFAULT else "process"
        if run["isolation"] != expected:
            out.append(f"it ran with isolation {run['isolation']!r}, but --isolation auto gives {target} "
                       f"{expected!r} (in process only for the kit's own backends)")
    own = own_backends()
    if target in own and name != own[target]:
        out.append(f"its target {target} is the kit's own backend {own[target]!r}, not {name!r}")
    for there, own_name in own.items():
        if name == own_name and target != there:
            out.append(f"its name {name!r} is the kit's own backend at {there}, not {target}")
    return out


def contradictions(report: Report) -> list[str]:
    """Every way a shard report contradicts itself (see the module docstring); empty for a report certify
    wrote."""
    out = [f"its {key} is not what its own rows give" for key in derived_differences(report)]
    out += [f"row {line}" for line in row_contradictions(report["tests"])]
    spec = packaged_clauses(report["spec"].get("sha256"), report["spec"].get("version"))
    if spec is not None:
        problem = clause_list_problem(report["clauses"], spec)
        if problem:
            out.append(f"its clause list is not spec release {report['spec'].get('version')}'s: {problem}")
    out += identity_problems(report)
    return out

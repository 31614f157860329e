"""List the clauses of the transfer family: ``python -m conformance_tests clauses [options]``.

By default every operation of the family: ``push_cache`` from its spec, and each sibling from its own spec file
where it has one, else from the clause inventory (``spec/family_inventory.yaml``: the rules its documentation
states, not yet tests).  ``--spec PATH`` lists one spec file alone.  ``--sentences`` shows, under each clause, the
documentation sentences it traces to.

Exit status: 0 listed (possibly nothing), 2 bad spec or bad arguments (one line on stderr).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from conformance_tests.cli.exitcodes import USAGE_ERROR
from conformance_tests.cli.usage_parser import UsageParser
from conformance_tests.spec import LEVELS, Clause, Spec, SpecError, families, load_spec
from conformance_tests.spec.inventory import Inventory, InventoryRule, load_inventory

COLUMNS = ("ID", "LEVEL", "FAMILY", "SINCE", "UNTIL", "EXPECT")


@dataclass(frozen=True)
class Row:
    """One listed clause: a spec clause or an inventory rule, in the listing's terms."""

    id: str
    level: str
    family: str | None
    since: str | None
    until: str | None
    expect: str
    sentences: tuple[tuple[str, str], ...]  # (label, text): zh / en sentences, or the fact sheet reference
    data: dict[str, Any]

    def cells(self) -> tuple[str, ...]:
        return (self.id, self.level, self.family or "-", self.since or "-", self.until or "-", self.expect)


@dataclass(frozen=True)
class Listing:
    """One operation's clauses and where they come from."""

    operation: str
    origin: str  # "spec" (tests generated from it) or "inventory" (documented rules, not yet tests)
    about: dict[str, Any]
    rows: list[Row] = field(default_factory=list)

    def heading(self) -> str:
        if self.origin == "spec":
            return f"{self.operation}: spec {self.about['version']} ({pathlib.Path(self.about['path']).name})"
        return (f"{self.operation}: the rules its documentation states ({pathlib.Path(self.about['path']).name}),"
                " not yet tests")


def build_parser(prog: str = "push-cache-kit clauses", operations: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = UsageParser(prog=prog, description="List the clauses of the transfer family (push_cache and its "
                         "siblings), or of one spec file.")
    parser.add_argument("--spec", metavar="PATH", help="list this spec YAML alone (default: the packaged family)")
    parser.add_argument("--operation", action="append", choices=operations or None, metavar="NAME",
                        help=f"only this operation ({'|'.join(operations)}); repeatable")
    parser.add_argument("--release", metavar="NAME",
                        help="only spec clauses that hold in this release (since <= NAME < until); inventory rules "
                             "carry no release and are all listed")
    parser.add_argument("--level", action="append", choices=LEVELS, metavar="LEVEL",
                        help=f"only this level ({'|'.join(LEVELS)}); repeatable")
    parser.add_argument("--family", action="append", choices=families(), metavar="FAMILY",
                        help=f"only this family ({'|'.join(families())}); repeatable (inventory rules have none)")
    parser.add_argument("--sentences", action="store_true",
                        help="under each clause, the documentation sentences it traces to")
    parser.add_argument("--format", choices=("table", "json", "markdown"), default="table",
                        help="output format (default: table)")
    return parser


def select(spec: Spec, levels: Sequence[str] | None = None, families: Sequence[str] | None = None) -> list[Clause]:
    return [c for c in spec.clauses
            if (not levels or c.level.value in levels) and (not families or c.family in families)]


def clause_row(clause: Clause) -> dict[str, object]:
    return {
        "id": clause.id,
        "title": clause.title,
        "level": clause.level.value,
        "family": clause.family,
        "since": clause.since,
        "until": clause.until,
        "outcome": clause.expect.describe(),
        "expect": clause.expect.as_data(),
        "refines": clause.refines,
        "requires": list(clause.requires),
        "deviation": clause.deviation,
        "source": {k: v for k, v in dataclasses.asdict(clause.source).items() if v is not None},
        "cases": [case.name for case in clause.cases],
    }


def _spec_row(operation: str, clause: Clause) -> Row:
    src = clause.source
    said = tuple((lang, text) for lang, text in (("zh", src.zh), ("en", src.en)) if text)
    sentences = said or (("facts", src.ref),)
    return Row(clause.id, clause.level.value, clause.family, clause.since, clause.until, clause.expect.describe(),
               sentences, {"operation": operation, **clause_row(clause)})


def _rule_row(rule: InventoryRule) -> Row:
    sentences = (("zh", rule.sentence),) if rule.sentence else (("facts", rule.facts or "the fact sheets"),)
    data = {"operation": rule.operation, "id": rule.id, "level": rule.level.value, "says": rule.says,
            "outcome": rule.describe_expect(), "raises": list(rule.raises), "status": rule.status,
            "refines": rule.refines, "deviation": rule.deviation, "not_a_clause": rule.not_a_clause,
            "source": {"page": rule.page, "where": rule.where, "sentence": rule.sentence, "facts": rule.facts}}
    return Row(rule.id, rule.level.value, None, None, None, rule.describe_expect(), sentences, data)


def spec_listing(spec: Spec, levels: Sequence[str] | None, fams: Sequence[str] | None) -> Listing:
    about = {"version": spec.version, "path": str(spec.path), "sha256": spec.sha256, "release": spec.release}
    return Listing(spec.api, "spec", about, [_spec_row(spec.api, c) for c in select(spec, levels, fams)])


def inventory_listing(inventory: Inventory, operation: str, levels: Sequence[str] | None,
                      fams: Sequence[str] | None) -> Listing:
    rules = [r for r in inventory.of(operation)
             if (not levels or r.level.value in levels) and not fams]  # a rule has no family: --family drops it
    return Listing(operation, "inventory", {"path": str(inventory.path), "page": inventory.pages[operation]},
                   [_rule_row(r) for r in rules])


def family_listings(args: argparse.Namespace, inventory: Inventory) -> list[Listing]:
    """push_cache, then each sibling: from its packaged spec file if there is one, else from the inventory."""
    base = load_spec(release=args.release)
    listings = [spec_listing(base, args.level, args.family)]
    for operation in inventory.operations:
        own = base.path.with_name(f"{operation}.yaml")
        if own.is_file():
            listings.append(spec_listing(load_spec(own, release=args.release), args.level, args.family))
        else:
            listings.append(inventory_listing(inventory, operation, args.level, args.family))
    return [x for x in listings if not args.operation or x.operation in args.operation]


def _summary(rows: Sequence[Row], operations: int | None = None) -> str:
    counts = Counter(r.level for r in rows)
    parts = ", ".join(f"{level}: {counts[level]}" for level in LEVELS)
    where = f" in {operations} operation(s)" if operations is not None else ""
    return f"{len(rows)} clause(s){where} ({parts})"


def _sentence_lines(row: Row, prefix: str) -> list[str]:
    return [f"{prefix}{label}: {' '.join(text.split())}" for label, text in row.sentences]


def render_table(rows: Sequence[Row], sentences: bool = False) -> str:
    table = [COLUMNS, *(r.cells() for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(COLUMNS, widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for row in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row.cells(), widths, strict=True)).rstrip())
        if sentences:
            lines += _sentence_lines(row, "    ")
    lines.append(_summary(rows))
    return "\n".join(lines)


def render_markdown(rows: Sequence[Row], sentences: bool = False) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    header = [*COLUMNS, "SENTENCES"] if sentences else list(COLUMNS)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = list(row.cells())
        cells[0] = f"`{cells[0]}`"
        if sentences:
            cells.append("<br>".join(_sentence_lines(row, "")))
        lines.append("| " + " | ".join(esc(c) for c in cells) + " |")
    lines.append("")
    lines.append(_summary(rows))
    return "\n".join(lines)


def render(listings: Sequence[Listing], fmt: str, sentences: bool, family: bool) -> str:
    if fmt == "json":
        if not family:
            only = listings[0]
            return json.dumps({"spec": only.about, "clauses": [r.data for r in only.rows]},
                              indent=2, ensure_ascii=False, default=str)
        doc = {"operations": [{"operation": x.operation, "origin": x.origin, "about": x.about,
                               "clauses": len(x.rows)} for x in listings],
               "clauses": [r.data for x in listings for r in x.rows]}
        return json.dumps(doc, indent=2, ensure_ascii=False, default=str)
    draw = render_markdown if fmt == "markdown" else render_table
    if not family:
        return draw(listings[0].rows, sentences)
    heading = "## {}" if fmt == "markdown" else "{}"
    parts = [f"{heading.format(x.heading())}\n\n{draw(x.rows, sentences)}" for x in listings]
    parts.append(_summary([r for x in listings for r in x.rows], len(listings)))
    return "\n\n".join(parts)


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        inventory = load_inventory()
    except SpecError as exc:
        print(f"error: {exc}", file=err)
        return USAGE_ERROR
    operations = ("push_cache", *inventory.operations)
    parser = build_parser(operations=operations)
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:  # --help, or a bad option said in one line (usage_parser)
        return int(exc.code) if isinstance(exc.code, int) else USAGE_ERROR
    try:
        if args.spec is not None:
            spec = load_spec(args.spec, release=args.release)
            if args.operation and spec.api not in args.operation:
                print(f"error: {args.spec} is the spec of {spec.api}, not of {', '.join(args.operation)}", file=err)
                return USAGE_ERROR
            listings = [spec_listing(spec, args.level, args.family)]
        else:
            listings = family_listings(args, inventory)
    except SpecError as exc:
        print(f"error: {exc}", file=err)
        return USAGE_ERROR
    print(render(listings, args.format, args.sentences, family=args.spec is None), file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

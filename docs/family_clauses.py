"""``docs/family-clauses.md``, rendered from the transfer family's clause inventory (``spec/family_inventory.yaml``)
and the siblings' spec files it names: for each sibling operation, its rules (sentence → clause, level, outcome, the
push_cache clause it refines, the vendor's departure), the counts per level, the push_cache clauses it refines
against its own rules, the push_cache page's clauses it has no sentence for, the rules that are not clauses of the
operation's spec (and why) and the spec's clauses the inventory does not name.  A named clause's level, words,
sentence, outcome and deviation are the spec file's (``conformance_tests/spec/inventory.py`` reads them there); the
inventory gives only the push_cache clause it refines.

    python docs/family_clauses.py          print the document
    python docs/family_clauses.py --write  write docs/family-clauses.md (refused, exit 1, while the inventory and
                                           the spec files disagree: the problems go to stderr)

``tests/spec/test_family_inventory.py`` checks that the file holds what this renders.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from conformance_tests.spec import load_spec
from conformance_tests.spec.inventory import Inventory, InventoryRule, load_inventory
from conformance_tests.spec.levels import LEVELS, Level

ROOT = Path(__file__).resolve().parents[1]
INVENTORY = ROOT / "spec" / "family_inventory.yaml"
DOC = ROOT / "docs" / "family-clauses.md"


def load(path: Path = INVENTORY) -> Inventory:
    """The repository's inventory, read (and validated) by the kit's one reader of it."""
    return load_inventory(path)


def push_cache_doc_clauses() -> list[str]:
    """The push_cache clauses grounded on its own page: the rules a sibling page can state or be silent on."""
    return [c.id for c in load_spec().clauses if c.source.kind == "doc"]


def _cell(value: str | tuple[str, ...] | None) -> str:
    if value is None or value == ():
        return "—"
    if isinstance(value, tuple):
        return ", ".join(value)
    # a sentence may quote a table row, whose separators would split the cell
    return str(value).replace("|", "\\|")


def _code(value: str | None) -> str:
    return "—" if value is None else f"`{value}`"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def _counts(inventory: Inventory) -> list[str]:
    rows = []
    for op in inventory.operations:
        rules = inventory.of(op)
        page = Counter(r.level for r in rules if r.sentence is not None)
        facts = Counter(r.level for r in rules if r.sentence is None)
        named = sum(r.clause is not None for r in rules)
        rows.append(
            [f"`{op}`", *(str(page[level] + facts[level]) for level in Level), str(sum(page.values())),
             str(sum(facts.values())), str(named), str(len(rules) - named), str(len(inventory.unnamed(op))),
             str(len(rules))]
        )
    return _table(["operation", *LEVELS, "from the page", "from the fact sheets", "clauses of its spec",
                   "not clauses", "spec clauses not named", "total"], rows)


def _entries_table(rules: Sequence[InventoryRule], why: bool = False) -> list[str]:
    rows = []
    for r in rules:
        sentence = _cell(r.sentence) if r.sentence is not None else f"(fact sheets: {_cell(r.facts)})"
        row = [f"`{r.id}`", r.level.value, _cell(r.describe_expect()), sentence, _cell(r.says), _code(r.refines),
               _cell(r.deviation)]
        rows.append([*row, _cell(r.not_a_clause)] if why else row)
    header = ["clause", "level", "outcome", "sentence", "says", "refines", "the vendor departs"]
    return _table([*header, "why not a clause"] if why else header, rows)


def _refined_and_own(op: str, rules: Sequence[InventoryRule], documented: Sequence[str]) -> list[str]:
    refined = sorted({r.refines for r in rules if r.refines is not None})
    own = [r.id for r in rules if r.refines is None]
    stated = {r.refines for r in rules if r.refines is not None and r.sentence is not None}
    silent = [cid for cid in documented if cid not in stated]
    return [
        f"push_cache clauses `{op}` refines ({len(refined)}): " + ", ".join(f"`{c}`" for c in refined) + ".",
        "",
        f"Its own rules ({len(own)}): " + (", ".join(f"`{c}`" for c in own) or "none") + ".",
        "",
        f"push_cache's page clauses no sentence of this page refines ({len(silent)}; the page is silent on them, or"
        " states the rule its own way): " + (", ".join(f"`{c}`" for c in silent) or "none") + ".",
    ]


def render(inventory: Inventory | None = None, documented: Sequence[str] | None = None) -> str:
    inventory = load() if inventory is None else inventory
    documented = push_cache_doc_clauses() if documented is None else documented
    lines = [
        "# The transfer family's clauses, by operation",
        "",
        "<!-- generated by docs/family_clauses.py from spec/family_inventory.yaml and the spec files it names;"
        " do not edit -->",
        "",
        "Each rule the siblings' documentation states, sentence by sentence, with its level by the documentation rule"
        " of spec/README.md, its outcome, the push_cache clause it refines (or none: the operation's own rule) and"
        " what the vendor's code does instead. A sentence that grounds several rules has a row for each; rows without"
        " a sentence come from the fact sheets only (level should). The pages are in spec/documentation/.",
        "",
        "Where an operation has a spec file (spec/<operation>.yaml), a row names one of its clauses and everything"
        " but `refines` is that clause's (the sentence is its quote, `says` its title, the departure its deviation);"
        " the inventory gives only the push_cache clause it refines. The rules the page or the fact sheets state that"
        " are deliberately not clauses of the spec are listed apart, with why.",
        "",
        "## Counts",
        "",
        *_counts(inventory),
    ]
    for op in inventory.operations:
        rules = inventory.of(op)
        spec = inventory.specs.get(op)
        about = f"Page: `spec/documentation/{inventory.pages[op]}`."
        if spec is not None:
            about += f" Spec: `spec/{spec.path.name}` ({len(spec.clauses)} clauses)."
        lines += ["", f"## {op}", "", about, ""]
        lines += _refined_and_own(op, rules, documented)
        if spec is None:
            lines += ["", *_entries_table(rules)]
            continue
        named = [r for r in rules if r.clause is not None]
        apart = [r for r in rules if r.clause is None]
        unnamed = inventory.unnamed(op)
        lines += ["", *_entries_table(named)]
        if apart:
            lines += ["", f"Rules that are not clauses of `spec/{spec.path.name}` ({len(apart)}):", "",
                      *_entries_table(apart, why=True)]
        lines += ["", f"Clauses of `spec/{spec.path.name}` no entry names ({len(unnamed)}; the inventory does not"
                  " say which push_cache clause they refine): " + (", ".join(f"`{c}`" for c in unnamed) or "none")
                  + "."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> int:
    inventory = load()
    if inventory.problems and "--write" in argv:
        sys.stderr.write("".join(f"{inventory.path}: {p}\n" for p in inventory.problems))
        return 1
    text = render(inventory)
    if "--write" in argv:
        DOC.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

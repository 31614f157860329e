"""The coverage section of spec/README.md ("## What the spec covers") against the spec and the documentation pages.

Checked:

* every clause ID named anywhere in the section exists in the spec, and every family is named;
* for each page (``spec/documentation/push_cache.en.txt`` and ``push_cache.zh.md``),
  the README's table for that language lists every sentence of the page, once, and nothing else;
* every row names at least one clause in its ``clauses`` column, or says ``—`` and why;
* every clause in a row's ``clauses`` column is doc-sourced and quotes that sentence (a fragment of its quote in
  that language lies in it);
* every doc-sourced clause is named in a row of each sentence its quote comes from (for each fragment of its
  ``en`` / ``zh`` quote, some row whose sentence holds the fragment names it).

What a sentence is (kept simple; the README states the same rule):

* the metadata block (``---`` ... ``---``) at the top of a page is dropped, and so are code-fence lines and table
  separator rows (``| --- | --- |``);
* the prototype, from a line starting ``push_cache(`` to the line ending ``-> None``, is one sentence;
* a line starting ``- `` opens a list item, and the lines after it up to a blank line belong to it;
* every other non-blank line is one sentence: a heading (its ``#`` marks dropped), a table row (its outer ``|``
  dropped), a prose line (on these pages each prose line is one sentence).

Sentences are compared after normalising white space: table-cell separators (tab, ``|``, and ``\\|`` in the
README) read as one space and runs of white space as one space, as in ``test_quotes.py``.  Markdown escapes
(``\\_``) are text: the README quotes them as the page has them.  Without the pages the page-based tests skip,
saying why.
"""

from __future__ import annotations

import fnmatch
import re

import pytest

from conformance_tests.spec import load_spec
from tests.helpers import ROOT
from tests.helpers.seeds import SEED_PAGES

README = ROOT / "spec" / "README.md"
HEADINGS = {"en": "### English page", "zh": "### Chinese page"}
SECTION = "## What the spec covers"
ID = re.compile(r"`(push_cache\.[a-z0-9_.*]+)`")
SEPARATOR_ROW = re.compile(r"\|?[\s|:-]*-[\s|:-]*")


# ------------------------------------------------------------------------------------------------ helpers


def norm(text: str) -> str:
    """White space collapsed; a table row's cell separators (tab, |, the README's \\|) read as one space."""
    return " ".join(re.sub(r"[\t|]+", " ", text.replace("\\|", "|")).split())


def sentences(page: str) -> list[str]:
    """The page's sentences, in order (the rule in the module docstring), normalised."""
    lines = page.splitlines()
    if lines and lines[0].strip() == "---":
        ends = [i for i in range(1, len(lines)) if lines[i].strip() == "---"]
        lines = lines[ends[0] + 1:] if ends else lines
    out: list[str] = []
    prototype: list[str] | None = None
    in_item = False
    for line in lines:
        s = line.strip()
        if prototype is not None:
            prototype.append(s)
            if s.endswith("-> None"):
                out.append(" ".join(prototype))
                prototype = None
            continue
        if not s or s.startswith("```") or SEPARATOR_ROW.fullmatch(s):
            in_item = False
            continue
        if s.startswith("push_cache(") and not s.endswith("-> None"):
            prototype, in_item = [s], False
        elif s.startswith("#"):
            out.append(s.lstrip("#"))
            in_item = False
        elif s.startswith("- "):
            out.append(s[2:])
            in_item = True
        elif in_item:
            out[-1] += " " + s
        else:
            out.append(s.strip("|") if s.startswith("|") else s)
    assert prototype is None, "the prototype never reaches '-> None'"
    return [norm(s) for s in out]


def section() -> str:
    text = README.read_text(encoding="utf-8")
    assert SECTION in text, f"spec/README.md has no '{SECTION}' section"
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def table(lang: str) -> list[tuple[str, str, int]]:
    """(normalised sentence, clauses cell, README line number) for each row of the language's table."""
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    heading = text.find(HEADINGS[lang], start)
    assert heading >= 0, f"spec/README.md has no '{HEADINGS[lang]}' table under '{SECTION}'"
    first_line = text.count("\n", 0, heading) + 1
    rows: list[tuple[str, str, int]] = []
    seen_table = False
    for offset, line in enumerate(text[heading:].splitlines()[1:], start=first_line + 1):
        if not line.startswith("|"):
            if seen_table:
                break
            continue
        seen_table = True
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if SEPARATOR_ROW.fullmatch(line.strip()) or cells[:2] == ["sentence", "clauses"]:
            continue
        assert len(cells) >= 2, f"spec/README.md:{offset}: a coverage row needs a sentence and a clauses cell"
        rows.append((norm(cells[0]), cells[1], offset))
    assert rows, f"the '{HEADINGS[lang]}' table in spec/README.md has no rows"
    return rows


def fragments(quote: str) -> list[str]:
    return [norm(f) for f in quote.split(" ... ") if f.strip()]


@pytest.fixture(scope="module")
def pages(seed_pages: dict[str, str]) -> dict[str, list[str]]:
    return {lang: sentences(text) for lang, text in seed_pages.items()}


# ------------------------------------------------------------------------------------------------ spec only


def test_every_id_in_the_coverage_section_exists():
    spec = load_spec()
    ids = {c.id for c in spec.clauses}
    named = ID.findall(section())
    assert len(named) > 60
    for name in named:
        assert any(fnmatch.fnmatchcase(i, name) for i in ids), f"spec/README.md names {name}, which the spec lacks"
    families = {c.family for c in spec.clauses}
    assert families <= {n.split(".")[1] for n in named}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_row_names_a_clause_or_says_why_not(lang):
    bad = []
    for sentence, cell, line in table(lang):
        if ID.search(cell):
            continue
        if not (cell.startswith("—") and cell.lstrip("—").strip()):
            bad.append(f"spec/README.md:{line}: {sentence[:60]!r}: the clauses cell is {cell!r}, expected "
                       "backticked clause IDs or '— <reason>'")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_clause_in_a_row_quotes_that_sentence(lang):
    spec = load_spec()
    by_id = {c.id: c for c in spec.clauses}
    bad = []
    for sentence, cell, line in table(lang):
        for cid in ID.findall(cell):
            clause = by_id.get(cid)
            if clause is None:
                continue  # reported by test_every_id_in_the_coverage_section_exists
            quote = getattr(clause.source, lang)
            if clause.source.kind != "doc" or not quote:
                bad.append(f"spec/README.md:{line}: {cid} has no {lang} documentation quote; name it in the notes")
            elif not any(f in sentence for f in fragments(quote)):
                bad.append(f"spec/README.md:{line}: {cid} quotes none of {sentence[:60]!r}...")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_doc_clause_is_in_the_row_of_each_sentence_it_quotes(lang):
    spec = load_spec()
    rows = table(lang)
    missing = []
    for clause in spec.clauses:
        quote = getattr(clause.source, lang)
        if clause.source.kind != "doc" or not quote:
            continue
        for fragment in fragments(quote):
            holders = [(cell, line) for sentence, cell, line in rows if fragment in sentence]
            if not any(clause.id in ID.findall(cell) for cell, _ in holders):
                where = ", ".join(f"line {line}" for _, line in holders) or "no row holds it"
                missing.append(f"{clause.id}: {fragment[:60]!r} ({where})")
    assert not missing, (f"doc-sourced clauses missing from the {lang} coverage table of spec/README.md:\n"
                         + "\n".join(missing))


# ------------------------------------------------------------------------------------------------ with the pages


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_sentence_of_the_page_has_a_row(pages, lang):
    rows = [sentence for sentence, _, _ in table(lang)]
    missing = [s for s in pages[lang] if s not in rows]
    assert not missing, (f"{len(missing)} sentence(s) of {SEED_PAGES[lang]} are not in the {HEADINGS[lang]!r} table of "
                         "spec/README.md:\n" + "\n".join(f"  {s}" for s in missing))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_row_is_a_sentence_of_the_page_once(pages, lang):
    rows = table(lang)
    stale = [f"spec/README.md:{line}: {s[:80]!r}" for s, _, line in rows if s not in pages[lang]]
    assert not stale, f"rows that are not sentences of {SEED_PAGES[lang]}:\n" + "\n".join(stale)
    counts: dict[str, int] = {}
    for s, _, _ in rows:
        counts[s] = counts.get(s, 0) + 1
    repeated = [s for s, n in counts.items() if n > pages[lang].count(s)]
    assert not repeated, "sentences listed more often than the page has them:\n" + "\n".join(repeated)


def test_the_splitting_rule_finds_the_known_sentences(pages):
    """A guard on the splitter itself: the prototype is one sentence, each parameter row is one, and the Chinese
    list item written over three lines is one."""
    for lang in ("en", "zh"):
        protos = [s for s in pages[lang] if s.startswith("push_cache(")]
        assert len(protos) == 1 and protos[0].endswith("-> None"), protos
        for param in ("dst_cache_key ", "src_cache ", "src_batch_index ", "src_layer_range ", "dst_layer_range ",
                      "tensor_num_per_layer ", "size "):
            assert sum(1 for s in pages[lang] if s.replace("\\_", "_").startswith(param)) == 1, (lang, param)
    assert "开启 enable_remote_cache_accessible 时，只支持cache_key类型为 CacheKeyByIdAndIndex 。" in pages["zh"]
    assert not any(s.startswith(("title:", "url:", "---")) for s in pages["zh"])

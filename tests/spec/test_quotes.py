"""Every documentation-sourced clause quotes the push_cache pages exactly: each fragment of its ``en`` and ``zh``
sentence (fragments are joined by " ... ") occurs in the seed page of that language, character for character
(runs of white space and table-cell separators aside).  The pages are in spec/documentation/."""

from __future__ import annotations

import re

import pytest

from conformance_tests.spec import load_spec
from tests.helpers.seeds import SEED_PAGES


def _norm(text: str) -> str:
    """White space collapsed; a table row's cell separators (tab, |) read as one space."""
    return " ".join(re.sub(r"[\t|]+", " ", text).split())


def _fragments(quote: str) -> list[str]:
    return [f.strip() for f in quote.split(" ... ") if f.strip()]


@pytest.fixture(scope="module")
def pages(seed_pages: dict[str, str]) -> dict[str, str]:
    return {lang: _norm(text) for lang, text in seed_pages.items()}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_quote_is_in_the_documentation(pages, lang):
    spec = load_spec()
    missing = []
    for clause in spec.clauses:
        quote = getattr(clause.source, lang)
        if clause.source.kind != "doc" or not quote:
            continue
        for fragment in _fragments(quote):
            if _norm(fragment) not in pages[lang]:
                missing.append(f"{clause.id}: {fragment!r}")
    assert not missing, f"{len(missing)} {lang} quote fragment(s) not found in {SEED_PAGES[lang]}:\n" + "\n".join(missing)

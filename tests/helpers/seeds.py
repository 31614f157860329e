"""The push_cache documentation pages the spec quotes (CANN 9.0, English and Chinese), kept in the repository
beside the spec (``spec/documentation/``) so that the tests comparing the spec with them run everywhere."""

from __future__ import annotations

from tests.helpers import ROOT

SEEDS = ROOT / "spec" / "documentation"
#: each page's file name, by language
SEED_PAGES = {"en": "push_cache.en.txt", "zh": "push_cache.zh.md"}

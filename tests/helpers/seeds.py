"""The push_cache documentation pages the spec quotes, in ../shared/seeds/ beside the checkout."""

from __future__ import annotations

from tests.helpers import ROOT

SEEDS = ROOT.parent / "shared" / "seeds"
#: each page's file name, by language
SEED_PAGES = {"en": "push_cache.en.txt", "zh": "push_cache.zh.md"}

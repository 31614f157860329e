"""Fixtures the kit's self-tests share."""

from __future__ import annotations

import pytest
from hypothesis import settings


@pytest.fixture
def quick():
    """The quick hypothesis profile for one test (a history or a stream in a fraction of certify's examples),
    the profile before it restored after."""
    previous = settings.default
    settings.load_profile("quick")
    yield
    settings.register_profile("_restore", previous)
    settings.load_profile("_restore")

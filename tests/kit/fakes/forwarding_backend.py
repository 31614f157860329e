"""Fake backend whose cache manager defines no operation of its own: every one comes through ``__getattr__``, as
from an adapter that forwards (examples/third_party_backend/adapter.py forwards all but push_cache), so in the
backend's process each is a bound method of another object.  ``adds`` and ``negates`` are two objects of one
forwarding class whose ``op`` has a different signature each (tests/kit/test_isolation_forwarded.py)."""

from __future__ import annotations

from typing import Any

from _proxy import backend_with


class ForwardingCacheManager:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def forward_to(self, other: ForwardingCacheManager) -> None:
        """From now on forward to what ``other`` forwards to (what ``__getattr__`` hands out may change)."""
        self._inner = other._inner


class Adds:
    def op(self, x: int, y: int = 2) -> int:
        return x + y


class Negates:
    def op(self, value: int, *, scale: int = 1) -> int:
        return -value * scale


backend = backend_with("fake-forwarding", ForwardingCacheManager)
backend.adds = ForwardingCacheManager(Adds())
backend.negates = ForwardingCacheManager(Negates())

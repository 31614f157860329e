"""Backends named so that a careless report folder would land outside reports/: ``..``, empty, a path."""

from __future__ import annotations

from _proxy import ProxyBackend

dotdot = ProxyBackend("..")
empty = ProxyBackend("")
path = ProxyBackend("../../escaped/x")

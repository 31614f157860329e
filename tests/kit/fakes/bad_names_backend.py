"""Backends named so that a careless report folder would land outside reports/: ``..``, empty, a path."""

from __future__ import annotations

from _proxy import ProxyBackend

dotdot = ProxyBackend("..")
empty = ProxyBackend("")
path = ProxyBackend("../../escaped/x")
surrogate = ProxyBackend("bad\udc80name")  # a lone surrogate: not writable as UTF-8 as it is
han_a = ProxyBackend("后端")
han_b = ProxyBackend("前端")

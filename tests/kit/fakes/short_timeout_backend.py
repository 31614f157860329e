"""Fake backend, correct only with delays far below the budget (the fixed scaffolding of the histories before
issue 29: a within-budget delay was half the budget at most): it reads llm.SyncKvCacheWaitTime and waits 60% of
it (1000 ms, the default, where the option is not set), so a transfer delayed near its budget times out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from _proxy import ProxyBackend, ProxyCluster

from reference_impl.backend import backend as reference

OPTION = "llm.SyncKvCacheWaitTime"
DEFAULT_MS = 1000
#: the share of the budget this backend waits
SHARE = 0.6


def _clamped(spec: Mapping[str, Any]) -> dict[str, Any]:
    options = dict(spec.get("options") or {})
    given = options.get(OPTION)
    if given is not None and not (isinstance(given, str) and given.isdigit()):
        return dict(spec)  # a value the reference refuses: refused as it is
    budget = DEFAULT_MS if given is None else int(given)
    options[OPTION] = str(max(1, round(SHARE * budget)))
    return {**spec, "options": options}


class ShortTimeoutBackend(ProxyBackend):
    def open_cluster(self, node_specs: Sequence[Mapping[str, Any]]) -> Any:
        return ProxyCluster(reference.open_cluster([_clamped(s) for s in node_specs]))


backend = ShortTimeoutBackend("fake-short-timeout")

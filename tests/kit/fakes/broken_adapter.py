"""Fake backend whose adapter is broken: read_tensor returns zeros whatever the memory holds."""

from __future__ import annotations

import numpy as np
from _proxy import ProxyBackend, ProxyCluster, ProxyNode


class BlindNode(ProxyNode):
    def read_tensor(self, cache, index):  # noqa: ANN001, ANN201
        return np.zeros_like(self._inner.read_tensor(cache, index))


class BlindCluster(ProxyCluster):
    node_cls = BlindNode


class BlindBackend(ProxyBackend):
    cluster_cls = BlindCluster


backend = BlindBackend("fake-broken-adapter")

"""AcmeKV adapter: how a third-party push_cache implementation plugs into the conformance kit.

The kit finds the backend by this file (``--backend adapter.py``; or as the module
``examples.third_party_backend.adapter:backend`` in the kit's clone) and talks to it only through the protocol in ``conformance_tests/backend.py`` (checked structurally - nothing here imports the kit):

* ``AcmeBackend``: ``name``, ``version``, ``capabilities()``, ``open_cluster(node_specs)``
* ``AcmeCluster``: ``node(id)``, ``link``, ``unlink``, ``close``
* ``AcmeNode``: ``cluster_id``, ``api`` (the llm_datadist names), ``cache_manager`` (the object under test),
  ``write_tensor`` / ``read_tensor`` and, for the capabilities it declares, ``alloc_memory`` /
  ``read_memory`` / ``write_memory`` and ``inject``.

AcmeKV itself is simulated by the reference implementation (``reference_impl``), standing in for the vendor
library a real adapter would wrap.  It differs from the vendor's llm_datadist in one deliberate way:

    AcmeKV accepts ``size`` equal to the byte size of one local KV entry as a synonym of ``-1`` (the
    documentation: "The default value -1 indicates the size of a local KV entry"); the vendor refuses it.

The documentation allows either ("Other values are not supported at present" names no error), so AcmeKV is
certified; the kit reports it incompatible with the vendor on ``push_cache.restriction.size.entry_size.status``,
and AcmeKV records that in ``expectations.yaml`` next to this file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reference_impl.backend import backend as _engine  # AcmeKV's "vendor library" in this example

_ITEMSIZE = {"DT_FLOAT": 4, "DT_FLOAT16": 2, "DT_BF16": 2, "DT_INT8": 1, "DT_UINT8": 1, "DT_BOOL": 1,
             "DT_INT16": 2, "DT_UINT16": 2, "DT_INT32": 4, "DT_UINT32": 4, "DT_INT64": 8, "DT_UINT64": 8,
             "DT_DOUBLE": 8, "DT_STRING": 16}


def _entry_bytes(cache: Any) -> int | None:
    """Bytes of one batch entry of one tensor of ``cache`` (None when the cache does not say)."""
    desc = getattr(cache, "cache_desc", None)
    shape = list(getattr(desc, "shape", None) or [])
    dtype = getattr(getattr(desc, "data_type", None), "name", None)
    if not shape or dtype not in _ITEMSIZE or shape[0] <= 0:
        return None
    return math.prod(shape) * _ITEMSIZE[dtype] // shape[0]


class AcmeCacheManager:
    """The object under test: push_cache with AcmeKV's size extension, everything else passed through."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:  # allocate_cache, register_cache, deallocate_cache, ...
        return getattr(self._inner, name)

    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # noqa: ANN001
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        # AcmeKV deviation: an explicit size equal to one local KV entry means "one local KV entry" (-1)
        if isinstance(size, int) and not isinstance(size, bool) and size > 0 and size == _entry_bytes(src_cache):
            size = -1
        return self._inner.push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range,
                                      dst_layer_range, size, tensor_num_per_layer)


class AcmeNode:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.cluster_id: int = inner.cluster_id
        self.api = inner.api
        self.cache_manager = AcmeCacheManager(inner.cache_manager)

    def write_tensor(self, cache: Any, index: int, data: np.ndarray) -> None:
        self._inner.write_tensor(cache, index, data)

    def read_tensor(self, cache: Any, index: int) -> np.ndarray:
        return self._inner.read_tensor(cache, index)

    def alloc_memory(self, placement: str, nbytes: int) -> int:
        return self._inner.alloc_memory(placement, nbytes)

    def read_memory(self, addr: int, nbytes: int) -> np.ndarray:
        return self._inner.read_memory(addr, nbytes)

    def write_memory(self, addr: int, data: np.ndarray) -> None:
        self._inner.write_memory(addr, data)

    def inject(self, fault: Mapping[str, Any]) -> None:
        self._inner.inject(fault)


class AcmeCluster:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._nodes: dict[int, AcmeNode] = {}

    def node(self, cluster_id: int) -> AcmeNode:
        if cluster_id not in self._nodes:
            self._nodes[cluster_id] = AcmeNode(self._inner.node(cluster_id))
        return self._nodes[cluster_id]

    def link(self, client: int, server: int) -> None:
        self._inner.link(client, server)

    def unlink(self, client: int, server: int) -> None:
        self._inner.unlink(client, server)

    def close(self) -> None:
        self._inner.close()


class AcmeBackend:
    name = "acme-kv"
    version = "1.4.2"

    def capabilities(self) -> dict[str, Any]:
        caps = dict(_engine.capabilities())
        caps["product"] = "AcmeKV emulator"
        return caps

    def open_cluster(self, node_specs: Sequence[Mapping[str, Any]]) -> AcmeCluster:
        return AcmeCluster(_engine.open_cluster(node_specs))


backend = AcmeBackend()

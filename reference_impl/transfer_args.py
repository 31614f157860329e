"""The argument records of the transfer calls (push_cache and its siblings), and what a push derives once per
(local, remote) pair.

Each record names its operation (``operation``) and the key its native errors report (``error_key``), so the
shared steps word their messages per operation without knowing which one runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

#: the vendor's default tensor_num_per_layer (K and V), facts §1.1
NUM_TENSORS_PER_LAYER = 2
_NUM_TENSORS_PER_LAYER = NUM_TENSORS_PER_LAYER  # the name the multi-process reference imports

SlicePairs = list[tuple[np.ndarray, np.ndarray]]


@dataclass(slots=True, eq=False)
class PushPlan:
    """What a push derives once from its (local, remote) pair: the pair-only checks passed, and byte offsets."""

    local: Any
    remote: Any
    src_offset: int
    dst_offset: int
    nbytes: int
    #: with the default ``_src_view``/``_dst_view``: this slot of every local/remote tensor (else None)
    src_slots: list[np.ndarray] | None = None
    dst_slots: list[np.ndarray] | None = None
    #: with the default ``_tensor_pairs`` too: a layer's pairs are a slice of the slot lists
    default_pairs: bool = False


@dataclass(slots=True)
class PushArgs:
    """The arguments of one push_cache call; the default-range step fills in the ranges."""

    operation: ClassVar[str] = "push_cache"

    dst_cache_key: Any
    src_cache: Any
    src_batch_index: Any
    src_layer_range: Any
    dst_layer_range: Any
    size: Any
    tensor_num_per_layer: Any
    #: set by ``_push_layer`` at the first layer (and again if the local or remote entry changes)
    plan: PushPlan | None = None
    #: seconds of transfer this push has waited so far (``_await_transfer``)
    spent: float = 0.0

    @property
    def error_key(self) -> str:
        return f"dst_cache_key = {self.dst_cache_key}"

    @property
    def local_cache(self) -> Any:
        """The cache on the calling node, whose tensor count sets the default ranges (facts §1.2 #10)."""
        return self.src_cache

    @property
    def peer_cluster_id(self) -> int:
        """The cluster on the other end of the transfer (the one the key names)."""
        return int(self.dst_cache_key.cluster_id)

    @property
    def remote_cache_id(self) -> int:
        return int(self.dst_cache_key.cache_id)

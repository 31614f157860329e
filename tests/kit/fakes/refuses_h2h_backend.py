"""The reference, except that it refuses host-to-host pushes (LLM_PARAM_INVALID, before any byte moves).

Host-to-host is implementation-defined (``push_cache.data.host_to_host`` is a ``may`` clause), so a conforming
suite must CERTIFY this backend.
"""

from __future__ import annotations

from reference_impl.backend import ReferenceBackend
from reference_impl.cache_manager import CacheManager
from reference_impl.enums import Placement
from reference_impl.status import LLMStatusCode


class RefusesHostToHost(CacheManager):
    def _check_restrictions(self, a, local, remote):  # type: ignore[no-untyped-def]
        # runs for each layer before its slices are built, so the first layer refuses before anything is written
        if local.placement == Placement.HOST and remote.placement == Placement.HOST:
            raise self._native_error(a, LLMStatusCode.LLM_PARAM_INVALID, "host to host push is not supported")
        super()._check_restrictions(a, local, remote)


backend = ReferenceBackend(name="fake-refuses-h2h", cache_manager_cls=RefusesHostToHost)

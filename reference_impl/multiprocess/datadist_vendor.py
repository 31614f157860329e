"""The multi-process reference in vendor mode behind the vendor's public API:
``import reference_impl.multiprocess.datadist_vendor as llm_datadist``.

The same as :mod:`reference_impl.multiprocess.datadist`, with the vendor-mode CacheManager
(:mod:`reference_impl.multiprocess.vendor`): a CPU stand-in that reproduces the vendor's recorded deviations
across processes.
"""

from __future__ import annotations

from . import datadist as _datadist
from .datadist import (  # noqa: F401 - the same names as the reference facade
    CONFORMANCE_DEVICE_MEMORY,
    CONFORMANCE_FAULTS,
    BlocksCacheKey,
    Cache,
    CacheDesc,
    CacheKey,
    CacheKeyByIdAndIndex,
    CacheManager,
    DataType,
    LLMClusterInfo,
    LLMConfig,
    LlmConfig,
    LLMException,
    LLMRole,
    LLMStatusCode,
    Placement,
    __all__,
    __version__,
    conformance_bench_raw,
    conformance_inject,
    conformance_stats,
)
from .vendor import VendorMultiprocessCacheManager


class LLMDataDist(_datadist.LLMDataDist):
    cache_manager_cls = VendorMultiprocessCacheManager

"""Reference backend for LLM-DataDist ``CacheManager.push_cache``: an executable model whose public names
mirror ``llm_datadist``. Many nodes live in one process on a simulated ``Fabric``; see README.md."""

from __future__ import annotations

from .cache import Cache
from .cache_desc import CacheDesc
from .cache_keys import BlocksCacheKey, CacheKey, CacheKeyByIdAndIndex
from .cache_manager import CacheManager
from .cluster_info import LLMClusterInfo
from .config import LLMConfig, LlmConfig
from .enums import DataType, LLMRole, Placement
from .fabric import Fabric, LinkParams, default_fabric
from .llm_datadist import LLMDataDist
from .status import LLMException, LLMStatusCode
from .transfer_args import PushArgs

__version__ = "0.1.0"

__all__ = [
    "BlocksCacheKey", "Cache", "CacheDesc", "CacheKey", "CacheKeyByIdAndIndex", "CacheManager", "DataType",
    "Fabric", "LinkParams", "LLMClusterInfo", "LLMConfig", "LlmConfig", "LLMDataDist", "LLMException",
    "LLMRole", "LLMStatusCode", "Placement", "PushArgs", "__version__", "default_fabric",
]

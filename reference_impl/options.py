"""Engine options: the ``llm.*`` strings given to ``LLMDataDist.init``, parsed and validated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .pool import PoolConfig, parse_pool_config
from .status import LLMException, LLMStatusCode

DEFAULT_SYNC_KV_TIMEOUT_MS = 1000

OPT_SYNC_KV_TIMEOUT = "llm.SyncKvCacheWaitTime"
OPT_ENABLE_CACHE_MANAGER = "llm.EnableCacheManager"
OPT_REMOTE_CACHE_ACCESSIBLE = "llm.EnableRemoteCacheAccessible"
OPT_MEM_POOL = "llm.MemPoolConfig"
OPT_HOST_MEM_POOL = "llm.HostMemPoolConfig"
OPT_LISTEN_IP_INFO = "llm.listenIpInfo"
OPT_LOCAL_COMM_RES = "llm.LocalCommRes"
OPT_TRANSFER_BACKEND = "llm.TransferBackend"
OPT_FLOW_GRAPH_MEM_MAX_SIZE = "ge.flowGraphMemMaxSize"


def _invalid(msg: str) -> LLMException:
    return LLMException(msg, status_code=LLMStatusCode.LLM_PARAM_INVALID)


@dataclass(frozen=True, slots=True)
class EngineOptions:
    raw: Mapping[str, str]
    enable_cache_manager: bool
    enable_remote_cache_accessible: bool
    mem_pool: PoolConfig | None
    host_mem_pool: PoolConfig | None
    sync_kv_timeout_ms: int
    local_comm_res: str | None

    @property
    def sync_kv_timeout_s(self) -> float:
        return self.sync_kv_timeout_ms / 1000.0


def _flag(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key, "0")
    if value not in ("0", "1"):
        raise _invalid(f"{key} must be '0' or '1', got {value!r}")
    return value == "1"


def _positive_int(options: Mapping[str, str], key: str, default: int) -> int:
    if key not in options:
        return default
    text = options[key]
    if not text.isdigit() or int(text) <= 0:
        raise _invalid(f"{key} must be a positive integer, got {text!r}")
    return int(text)


def _pool(options: Mapping[str, str], key: str) -> PoolConfig | None:
    text = options.get(key, "")
    return parse_pool_config(key, text) if text else None


def normalize_options(options: object) -> dict[str, str]:
    """The Python-layer part of ``LLMDataDist.init``: types, defaults derived from other options."""
    if not isinstance(options, dict):
        raise TypeError(f"options only support ['dict'], but got {type(options)}.")
    for key, value in options.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"options must be dict[str, str], but got {key!r}: {type(value)}.")
    opts = dict(options)
    if OPT_LOCAL_COMM_RES in opts:
        opts.setdefault(OPT_ENABLE_CACHE_MANAGER, "1")
        opts.setdefault(OPT_REMOTE_CACHE_ACCESSIBLE, "1")
    if OPT_TRANSFER_BACKEND in opts:
        opts.setdefault(OPT_REMOTE_CACHE_ACCESSIBLE, "1")
        if opts[OPT_REMOTE_CACHE_ACCESSIBLE] != "1":
            raise _invalid(f"{OPT_TRANSFER_BACKEND} needs {OPT_REMOTE_CACHE_ACCESSIBLE} = '1'")
        if OPT_LISTEN_IP_INFO not in opts:
            raise _invalid(f"{OPT_TRANSFER_BACKEND} needs {OPT_LISTEN_IP_INFO}")
    if OPT_FLOW_GRAPH_MEM_MAX_SIZE in opts:
        value = opts[OPT_FLOW_GRAPH_MEM_MAX_SIZE]
        if "," in value:
            raise _invalid(f"{OPT_FLOW_GRAPH_MEM_MAX_SIZE} only supports one value, got {value!r}")
        if not value.isdigit():
            raise _invalid(f"{OPT_FLOW_GRAPH_MEM_MAX_SIZE} must be digits, got {value!r}")
    if OPT_LISTEN_IP_INFO in opts:
        ip, sep, port = opts[OPT_LISTEN_IP_INFO].rpartition(":")
        if not sep or not ip or not port.isdigit() or int(port) > 65535:
            raise _invalid(f"{OPT_LISTEN_IP_INFO} must be 'ip:port', got {opts[OPT_LISTEN_IP_INFO]!r}")
        opts["llm.ListenIp"] = ip
        opts["llm.ListenPort"] = port
    return opts


def parse_engine_options(options: Mapping[str, str]) -> EngineOptions:
    """The native part of init: flags, timeout and pool configurations (LLM_PARAM_INVALID on faults)."""
    return EngineOptions(
        raw=dict(options),
        enable_cache_manager=_flag(options, OPT_ENABLE_CACHE_MANAGER),
        enable_remote_cache_accessible=_flag(options, OPT_REMOTE_CACHE_ACCESSIBLE),
        mem_pool=_pool(options, OPT_MEM_POOL),
        host_mem_pool=_pool(options, OPT_HOST_MEM_POOL),
        sync_kv_timeout_ms=_positive_int(options, OPT_SYNC_KV_TIMEOUT, DEFAULT_SYNC_KV_TIMEOUT_MS),
        local_comm_res=options.get(OPT_LOCAL_COMM_RES),
    )

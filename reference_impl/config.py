"""``LLMConfig``: typed engine settings that generate the ``llm.*`` option strings for ``LLMDataDist.init``."""

from __future__ import annotations

from typing import Any

from .checks import check_int32, check_isinstance, check_uint32
from .status import raise_if_false


class LLMConfig:
    """Set attributes, then ``generate_options()``; only attributes that were set produce options."""

    def __init__(self) -> None:
        self._device_id: int | list[int] | tuple[int, ...] | None = None
        self._sync_kv_timeout: int | str | None = None
        self._enable_cache_manager: bool | None = None
        self._enable_remote_cache_accessible: bool | None = None
        self._mem_pool_cfg: str | None = None
        self._host_mem_pool_cfg: str | None = None
        self._listen_ip_info: str | None = None
        self._local_comm_res: str | None = None
        self._transfer_backend: str | None = None
        self._link_total_time: int | None = None
        self._link_retry_count: int | None = None
        self._rdma_traffic_class: int | None = None
        self._rdma_service_level: int | None = None
        self._buf_pool_cfg: str | None = None
        self._global_resource_config: str | None = None
        self._ge_options: dict[str, str] = {}
        self._mem_utilization = 0.95

    # ---- device ------------------------------------------------------------------------------------
    @property
    def device_id(self) -> int | list[int] | tuple[int, ...] | None:
        return self._device_id

    @device_id.setter
    def device_id(self, value: int | list[int] | tuple[int, ...]) -> None:
        check_isinstance("device_id", value, [int, list, tuple], allow_none=False)
        for dev in value if isinstance(value, list | tuple) else [value]:
            check_int32("device_id", dev)
            if dev < 0:
                raise ValueError(f"device_id's value is out of range,{dev} should be >= 0.")
        self._device_id = value

    # ---- timeouts ----------------------------------------------------------------------------------
    @property
    def sync_kv_timeout(self) -> int | str | None:
        return self._sync_kv_timeout

    @sync_kv_timeout.setter
    def sync_kv_timeout(self, value: int | str) -> None:
        check_isinstance("sync_kv_timeout", value, [int, str], allow_none=False)
        if isinstance(value, str):
            raise_if_false(value.isdigit(), "sync_kv_timeout ({0}) should be digits.", value)
        raise_if_false(int(value) > 0, "sync_kv_timeout ({0}) should be > 0.", value)
        check_int32("sync_kv_timeout", int(value))
        self._sync_kv_timeout = value

    @property
    def link_total_time(self) -> int | None:
        return self._link_total_time

    @link_total_time.setter
    def link_total_time(self, value: int) -> None:
        check_uint32("link_total_time", value)
        self._link_total_time = value

    @property
    def link_retry_count(self) -> int | None:
        return self._link_retry_count

    @link_retry_count.setter
    def link_retry_count(self, value: int) -> None:
        check_isinstance("link_retry_count", value, [int], allow_none=False)
        if not 1 <= value <= 100:
            raise ValueError(f"link_retry_count's value is out of range,{value} is not in [1, 100].")
        self._link_retry_count = value

    # ---- flags -------------------------------------------------------------------------------------
    @property
    def enable_cache_manager(self) -> bool:
        return bool(self._enable_cache_manager)

    @enable_cache_manager.setter
    def enable_cache_manager(self, value: bool) -> None:
        check_isinstance("enable_cache_manager", value, [bool], allow_none=False)
        self._enable_cache_manager = value

    @property
    def enable_remote_cache_accessible(self) -> bool:
        return bool(self._enable_remote_cache_accessible)

    @enable_remote_cache_accessible.setter
    def enable_remote_cache_accessible(self, value: bool) -> None:
        check_isinstance("enable_remote_cache_accessible", value, [bool], allow_none=False)
        self._enable_remote_cache_accessible = value

    # ---- strings -----------------------------------------------------------------------------------
    def _set_str(self, name: str, value: Any) -> None:
        check_isinstance(name, value, [str], allow_none=False)
        setattr(self, "_" + name, value)

    @property
    def mem_pool_cfg(self) -> str | None:
        return self._mem_pool_cfg

    @mem_pool_cfg.setter
    def mem_pool_cfg(self, value: str) -> None:
        self._set_str("mem_pool_cfg", value)

    @property
    def host_mem_pool_cfg(self) -> str | None:
        return self._host_mem_pool_cfg

    @host_mem_pool_cfg.setter
    def host_mem_pool_cfg(self, value: str) -> None:
        self._set_str("host_mem_pool_cfg", value)

    @property
    def listen_ip_info(self) -> str | None:
        return self._listen_ip_info

    @listen_ip_info.setter
    def listen_ip_info(self, value: str) -> None:
        self._set_str("listen_ip_info", value)

    @property
    def local_comm_res(self) -> str | None:
        return self._local_comm_res

    @local_comm_res.setter
    def local_comm_res(self, value: str) -> None:
        self._set_str("local_comm_res", value)

    @property
    def transfer_backend(self) -> str | None:
        return self._transfer_backend

    @transfer_backend.setter
    def transfer_backend(self, value: str) -> None:
        self._set_str("transfer_backend", value)

    @property
    def buf_pool_cfg(self) -> str | None:
        return self._buf_pool_cfg

    @buf_pool_cfg.setter
    def buf_pool_cfg(self, value: str) -> None:
        self._set_str("buf_pool_cfg", value)

    @property
    def global_resource_config(self) -> str | None:
        return self._global_resource_config

    @global_resource_config.setter
    def global_resource_config(self, value: str) -> None:
        self._set_str("global_resource_config", value)

    # ---- rdma --------------------------------------------------------------------------------------
    @property
    def rdma_traffic_class(self) -> int | None:
        return self._rdma_traffic_class

    @rdma_traffic_class.setter
    def rdma_traffic_class(self, value: int) -> None:
        check_uint32("rdma_traffic_class", value)
        self._rdma_traffic_class = value

    @property
    def rdma_service_level(self) -> int | None:
        return self._rdma_service_level

    @rdma_service_level.setter
    def rdma_service_level(self, value: int) -> None:
        check_uint32("rdma_service_level", value)
        self._rdma_service_level = value

    @property
    def ge_options(self) -> dict[str, str]:
        return self._ge_options

    @ge_options.setter
    def ge_options(self, value: dict[str, str]) -> None:
        check_isinstance("ge_options", value, [dict], allow_none=False)
        for k, v in value.items():
            check_isinstance("ge_options key", k, [str], allow_none=False)
            check_isinstance("ge_options value", v, [str], allow_none=False)
        self._ge_options = dict(value)

    # ---- output ------------------------------------------------------------------------------------
    def generate_options(self) -> dict[str, str]:
        opts: dict[str, str] = {}
        if self._device_id is not None:
            dev = self._device_id
            text = ",".join(str(d) for d in dev) if isinstance(dev, list | tuple) else str(dev)
            opts["ge.exec.deviceId"] = text
            opts["ge.session_device_id"] = text
        if self._sync_kv_timeout is not None:
            opts["llm.SyncKvCacheWaitTime"] = str(int(self._sync_kv_timeout))
        if self._enable_cache_manager is not None:
            opts["llm.EnableCacheManager"] = "1" if self._enable_cache_manager else "0"
        if self._enable_remote_cache_accessible is not None:
            opts["llm.EnableRemoteCacheAccessible"] = "1" if self._enable_remote_cache_accessible else "0"
        strings = (("llm.MemPoolConfig", self._mem_pool_cfg), ("llm.HostMemPoolConfig", self._host_mem_pool_cfg),
                   ("llm.listenIpInfo", self._listen_ip_info), ("llm.LocalCommRes", self._local_comm_res),
                   ("llm.TransferBackend", self._transfer_backend), ("llm.BufPoolCfg", self._buf_pool_cfg),
                   ("llm.GlobalResourceConfig", self._global_resource_config))
        opts.update({k: v for k, v in strings if v is not None})
        numbers = (("llm.LinkTotalTime", self._link_total_time), ("llm.LinkRetryCount", self._link_retry_count),
                   ("llm.RdmaTrafficClass", self._rdma_traffic_class),
                   ("llm.RdmaServiceLevel", self._rdma_service_level))
        opts.update({k: str(v) for k, v in numbers if v is not None})
        opts["llm.MemoryUtilization"] = str(self._mem_utilization)
        opts.update(self._ge_options)
        return opts

    gen_options = generate_options


LlmConfig = LLMConfig

"""LLMConfig options, LLMDataDist init/finalize, cache_manager access, link_clusters/unlink_clusters."""

from __future__ import annotations

from typing import Any

import pytest

from reference_impl import (
    Fabric,
    LLMClusterInfo,
    LLMConfig,
    LLMDataDist,
    LLMException,
    LLMRole,
    LLMStatusCode,
)
from tests.helpers.nodes import ONE_PROCESS, node_options, pool

S = LLMStatusCode


class TestLLMConfig:
    def test_generate_options(self) -> None:
        c = LLMConfig()
        c.device_id = 0
        c.sync_kv_timeout = "3000"
        c.enable_cache_manager = True
        c.enable_remote_cache_accessible = True
        c.mem_pool_cfg = pool(1 << 20)
        c.host_mem_pool_cfg = pool(1 << 20)
        c.listen_ip_info = "127.0.0.1:26000"
        c.local_comm_res = ""
        opts = c.generate_options()
        assert opts["llm.SyncKvCacheWaitTime"] == "3000"
        assert opts["llm.EnableCacheManager"] == "1" and opts["llm.EnableRemoteCacheAccessible"] == "1"
        assert opts["llm.MemPoolConfig"] == pool(1 << 20) and opts["llm.HostMemPoolConfig"] == pool(1 << 20)
        assert opts["llm.listenIpInfo"] == "127.0.0.1:26000" and opts["llm.LocalCommRes"] == ""
        assert opts["ge.exec.deviceId"] == "0" and opts["llm.MemoryUtilization"] == "0.95"
        assert all(isinstance(v, str) for v in opts.values())

    def test_defaults_omit_flags(self) -> None:
        opts = LLMConfig().generate_options()
        assert "llm.EnableRemoteCacheAccessible" not in opts and "llm.SyncKvCacheWaitTime" not in opts
        c = LLMConfig()
        c.enable_remote_cache_accessible = False
        assert c.generate_options()["llm.EnableRemoteCacheAccessible"] == "0"

    @pytest.mark.parametrize(("value", "exc"), [
        (1.5, TypeError), (None, TypeError), ("12a", LLMException), ("0", LLMException), (0, LLMException),
        (-5, LLMException), (2**31, ValueError),
    ])
    def test_sync_kv_timeout_setter(self, value: object, exc: type[Exception]) -> None:
        with pytest.raises(exc):
            LLMConfig().sync_kv_timeout = value  # type: ignore[assignment]

    @pytest.mark.parametrize("attr", ["enable_cache_manager", "enable_remote_cache_accessible"])
    def test_bool_setters(self, attr: str) -> None:
        with pytest.raises(TypeError):
            setattr(LLMConfig(), attr, 1)

    @pytest.mark.parametrize("attr", ["mem_pool_cfg", "host_mem_pool_cfg", "listen_ip_info", "local_comm_res"])
    def test_str_setters(self, attr: str) -> None:
        with pytest.raises(TypeError):
            setattr(LLMConfig(), attr, 1)

    def test_device_id(self) -> None:
        with pytest.raises(ValueError):
            LLMConfig().device_id = -1
        with pytest.raises(TypeError):
            LLMConfig().device_id = "0"  # type: ignore[assignment]


class TestLLMDataDist:
    def test_constructor(self) -> None:
        with pytest.raises(TypeError):
            LLMDataDist(1, 1)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            LLMDataDist(LLMRole.PROMPT, -1)
        with pytest.raises(TypeError):
            LLMDataDist(LLMRole.PROMPT, "1")  # type: ignore[arg-type]

    def test_cache_manager_access(self) -> None:
        fabric = Fabric()
        d = LLMDataDist(LLMRole.PROMPT, 1, fabric=fabric)
        with pytest.raises(RuntimeError, match="not initialized"):
            _ = d.cache_manager
        d.init({"llm.SyncKvCacheWaitTime": "100"})
        with pytest.raises(LLMException) as info:
            _ = d.cache_manager
        assert info.value.status_code == S.LLM_PARAM_INVALID
        d.finalize()
        d.finalize()
        d.init(node_options(**ONE_PROCESS))
        assert d.cache_manager is d.cache_manager
        d.init({})  # a second init is a no-op
        assert d.engine.sync_timeout_s == ONE_PROCESS["timeout_ms"] / 1000
        d.finalize()

    @pytest.mark.parametrize(("options", "exc"), [
        ([("a", "b")], TypeError),
        ({"llm.SyncKvCacheWaitTime": 100}, TypeError),
        ({"llm.SyncKvCacheWaitTime": "0"}, LLMException),
        ({"llm.SyncKvCacheWaitTime": "1.5"}, LLMException),
        ({"llm.EnableCacheManager": "true"}, LLMException),
        ({"llm.MemPoolConfig": "{"}, LLMException),
        ({"llm.MemPoolConfig": '{"page_shift": 16}'}, LLMException),
        ({"llm.MemPoolConfig": '{"memory_size": 1024, "page_shift": 9}'}, LLMException),
        ({"llm.HostMemPoolConfig": '{"memory_size": -1}'}, LLMException),
        ({"ge.flowGraphMemMaxSize": "1,2"}, LLMException),
        ({"ge.flowGraphMemMaxSize": "12x"}, LLMException),
        ({"llm.TransferBackend": "hixl"}, LLMException),
        ({"llm.listenIpInfo": "nohost"}, LLMException),
    ])
    def test_init_errors(self, options: Any, exc: type[Exception]) -> None:
        d = LLMDataDist(LLMRole.PROMPT, 1, fabric=Fabric())
        with pytest.raises(exc) as info:
            d.init(options)
        if exc is LLMException:
            assert info.value.status_code == S.LLM_PARAM_INVALID  # type: ignore[attr-defined]
        assert not d.is_initialized

    def test_local_comm_res_enables_cache_manager_and_push(self) -> None:
        d = LLMDataDist(LLMRole.PROMPT, 1, fabric=Fabric())
        d.init({"llm.LocalCommRes": ""})
        assert d.cache_manager._enable_remote_cache_accessible
        d.finalize()

    def test_one_node_per_cluster_id_per_fabric(self) -> None:
        fabric = Fabric()
        a = LLMDataDist(LLMRole.PROMPT, 1, fabric=fabric)
        a.init({})
        b = LLMDataDist(LLMRole.DECODER, 1, fabric=fabric)
        with pytest.raises(LLMException) as info:
            b.init({})
        assert info.value.status_code == S.LLM_FAILED
        a.finalize()
        b.init({})  # free again after finalize
        b.finalize()

    def test_default_fabric(self) -> None:
        a = LLMDataDist(LLMRole.PROMPT, 987654)
        a.init({})
        assert a.engine.fabric.nodes[987654] is a.engine
        a.finalize()


def _info(remote: Any, ip: bool = True) -> LLMClusterInfo:
    info = LLMClusterInfo(remote_cluster_id=remote)
    if ip:
        info.append_local_ip_info("10.0.0.1", 26000)
        info.append_remote_ip_info(0x0100007F, 26001)
    return info


class TestLinks:
    def _nodes(self, **overrides: str | None) -> tuple[LLMDataDist, LLMDataDist]:
        fabric = Fabric()
        nodes = []
        for cid in (1, 2):
            d = LLMDataDist(LLMRole.MIX, cid, fabric=fabric)
            d.init(node_options(**ONE_PROCESS, **overrides))
            nodes.append(d)
        return nodes[0], nodes[1]

    def test_link_unlink(self) -> None:
        a, b = self._nodes()
        assert a.link_clusters([_info(2)]) == (S.LLM_SUCCESS, [S.LLM_SUCCESS])
        assert a.link_clusters([_info(2)], 5000) == (S.LLM_ALREADY_LINK, [S.LLM_ALREADY_LINK])
        assert a.link_clusters((_info(99),)) == (S.LLM_LINK_FAILED, [S.LLM_LINK_FAILED])
        assert a.unlink_clusters([_info(2)]) == (S.LLM_SUCCESS, [S.LLM_SUCCESS])
        assert a.unlink_clusters([_info(2)]) == (S.LLM_NOT_YET_LINK, [S.LLM_NOT_YET_LINK])
        assert b.link_clusters([_info(1), _info(3)]) == (S.LLM_LINK_FAILED, [S.LLM_SUCCESS, S.LLM_LINK_FAILED])
        a.finalize()
        b.finalize()

    @pytest.mark.parametrize(("clusters", "timeout", "exc"), [
        (None, 3000, TypeError),
        ("x", 3000, TypeError),
        ([1], 3000, TypeError),
        ([_info(2)], 0, LLMException),
        ([_info(2)], -1, LLMException),
        ([_info(2)], 1.0, TypeError),
        ([_info(2)], 2**31, ValueError),
        ([_info(2, ip=False)], 3000, LLMException),
        ([_info(-1)], 3000, ValueError),
        ([_info(None)], 3000, TypeError),
    ])
    def test_link_argument_errors(self, clusters: Any, timeout: Any, exc: type[Exception]) -> None:
        a, b = self._nodes()
        with pytest.raises(exc):
            a.link_clusters(clusters, timeout)
        with pytest.raises(exc):
            a.unlink_clusters(clusters, timeout)
        a.finalize()
        b.finalize()

    def test_local_comm_res_needs_no_ip(self) -> None:
        a, b = self._nodes(llm__LocalCommRes="comm")
        assert a.link_clusters([_info(2, ip=False)])[0] == S.LLM_SUCCESS
        a.finalize()
        b.finalize()

    def test_link_before_init(self) -> None:
        with pytest.raises(RuntimeError):
            LLMDataDist(LLMRole.MIX, 1, fabric=Fabric()).link_clusters([_info(2)])

    def test_cluster_info(self) -> None:
        info = LLMClusterInfo()
        info.append_local_ip_info("127.0.0.1", 1)
        assert info.local_ip_info_list == [{"ip": 0x0100007F, "port": 1}]
        with pytest.raises(ValueError):
            info.append_local_ip_info("127.0.0.1", 70000)
        with pytest.raises(ValueError):
            info.append_remote_ip_info("not-an-ip", 1)
        with pytest.raises(TypeError):
            info.append_remote_ip_info(1.0, 1)  # type: ignore[arg-type]

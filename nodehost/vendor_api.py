"""The vendor's public Python API, as the facts sheet documents it: the only names the node host may use.

Data, not code: ``tests/nodehost/test_vendor_names.py`` parses the node host's vendor driver and checks that
every attribute it touches on a vendor object is listed here. Each entry says where the facts sheet
(``shared/reference/llm-datadist-facts.md``, § numbers below) documents it. ``EXTENSIONS`` are not vendor
names: optional hooks a CPU emulator may offer and the real package does not have; the driver looks them up
with a default, so the real package works without them.
"""

from __future__ import annotations

#: module-level names of ``llm_datadist``
MODULE = {
    "LLMDataDist": "§6 LLMDataDist(role, cluster_id); §1.4 sample",
    "LLMRole": "§3 LLMRole (configs.py): PROMPT=1, DECODER=2, MIX=3",
    "LLMClusterInfo": "§6 LLMClusterInfo",
    "LLMConfig": "§5 LLMConfig / LlmConfig",
    "CacheDesc": "§3 CacheDesc(num_tensors, shape, data_type, placement=DEVICE, ...)",
    "Cache": "§3 Cache (built by the manager)",
    "CacheKey": "§3 CacheKey",
    "CacheKeyByIdAndIndex": "§3 CacheKeyByIdAndIndex(cluster_id, cache_id, batch_index=0)",
    "BlocksCacheKey": "§3 BlocksCacheKey",
    "Placement": "§3 Placement: HOST=0, DEVICE=1",
    "DataType": "§3 DataType",
    "LLMException": "§4 LLMException(RuntimeError) with status_code",
    "LLMStatusCode": "§4 LLMStatusCode",
}

#: members of ``LLMDataDist`` objects
LLM_DATADIST = {
    "init": "§6 init(options) (a no-op if already initialized)",
    "finalize": "§1.4 sample teardown: finalize on both sides",
    "link_clusters": "§6 link_clusters(clusters, timeout=3000) -> (status, [status per cluster])",
    "unlink_clusters": "§6 unlink_clusters(clusters, timeout=3000, force=False)",
    "cache_manager": "§5 LLMDataDist.cache_manager (needs llm.EnableCacheManager)",
}

#: members of ``LLMClusterInfo`` objects
CLUSTER_INFO = {
    "remote_cluster_id": "§6 remote_cluster_id (uint64)",
    "remote_role_type": "§6 remote_role_type",
    "append_local_ip_info": "§6 append_local_ip_info(ip: str|int, port: uint16)",
    "append_remote_ip_info": "§6 append_remote_ip_info(ip, port)",
}

#: members of ``Cache`` objects (and ``CacheDesc``, read through ``cache.cache_desc``)
CACHE = {
    "cache_id": "§3 Cache properties",
    "cache_desc": "§3 Cache properties",
    "tensor_addrs": "§3 Cache properties: one address per tensor",
    "is_blocks_cache": "§3 Cache properties",
    "num_tensors": "§3 CacheDesc properties",
    "size": "§3 CacheDesc.size: whole-tensor bytes",
    "placement": "§3 CacheDesc properties",
}

#: members of ``LLMException`` objects and of the enums
VALUES = {
    "status_code": "§4 LLMException.status_code",
    "LLM_SUCCESS": "§4 LLMStatusCode",
    "LLM_FAILED": "§4 LLMStatusCode",
    "LLM_LINK_FAILED": "§4 LLMStatusCode",
    "LLM_UNLINK_FAILED": "§4 LLMStatusCode",
    "LLM_NOT_YET_LINK": "§4 LLMStatusCode",
    "PROMPT": "§3 LLMRole", "DECODER": "§3 LLMRole", "MIX": "§3 LLMRole",
    "HOST": "§3 Placement", "DEVICE": "§3 Placement",
    "name": "§3/§4 enum members (Python Enum / IntEnum)",
}

#: public methods of the cache manager, the ones the host forwards (it refuses any other name)
CACHE_MANAGER = {
    "push_cache": "§1.1",
    "allocate_cache": "§2 allocate_cache(cache_desc, cache_keys=())",
    "deallocate_cache": "§2 deallocate_cache(cache)",
    "register_cache": "§2 register_cache(cache_desc, addrs, cache_keys=(), remote_accessible=None)",
    "unregister_cache": "§2 unregister_cache",
    "allocate_blocks_cache": "§2 allocate_blocks_cache",
    "deallocate_blocks_cache": "§2 deallocate_blocks_cache",
    "register_blocks_cache": "§2 register_blocks_cache",
    "pull_cache": "§2 pull_cache",
    "pull_blocks": "§2 pull_blocks",
    "push_blocks": "§2 push_blocks",
    "copy_cache": "§2 copy_cache",
    "copy_blocks": "§2 copy_blocks",
    "swap_blocks": "§2 swap_blocks",
    "remove_cache_key": "§2 remove_cache_key",
    "remap_registered_memory": "§2 remap_registered_memory",
    "transfer_cache_async": "§2 transfer_cache_async",
}

#: engine option keys the host sets itself (the suite's node specs carry the others)
OPTIONS = {
    "llm.listenIpInfo": "§5 listen_ip_info 'ip:port' -> llm.listenIpInfo",
    "ge.exec.deviceId": "§5 device_id -> ge.exec.deviceId",
}

#: not vendor names: optional hooks of an emulator (looked up with a default; the real package has none)
EXTENSIONS = {
    "CONFORMANCE_DEVICE_MEMORY": "'host': the implementation's DEVICE placement is host memory (CPU emulator)",
    "CONFORMANCE_FAULTS": "fault kinds conformance_inject understands, beyond kill_node (which the host does)",
    "conformance_inject": "conformance_inject(datadist, fault): inject a fault into a node",
    "conformance_stats": "conformance_stats() -> dict: what the process holds, for the pool's self-tests",
    "conformance_bench_raw": "conformance_bench_raw(datadist, server_id, src, dst_cache_id, tpl, repeats, per_layer, "
                             "notify) -> seconds: the transport's raw WRITEs, a benchmark's baseline",
}

ALL_VENDOR = {**MODULE, **LLM_DATADIST, **CLUSTER_INFO, **CACHE, **VALUES, **CACHE_MANAGER}

"""``LLMClusterInfo``: what ``link_clusters`` / ``unlink_clusters`` need to reach a remote cluster."""

from __future__ import annotations

import socket
from typing import Any

from .checks import check_isinstance, check_uint16, check_uint32


def _ip_to_int(ip: str | int) -> int:
    check_isinstance("ip", ip, [str, int], allow_none=False)
    if isinstance(ip, str):
        try:
            return int.from_bytes(socket.inet_aton(ip), "little")
        except OSError:
            raise ValueError(f"ip {ip!r} is not a valid IPv4 address.") from None
    check_uint32("ip", ip)
    return ip


class LLMClusterInfo:
    """Remote cluster id and role plus the local/remote (ip, port) pairs of a link."""

    def __init__(self, remote_cluster_id: Any = None, remote_role_type: Any = None) -> None:
        self._remote_cluster_id = remote_cluster_id
        self._remote_role_type = remote_role_type
        self._local_ip_info_list: list[dict[str, int]] = []
        self._remote_ip_info_list: list[dict[str, int]] = []

    @property
    def remote_cluster_id(self) -> Any:
        return self._remote_cluster_id

    @remote_cluster_id.setter
    def remote_cluster_id(self, value: Any) -> None:
        self._remote_cluster_id = value

    @property
    def remote_role_type(self) -> Any:
        return self._remote_role_type

    @remote_role_type.setter
    def remote_role_type(self, value: Any) -> None:
        self._remote_role_type = value

    @property
    def local_ip_info_list(self) -> list[dict[str, int]]:
        return self._local_ip_info_list

    @property
    def remote_ip_info_list(self) -> list[dict[str, int]]:
        return self._remote_ip_info_list

    def append_local_ip_info(self, ip: str | int, port: int) -> None:
        check_uint16("port", port)
        self._local_ip_info_list.append({"ip": _ip_to_int(ip), "port": port})

    def append_remote_ip_info(self, ip: str | int, port: int) -> None:
        check_uint16("port", port)
        self._remote_ip_info_list.append({"ip": _ip_to_int(ip), "port": port})

    def __repr__(self) -> str:
        return f"LLMClusterInfo(remote_cluster_id={self._remote_cluster_id})"

"""A node picks its listen port when its process starts and binds it only at init: a port another process took in
between (a loaded machine opens many) is replaced by another free one, not a failed init."""

from __future__ import annotations

import socket
from types import SimpleNamespace
from typing import Any

import pytest

from nodehost import driver


class _Role:
    PROMPT = 1


class _DataDist:
    """A vendor LLMDataDist whose init binds its listen address, as the reference's control listener does."""

    bound: list[socket.socket] = []

    def __init__(self, role: int, cluster_id: int) -> None:
        self.listen = ""

    def init(self, options: dict[str, str]) -> None:
        ip, _, port = options["llm.listenIpInfo"].rpartition(":")
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((ip, int(port)))
        except OSError:
            s.close()
            raise
        self.listen = options["llm.listenIpInfo"]
        _DataDist.bound.append(s)

    @property
    def cache_manager(self) -> Any:
        raise RuntimeError("the cache manager is off in these options")


def _node(monkeypatch: pytest.MonkeyPatch) -> driver.VendorNode:
    node = object.__new__(driver.VendorNode)
    node.vendor = SimpleNamespace(LLMDataDist=_DataDist, LLMRole=_Role)
    node.codec = SimpleNamespace(successor=lambda cluster_id: node.codec)
    node.ip, node.port, node.datadist, node.device, node.host = "127.0.0.1", driver._free_port("127.0.0.1"), None, None, None
    node._signatures_sent = None
    monkeypatch.setattr(driver, "make_device_accessor", lambda kind, device, host: SimpleNamespace(kind=kind))
    monkeypatch.setattr(node, "shared_info", lambda: {}, raising=False)
    return node


def test_a_port_taken_before_init_is_replaced_by_another(monkeypatch: pytest.MonkeyPatch) -> None:
    node = _node(monkeypatch)
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", node.port))
    taken.listen()
    try:
        reply = node.init("PROMPT", 1, {}, None, None)
        assert reply["address"][1] != taken.getsockname()[1]
        assert node.datadist.listen == f"127.0.0.1:{reply['address'][1]}"
        assert node.listen == ("127.0.0.1", reply["address"][1])
    finally:
        taken.close()
        for s in _DataDist.bound:
            s.close()


def test_an_address_the_caller_named_is_not_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    node = _node(monkeypatch)
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        with pytest.raises(OSError):
            node.init("PROMPT", 1, {"llm.listenIpInfo": f"127.0.0.1:{taken.getsockname()[1]}"}, None, None)
    finally:
        taken.close()

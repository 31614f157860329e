"""What a node process's cache manager uses of the process it runs in (``NodeRuntime``), as a Protocol: the
manager pushes through it, while the runtime builds the manager, so naming the class itself would tie the two
modules into a circle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from nodehost.serve import ActiveRequests

    from .control import PeerLink, PinTable
    from .transport import NixlTransport


class ProcessRuntime(Protocol):
    """The runtime's parts a push and a deallocation touch."""

    #: pushes running now (a reset waits until they have ended)
    pushes: ActiveRequests
    #: this process's NIXL agent
    transport: NixlTransport
    #: the links this node made, by server cluster id
    links: dict[int, PeerLink]
    #: the pins other nodes hold on this node's caches
    pins: PinTable

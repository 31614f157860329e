"""The environment every node process starts with: defaults a value already set wins over.

NIXL/UCX on loopback and quiet logs; an implementation's own data plane adds what it needs on top
(``reference_impl/multiprocess/transport.py`` extends it for its NIXL agents).
"""

from __future__ import annotations

#: defaults for the node processes' environment (NIXL/UCX on loopback, quiet)
NODE_ENV = {"UCX_NET_DEVICES": "lo", "NIXL_LOG_LEVEL": "ERROR"}

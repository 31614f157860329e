"""The reference backend with one process per node and NIXL (UCX) as the data plane ("reference-nixl").

Import ``reference_impl.multiprocess.backend:backend``; see docs/nixl.md. NIXL is an optional dependency
(``pip install --no-deps nixl==1.5.1 nixl-cu12==1.5.1``): this package imports without it, node processes
need it.
"""

from __future__ import annotations

from .transport import NIXL_NODE_ENV, nixl_available

__all__ = ["NIXL_NODE_ENV", "nixl_available"]

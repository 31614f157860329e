"""The reference with every node in its own process, bytes moved by NIXL (backend "reference-nixl").

It is the node host (:mod:`nodehost`: one node-process stack, one wire, one request loop) running the reference
behind the vendor's public API (:mod:`reference_impl.multiprocess.datadist`) in each node process; docs/nixl.md
has the design. ``backend`` is the same backend as ``nodehost.backend:reference`` (``reference-nodehost``) under
the name this package has always had; their pooled node processes are shared.
"""

from __future__ import annotations

from nodehost.backend import NodeHostBackend

#: the implementation module every node process runs
MODULE = "reference_impl.multiprocess.datadist"

backend = NodeHostBackend(MODULE, name="reference-nixl", product="emulator")

"""The node host: runs an ``llm_datadist``-compatible implementation one process per node and serves the
kit's backend protocol (docs/architecture.md) to the suite.

* :mod:`nodehost.process` - the parent's side: node processes, pipes, the pool that resets and reuses them;
* :mod:`nodehost.serve` - the node's side of the pipe (request loop, watchdog);
* :mod:`nodehost.driver` - the node process for a vendor-API module, driven only through the vendor's
  public Python API (:mod:`nodehost.vendor_api` lists the names, with their sources in the facts sheet);
* :mod:`nodehost.environment` - the environment every node process starts with;
* :mod:`nodehost.memory` - memory accessors by address (host memory; NPU memory through pyACL);
* :mod:`nodehost.wire` - what crosses the pipe: the project's data-only wire (:mod:`datawire`), Cache handles,
  exceptions as records;
* :mod:`nodehost.backend` - :class:`~nodehost.backend.NodeHostBackend` and the backends the kit names:
  ``llm_datadist`` (the real package), ``reference-nodehost`` (the multi-process reference) and
  ``reference-vendor-nodehost`` (the same in vendor mode);
* :mod:`nodehost.hosts` / :mod:`nodehost.remote` - node processes on other hosts, through execnet gateways over
  SSH (both ends).

The multi-process reference (``reference_impl.multiprocess``, backend ``reference-nixl``) is this host running the
reference behind the vendor API. See docs/nixl.md and docs/ascend-host.md.
"""

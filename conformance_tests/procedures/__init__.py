"""Procedures: how a clause's tests run, one registered function per name of the schema's ``procedure`` enum,
one module per concern:

- ``registry``: the table of procedures and the items of a clause;
- ``common``: capability skips, the bound of a push, opening a scenario;
- ``steps``: the steps a case may run before its call;
- ``calls``: the ``call`` procedure (one call per case, faults and timeouts);
- ``construction``: ``construct`` (the API's value types);
- ``introspection``: the API's surface (enum values, element sizes, the exception base, Cache fields, the
  signature, the product);
- ``concurrency``: ``concurrent``;
- ``setup_covering`` (with ``setup_layouts``): ``covering_array``, the setup inputs covered by construction;
- ``streams``: example streams and ``random_layouts``;
- ``counts``: the coverage's counts built in every run (caches, links, addresses, pushes at once);
- ``invalid``: invalid inputs generated from a clause's restriction;
- ``histories``: ``history``, the stateful suite (a subpackage: model, testbed, draws, pushes, rules).

Every procedure takes the run context (:class:`conformance_tests.running.context.RunContext`) as its first argument.
"""

from . import (  # noqa: F401 - they register
    calls,
    concurrency,
    construction,
    counts,
    covering,
    histories,
    introspection,
    invalid,
    setup_covering,
    streams,
)
from .registry import GENERATED, PROCEDURES, Item, items_for, run_item
from .steps import STEPS

__all__ = ["GENERATED", "PROCEDURES", "STEPS", "Item", "items_for", "run_item"]

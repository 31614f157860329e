"""The cluster a relation of concurrent pushes needs, built from the relation's stated facts alone.

Push 0 goes from node n0 into a cache on a destination node of its own; every other push relates to push 0 as
the relation states: its source node is n0 (``source_node: same``) or a node of its own, its destination node is
push 0's or one of its own, its destination cache push 0's (each push then writes its own batch entry) or one
of its own.  A fact the relation leaves unstated is taken as ``different``, except the destination node of one
cache (a cache lives on one node)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PushSlot:
    """One push of the relation's cluster: node and cache names, and the destination batch entry it writes."""

    client: str
    server: str
    src: str
    dst: str
    dst_batch: int


def same(relation: Mapping[str, Any], fact: str) -> bool:
    if fact == "destination_node" and relation.get("destination_cache") == "same":
        return True
    return relation.get(fact) == "same"


def slots(relation: Mapping[str, Any], pushes: int) -> list[PushSlot]:
    """``pushes`` pushes related pairwise (each to push 0, and so to each other) as ``relation`` states."""
    out = [PushSlot("n0", "n1", "src0", "dst0", 0)]
    nodes = 2
    for k in range(1, pushes):
        client = "n0"
        if not same(relation, "source_node"):
            client, nodes = f"n{nodes}", nodes + 1
        server = "n1"
        if not same(relation, "destination_node"):
            server, nodes = f"n{nodes}", nodes + 1
        one_cache = same(relation, "destination_cache")
        out.append(PushSlot(client, server, f"src{k}", "dst0" if one_cache else f"dst{k}", k if one_cache else 0))
    return out


def node_names(pushes: list[PushSlot]) -> list[str]:
    return list(dict.fromkeys(n for p in pushes for n in (p.client, p.server)))


def pushes_for(relation: Mapping[str, Any], threads: int, dst_batch: int, max_nodes: int) -> int:
    """How many pushes the relation's test makes: ``threads``, no more than one per batch entry on one cache,
    and no more than ``max_nodes`` nodes make room for."""
    n = min(threads, dst_batch) if same(relation, "destination_cache") else threads
    while n > 2 and len(node_names(slots(relation, n))) > max_nodes:
        n -= 1
    return n

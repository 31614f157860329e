"""A run's domain coverage: how many of the universe's partitions and pairs its pushes reached, and which not."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .universe import Universe


def tally(uni: Universe | None, reached: Iterable[str]) -> dict[str, Any] | None:
    """The report's ``run.domain_coverage`` (None: the spec asks for none)."""
    if uni is None:
        return None
    got = set(reached)
    parts, pairs = uni.partition_keys(), uni.pair_keys()
    return {
        "partitions": len(parts),
        "partitions_reached": sum(1 for k in parts if k in got),
        "pairs": len(pairs),
        "pairs_reached": sum(1 for k in pairs if k in got),
        "unreached_partitions": [k for k in parts if k not in got],
        "unreached_pairs": [k for k in pairs if k not in got],
        "blocks_verdict": uni.blocks_verdict,
        "excluded": list(uni.excluded),
    }


def line(cov: dict[str, Any] | None) -> str:
    """The terminal's line: ``domain coverage: A/B partitions, C/D pairs``."""
    if cov is None:
        return "domain coverage: not computed (the spec has no coverage section)"
    return (f"domain coverage: {cov['partitions_reached']}/{cov['partitions']} partitions, "
            f"{cov['pairs_reached']}/{cov['pairs']} pairs")

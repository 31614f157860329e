"""The coverage dimensions of kind ``generate_rules``: every restriction rule a clause of the selected release
names in its ``generate`` section, reached when a generated invalid input broken by that rule was pushed
(procedures/invalid.py records :func:`conformance_tests.coverage.measure.rule_keys`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..backend import capability_supported
from ..spec import Spec

KIND = "generate_rules"


def rule_partitions(spec: Spec) -> tuple[str, ...]:
    """Every rule of ``spec``'s clauses' generate sections, in the spec's order (``spec``: one release's)."""
    rules = [r for c in spec.clauses if c.generate is not None for r in c.generate.rules]
    return tuple(dict.fromkeys(rules))


def rule_declared(spec: Spec, rule: str, caps: Mapping[str, Any]) -> bool:
    """Whether a backend with ``caps`` runs the generated inputs of ``rule``: some clause generating it has every
    capability it requires (the procedure skips the others)."""
    return any(all(capability_supported(caps, r) for r in c.requires) for c in spec.clauses
               if c.generate is not None and rule in c.generate.rules)

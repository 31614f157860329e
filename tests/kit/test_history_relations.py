"""Concurrency as a domain of the stateful suite (issue 29, point 3): a concurrent step's two pushes are laid out
by the spec's relation, and the measurement classifies each layout as the relation it was built for."""

from __future__ import annotations

import pytest

from conformance_tests.coverage.measure import RELATION_FACTS, relation_of, relations
from conformance_tests.procedures.histories.by_relation import NODES, layout, node_names
from conformance_tests.spec import load_spec

SPEC = load_spec()
RELATIONS = relations(SPEC)


@pytest.mark.parametrize("relation", RELATIONS, ids=lambda r: r["name"])
def test_a_relations_layout_is_measured_as_that_relation(relation):
    laid = layout(relation, RELATIONS)
    facts = [dict(zip(RELATION_FACTS, (p.client, p.server, p.dst), strict=True)) for p in laid]
    got = relation_of(RELATIONS, facts[0], facts[1])
    assert got == relation["name"], f"layout({relation['name']}) = {laid}: measured as {got}"
    assert len(node_names(laid)) <= len(NODES), laid
    one_cache = laid[0].dst == laid[1].dst
    assert not one_cache or laid[0].dst_batch != laid[1].dst_batch, f"one cache, one entry: {laid}"


def test_a_relation_no_layout_holds_is_refused_by_name():
    # one cache on two nodes: no two pushes hold it
    impossible = {"name": "one_cache_two_nodes", "destination_node": "different", "destination_cache": "same"}
    with pytest.raises(ValueError, match="one_cache_two_nodes"):
        layout(impossible, [impossible])


def test_a_refused_concurrent_push_is_not_blamed_on_the_push_beside_it(tmp_path) -> None:
    """A backend refusing a push made while another is in flight (the concurrent clause, may, allows it) passes
    the history clause: each concurrent step's judgement of the push that returned takes the refused push's
    destination as it reads, not as if that push had landed (seen over two SSH hosts, where a concurrent push
    timed out and its neighbour was judged wrong)."""
    from tests.helpers.certify import certify

    proc = certify("--backend", "refuses_while_busy_backend:backend", "--clauses", "push_cache.history.valid_pushes",
                   "--report-dir", str(tmp_path / "r"), timeout=600)
    import json
    rows = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))["tests"]
    bad = {r["id"]: (r["outcome"], (r.get("message") or "")[:400]) for r in rows if r["outcome"] != "passed"}
    assert proc.returncode in (0, 5) and not bad, (proc.returncode, bad, proc.stdout[-1500:])

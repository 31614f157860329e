"""Domain coverage (issue 29, point 4): the partitions and pairs derived from the spec's coverage section, what one
push or one concurrent pair reached, the run's tally, the verdict rule and a certify run's line and report."""

from __future__ import annotations

import json
from itertools import combinations, product
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from conformance_tests.coverage import push_keys, relation_keys, relation_of, tally, universe
from conformance_tests.coverage.measure import RELATION_FACTS, relations
from conformance_tests.coverage.tally import line
from conformance_tests.inputs.values import Value
from conformance_tests.report.builder import compute_verdict
from conformance_tests.report.merge import merged_coverage
from conformance_tests.spec import SpecError, default_spec_path, load_spec
from conformance_tests.testbed.testbed import Call
from tests.helpers.certify import certify

SPEC = load_spec()
SIG = SPEC.signature_for(SPEC.releases[-1])
UNI = universe(SPEC, SIG)
assert SPEC.coverage is not None


def cache(data_type: str = "DT_FLOAT16", placement: str = "DEVICE", batch: int = 4) -> SimpleNamespace:
    return SimpleNamespace(data_type=data_type, placement=placement, batch=batch)


def call(positional: bool = False, **args: Any) -> Call:
    return Call({k: Value(v, repr(v)) for k, v in args.items()}, "push_cache", positional=positional)


def test_the_partitions_are_the_specs():
    assert UNI is not None and SPEC.coverage is not None
    raw = yaml.safe_load(default_spec_path().read_text(encoding="utf-8"))
    documented = [n for n, m in raw["types"]["DataType"]["members"].items() if m.get("size_source") != "vendor"]
    assert list(UNI.partitions["data_type"]) == documented
    assert list(UNI.partitions["src_placement"]) == list(raw["types"]["Placement"]["members"])
    assert [r["name"] for r in raw["coverage"]["dimensions"]["concurrency"]["relations"]] == list(
        UNI.partitions["concurrency"])
    defaults = [p["name"] for p in raw["signature"][-1]["parameters"] if "default" in p]
    assert UNI.partitions["parameter"] == tuple(f"{n}:{s}" for n in defaults for s in ("given", "omitted"))
    # a batch index's past class exists where the spec names the clause documenting the error
    assert UNI.partitions["src_batch_index"][-1] == "past"
    want_pairs = sum(len(UNI.partitions[a]) * len(UNI.partitions[b]) for a, b in raw["coverage"]["pairs"])
    assert len(UNI.pair_keys()) == want_pairs


@pytest.mark.parametrize(("value", "batch", "classes"), [
    (0, 4, {"minimum"}), (2, 4, {"interior"}), (3, 4, {"maximum"}), (4, 4, {"past"}), (99, 4, {"past"}),
    (0, 1, {"minimum", "maximum"}), (-1, 4, set()), (True, 4, set())])
def test_a_batch_index_falls_in_its_range_classes(value, batch, classes):
    got = push_keys(SPEC, SIG, call(src_batch_index=value), cache(batch=batch), cache())
    found = {k.split("=", 1)[1] for k in got if k.startswith("src_batch_index=")}
    assert found == classes, f"push_keys(src_batch_index={value}, batch {batch}): {found}, expected {classes}"


def test_a_push_reaches_its_members_form_and_parameters_and_their_pairs():
    got = push_keys(SPEC, SIG, call(True, src_batch_index=0, size=-1), cache("DT_INT8", "HOST"), cache("DT_INT8"))
    for k in ("data_type=DT_INT8", "src_placement=HOST", "dst_placement=DEVICE", "call_form=positional",
              "parameter=size:given", "parameter=tensor_num_per_layer:omitted",
              "src_placement=HOST & dst_placement=DEVICE", "call_form=positional & data_type=DT_INT8"):
        assert k in got, f"push_keys: {k!r} not in {sorted(got)}"
    assert not any(k.startswith("concurrency=") for k in got), "a push alone reaches no relation"
    assert "call_form=keywords" in push_keys(SPEC, SIG, call(src_batch_index=0), cache(), cache())


def _facts(relation: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Two pushes whose facts are what ``relation`` states (unstated ones: different, or implied)."""
    a = {f: f"{f}_a" for f in RELATION_FACTS}
    b = {f: (a[f] if relation.get(f) == "same" else f"{f}_b") for f in RELATION_FACTS}
    if relation.get("destination_cache") == "same":
        b["destination_node"] = a["destination_node"]
    return a, b


@pytest.mark.parametrize("relation", relations(SPEC), ids=lambda r: r["name"])
def test_each_relation_is_told_from_the_others(relation):
    a, b = _facts(relation)
    assert relation_of(relations(SPEC), a, b) == relation["name"], f"relation_of({a}, {b})"
    keys = relation_keys(SPEC, relation["name"], [{"dst_placement": ["HOST"]}, {"dst_placement": ["DEVICE"]}])
    assert f"concurrency={relation['name']} & dst_placement=HOST" in keys
    assert f"concurrency={relation['name']} & dst_placement=DEVICE" in keys


def test_the_relations_cover_every_combination_of_facts_exactly_once():
    rels = relations(SPEC)
    for same in product(("same", "different"), repeat=3):
        stated = dict(zip(RELATION_FACTS, same, strict=True))
        if stated["destination_cache"] == "same" and stated["destination_node"] == "different":
            continue  # one cache lives on one node
        a = {f: "x" for f in RELATION_FACTS}
        b = {f: ("x" if stated[f] == "same" else "y") for f in RELATION_FACTS}
        matching = [r["name"] for r in rels if all(r[f] == stated[f] for f in RELATION_FACTS if f in r)]
        assert len(matching) == 1, f"facts {stated}: relations {matching}"
        assert relation_of(rels, a, b) == matching[0]


def test_the_tally_lists_what_was_not_reached():
    assert UNI is not None
    everything = UNI.partition_keys() + UNI.pair_keys()
    full = tally(UNI, everything)
    assert full is not None and full["unreached_partitions"] == [] and full["unreached_pairs"] == []
    assert line(full) == f"domain coverage: {len(UNI.partition_keys())}/{len(UNI.partition_keys())} partitions, " \
                         f"{len(UNI.pair_keys())}/{len(UNI.pair_keys())} pairs"
    # the source's DT_BOOL unreached (the destination's reached): that partition and every pair it is in
    missing = tally(UNI, [k for k in everything if "data_type=DT_BOOL" not in k.split(" & ")])
    assert missing is not None and missing["unreached_partitions"] == ["data_type=DT_BOOL"]
    assert all("DT_BOOL" in k for k in missing["unreached_pairs"]) and missing["unreached_pairs"]
    assert missing["partitions_reached"] == missing["partitions"] - 1


PASSED = [{"id": "t", "level": "must", "outcome": "passed", "clauses": ["c"]}]
CLAUSES = [{"id": "c", "level": "must"}]


@pytest.mark.parametrize(("blocks", "full", "certified"), [(True, True, False), (False, True, True),
                                                           (True, False, False)])
def test_unreached_coverage_blocks_a_full_run_where_the_spec_says_so(blocks, full, certified):
    cov = {"unreached_partitions": ["data_type=DT_BOOL"], "unreached_pairs": [], "blocks_verdict": blocks}
    completeness = None if full else {"reasons": ["a subset"]}
    verdict = compute_verdict(PASSED, CLAUSES, completeness, cov)
    assert verdict["certified"] is certified, f"compute_verdict(blocks_verdict={blocks}, full={full}): {verdict}"
    said = [r for r in verdict["reasons"] if r.startswith("domain coverage")]
    assert said == (["domain coverage: 1 partition(s) or pair(s) unreached by any push: data_type=DT_BOOL"]
                    if blocks and full else [])
    assert compute_verdict(PASSED, CLAUSES, completeness, dict(cov, unreached_partitions=[]))["certified"] is full


def test_shards_together_leave_unreached_only_what_every_shard_left():
    a = {"partitions": 3, "partitions_reached": 1, "pairs": 1, "pairs_reached": 0, "blocks_verdict": True,
         "unreached_partitions": ["d=x", "d=y"], "unreached_pairs": ["d=x & e=z"]}
    b = dict(a, unreached_partitions=["d=y", "d=w"], partitions_reached=1)
    got = merged_coverage([a, b])
    assert got is not None and got["unreached_partitions"] == ["d=y"] and got["partitions_reached"] == 2
    assert got["unreached_pairs"] == ["d=x & e=z"] and got["pairs_reached"] == 0
    assert merged_coverage([a, None]) is None


@pytest.mark.parametrize(("edit", "where"), [
    (lambda c: c["pairs"].append(["data_type", "no_such"]), f"$.coverage.pairs[{len(SPEC.coverage.pairs)}][1]"),
    (lambda c: c["dimensions"]["data_type"].update(type="NoSuchEnum"), "$.coverage.dimensions.data_type.type"),
    (lambda c: c["dimensions"]["src_batch_index"].update(past="push_cache.nope"),
     "$.coverage.dimensions.src_batch_index.past"),
    (lambda c: c["dimensions"]["call_form"].update(forms=["sideways"]), "coverage"),
])
def test_a_broken_coverage_section_is_refused_saying_where(tmp_path, edit, where):
    raw = yaml.safe_load(default_spec_path().read_text(encoding="utf-8"))
    edit(raw["coverage"])
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert where in str(err.value), f"load_spec(coverage edited): {err.value}"


def test_certify_prints_and_records_the_domain_coverage(tmp_path):
    """A small run reaches few partitions: its line and report say how many and which not; blocking is the
    spec's (a subset run is PARTIAL whatever the coverage)."""
    proc = certify("--clauses", "push_cache.data.src_batch_slice", "--report-dir", str(tmp_path / "r"))
    report = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    cov = report["run"]["domain_coverage"]
    assert UNI is not None and cov["partitions"] == len(UNI.partition_keys()) and cov["pairs"] == len(UNI.pair_keys())
    assert 0 < cov["partitions_reached"] < cov["partitions"], cov
    assert len(cov["unreached_partitions"]) == cov["partitions"] - cov["partitions_reached"]
    assert "concurrency=apart" in cov["unreached_partitions"]
    printed = (f"domain coverage: {cov['partitions_reached']}/{cov['partitions']} partitions, "
               f"{cov['pairs_reached']}/{cov['pairs']} pairs")
    assert printed in proc.stdout, proc.stdout[-3000:]



def test_two_pushes_into_one_cache_are_judged_together_and_a_lost_writer_is_caught(tmp_path):
    """The concurrent clause's one-cache relation (disjoint entries) passes on the reference, each push judged over
    the entries the others wrote; a backend whose second writer loses its bytes fails that test, and only it."""
    ok = certify("--clauses", "push_cache.data.concurrent", "--report-dir", str(tmp_path / "ok"))
    assert ok.returncode == 5 and " failed" not in ok.stdout, ok.stdout[-3000:]
    certify("--backend", "one_writer_per_cache_backend:backend", "--clauses", "push_cache.data.concurrent",
            "--report-dir", str(tmp_path / "bad"))
    rows = json.loads((tmp_path / "bad" / "report.json").read_text(encoding="utf-8"))["tests"]
    outcomes = {r["id"].split("concurrent-", 1)[1].rstrip("]"): r["outcome"] for r in rows}
    # the pushes_at_once counts (into caches of their own) are the concurrent clause's too (test_count_coverage.py)
    assert outcomes.pop("counts-pushes_at_once") == "passed", outcomes
    assert UNI is not None and len(outcomes) == len(UNI.partitions["concurrency"]) * 2, outcomes
    lost = {k for k, v in outcomes.items() if v == "failed"}
    assert lost == {"one_cache_disjoint_entries-HOST", "one_cache_disjoint_entries-DEVICE"}, outcomes
    failed = next(r for r in rows if r["outcome"] == "failed")
    assert "wrong after concurrent transfers" in failed["message"], failed["message"]


@pytest.mark.parametrize("relation", relations(SPEC), ids=lambda r: r["name"])
@pytest.mark.parametrize("threads", [2, 4])
def test_the_cluster_built_for_a_relation_has_that_relation_between_every_two_pushes(relation, threads):
    from conformance_tests.procedures.relation_topology import node_names, pushes_for, slots

    n = pushes_for(relation, threads, 2, 4)
    built = slots(relation, n)
    assert len(node_names(built)) <= 4 and n >= 2, built
    facts = [{"source_node": p.client, "destination_node": p.server, "destination_cache": p.dst} for p in built]
    for i, j in combinations(range(n), 2):
        assert relation_of(relations(SPEC), facts[i], facts[j]) == relation["name"], (relation, built)
        if built[i].dst == built[j].dst:
            assert built[i].dst_batch != built[j].dst_batch, f"slots({relation['name']}): one entry written twice"


def _needing(capability: str) -> set[str]:
    """The partitions of the coverage dimensions that require ``capability`` as a whole."""
    assert UNI is not None and SPEC.coverage is not None
    return {f"{n}={v}" for n, d in SPEC.coverage.dimensions.items()
            if (d.params.get("requires") or {}).get("capability") == capability for v in UNI.partitions[n]}


@pytest.mark.parametrize(("caps", "excluded"), [
    ({"placements": ["DEVICE", "HOST"], "threads": True, "raw_memory": True, "register_cache": True,
      "faults": ["delay"]}, set()),
    ({}, {"src_placement=HOST", "dst_placement=HOST", "src_made=register", "dst_made=register"}
     | _needing("threads") | _needing("register_cache") | _needing("faults.delay")),
    ({"placements": ["HOST"], "threads": True, "faults": ["delay"]},
     {"src_placement=DEVICE", "dst_placement=DEVICE", "src_made=register", "dst_made=register"}
     | _needing("register_cache")),
])
def test_what_the_capabilities_exclude_is_reported_and_not_required(caps, excluded):
    assert {f"concurrency={r['name']}" for r in relations(SPEC)} <= _needing("threads")
    uni = universe(SPEC, SIG, caps)
    assert uni is not None and set(uni.excluded) == excluded, f"universe(caps={caps}).excluded: {uni.excluded}"
    assert not excluded & set(uni.partition_keys())
    assert not any(e in pair.split(" & ") for pair in uni.pair_keys() for e in excluded)
    cov = tally(uni, [])
    assert cov is not None and set(cov["excluded"]) == excluded


def test_the_covering_push_reaches_every_omitted_default_by_construction(tmp_path):
    """The defaults dimension's covered_by clause makes the baseline push with every defaulted parameter left out,
    in every run: no draw needs to happen on an omission."""
    certify("--clauses", "push_cache.data.postcondition", "--report-dir", str(tmp_path))
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    ids = [t["id"] for t in report["tests"] if t["outcome"] == "passed"]
    assert any(i.endswith("-parameter_omitted]") for i in ids), ids
    unreached = report["run"]["domain_coverage"]["unreached_partitions"]
    assert not [k for k in unreached if k.startswith("parameter=")], unreached

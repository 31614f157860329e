"""Counts and generate rules as coverage (issue 29, points 2 and 4): the range classes of the spec's counts
dimensions, the rules of the selected release's generate sections, the procedure that builds every count class in
every run, and a backend correct only on the counts the kit used to hold fixed, rejected by them."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from conformance_tests.coverage import universe
from conformance_tests.coverage.counts import count_classes, count_dimensions
from conformance_tests.coverage.measure import count_keys, rule_keys
from conformance_tests.coverage.rules import rule_declared, rule_partitions
from conformance_tests.procedures.counts import interior
from conformance_tests.spec import (
    SpecError,
    default_spec_path,
    load_spec,
    operation_spec_path,
    specified_operations,
)
from tests.helpers.certify import certify

SPEC = load_spec()
NEWEST = SPEC.releases[-1]
SIG = SPEC.signature_for(NEWEST)
DIMS = count_dimensions(SPEC)
#: the clauses whose tests build the counts (their dimensions' covered_by and past)
COUNT_CLAUSES = sorted({str(d.params[f]) for d in DIMS.values() for f in ("covered_by", "past") if d.params.get(f)})


def raw_spec() -> dict[str, Any]:
    return yaml.safe_load(default_spec_path().read_text(encoding="utf-8"))


def test_the_counts_and_their_limits_are_the_specs():
    raw = raw_spec()["coverage"]["dimensions"]
    assert set(DIMS) == {n for n, d in raw.items() if d["kind"] == "counts"}
    addresses = next(d for d in raw.values() if d.get("of") == "registered_addresses")
    assert addresses["max"] == 240 and "240 addresses" in addresses["source"], addresses  # the vendor's limit
    uni = universe(SPEC, SIG, None, NEWEST)
    assert uni is not None
    for name, dim in DIMS.items():
        want = ("minimum", "interior", "maximum") + (("past",) if dim.params.get("past") else ())
        assert uni.partitions[name] == want, f"universe: {name} partitions {uni.partitions[name]}, expected {want}"


@pytest.mark.parametrize(("value", "classes"), [(2, ["minimum"]), (3, ["interior"]), (239, ["interior"]),
                                                (240, ["maximum"]), (241, ["past"]), (1, [])])
def test_a_count_falls_in_its_range_classes(value, classes):
    dim = next(d for d in DIMS.values() if d.params["of"] == "registered_addresses")
    assert count_classes(dim, value) == classes, f"count_classes(registered_addresses, {value})"
    keys = count_keys(SPEC, {"registered_addresses": value})
    assert keys == {f"{dim.name}={c}" for c in classes}, f"count_keys(registered_addresses={value}): {keys}"


def test_a_count_without_a_past_clause_has_no_past():
    dim = next(d for d in DIMS.values() if not d.params.get("past"))
    assert count_classes(dim, int(dim.params["max"]) + 1) == [], dim


@pytest.mark.parametrize(("low", "high", "step", "want"), [(1, 12, 1, 6), (2, 240, 2, 120), (2, 241, 2, 120),
                                                           (1, 3, 1, 2), (1, 2, 1, 1)])
def test_the_interior_count_lies_strictly_inside(low, high, step, want):
    assert interior(low, high, step) == want, f"interior({low}, {high}, {step})"


def test_a_counts_dimension_without_an_interior_is_refused_saying_where(tmp_path):
    raw = raw_spec()
    name = next(iter(DIMS))
    raw["coverage"]["dimensions"][name]["max"] = raw["coverage"]["dimensions"][name]["min"] + 1
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert f"$.coverage.dimensions.{name}.max" in str(err.value), f"load_spec(max = min + 1): {err.value}"


def test_the_rules_are_those_of_the_selected_releases_generate_sections():
    for release in SPEC.releases:
        scoped = SPEC.for_release(release)
        want = [r for c in raw_spec()["clauses"] if "generate" in c and SPEC.applies(
            next(x for x in SPEC.clauses if x.id == c["id"]), release) for r in c["generate"]["rules"]]
        uni = universe(SPEC, SPEC.signature_for(release), None, release)
        assert uni is not None and list(uni.partitions["generate_rule"]) == want, release
        assert list(rule_partitions(scoped)) == want
    oldest = universe(SPEC, SPEC.signature_for(SPEC.releases[0]), None, SPEC.releases[0])
    assert oldest is not None and "ranges_length_differ" not in oldest.partitions["generate_rule"]
    assert rule_keys(SPEC, ["range_step"]) == {"generate_rule=range_step"}


def test_a_rule_whose_clause_the_capabilities_exclude_is_excluded():
    clause = next(c for c in SPEC.clauses if c.generate is not None)
    rule = clause.generate.rules[0]  # type: ignore[union-attr]
    assert rule_declared(SPEC, rule, {})
    from dataclasses import replace
    needy = replace(SPEC, clauses=tuple(replace(c, requires=("no_such_capability",)) if c.id == clause.id else c
                                        for c in SPEC.clauses))
    assert not rule_declared(needy, rule, {}), f"rule_declared({rule}) with its clause requiring a missing capability"


def test_every_count_class_is_built_and_judged_on_the_reference(tmp_path):
    """The counts' clauses alone reach every counts partition, whatever the seed: by construction."""
    proc = certify("--clauses", ",".join(COUNT_CLAUSES), "--report-dir", str(tmp_path), "--hypothesis-seed", "7")
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    rows = [t for t in report["tests"] if "-counts-" in t["id"]]
    assert len(rows) == len(DIMS) + sum(1 for d in DIMS.values() if d.params.get("past")), [t["id"] for t in rows]
    assert all(t["outcome"] == "passed" for t in rows), [(t["id"], t["outcome"], t.get("message")) for t in rows]
    unreached = report["run"]["domain_coverage"]["unreached_partitions"]
    assert not [k for k in unreached if k.split("=")[0] in DIMS], (unreached, proc.stdout[-2000:])


def test_a_generated_invalid_input_reaches_its_rule(tmp_path):
    clause = next(c for c in SPEC.clauses if c.generate is not None)
    certify("--clauses", clause.id, "--report-dir", str(tmp_path))
    unreached = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["run"]["domain_coverage"][
        "unreached_partitions"]
    rules = [f"generate_rule={r}" for r in clause.generate.rules]  # type: ignore[union-attr]
    assert not set(rules) & set(unreached), unreached
    others = [k for k in unreached if k.startswith("generate_rule=")]
    assert others and not any(r in others for r in rules), others  # only what was pushed is reached


def test_a_backend_correct_only_on_the_old_counts_is_not_certified(tmp_path):
    """Correct with the scenario's two caches and one link and the relations' four pushes: the counts' maximum
    caches on a node and links of a node catch it, under the counts clause."""
    caches = next(d for d in DIMS.values() if d.params["of"] == "caches_per_node")
    links = next(d for d in DIMS.values() if d.params["of"] == "links_per_node")
    proc = certify("--backend", "fixed_counts_backend:backend", "--clauses", str(caches.params["covered_by"]),
                   "--report-dir", str(tmp_path))
    assert "NOT CERTIFIED" in proc.stdout, proc.stdout[-3000:]
    rows = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["tests"]
    failed = {t["id"].rsplit("-counts-", 1)[1].rstrip("]"): t["message"] for t in rows if t["outcome"] == "failed"}
    assert set(failed) == {caches.name, links.name}, failed
    for name, message in failed.items():
        assert message.startswith(f"clause {caches.params['covered_by']} [counts-{name}, "), message
        assert "the targeted slice holds wrong bytes" in message, message
    # the first caught count is past the fake's fixed ones: the minimum passed
    assert "the last made of 1 caches" not in failed[caches.name], failed[caches.name]


SIBLINGS = [api for api in specified_operations() if api != SPEC.api]


@pytest.mark.parametrize("api", SIBLINGS)
def test_each_siblings_counts_are_built_with_its_own_transfer_and_judged(api, tmp_path):
    """Each sibling's counts (its spec's dimensions) are built by construction with that operation's own call: the
    caches the key names counted on the server, every class reached, every transfer judged exactly (that the
    transfer is the operation's own: its counts mutants, caught only on its copy path, mutants/catalog.py)."""
    spec = load_spec(operation_spec_path(api))
    dims = count_dimensions(spec)
    assert {str(d.params["of"]) for d in dims.values()} >= {"caches_per_node", "links_per_node",
                                                             "registered_addresses"}, (api, dims)
    clauses = sorted({str(d.params[f]) for d in dims.values() for f in ("covered_by", "past") if d.params.get(f)})
    proc = certify("--clauses", ",".join(clauses), "--report-dir", str(tmp_path), operation=("--operation", api))
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    rows = [t for t in report["tests"] if "-counts-" in t["id"]]
    # a test per dimension, and one more past max where the dimension names a past clause (registered addresses)
    assert len(rows) == sum(1 for d in dims.values() for f in ("covered_by", "past") if d.params.get(f)), \
        (api, [t["id"] for t in rows])
    assert all(t["outcome"] == "passed" for t in rows), [(t["id"], t["outcome"], t.get("message")) for t in rows]
    unreached = report["run"]["domain_coverage"]["unreached_partitions"]
    assert not [k for k in unreached if k.split("=")[0] in dims], (api, unreached, proc.stdout[-2000:])
    assert report["run"]["push_calls"] > 0, report["run"]


@pytest.mark.parametrize("api", SIBLINGS)
def test_each_siblings_concurrent_transfers_are_judged_each(api, tmp_path):
    """Each sibling's concurrency relations and transfers at once (its spec's dimensions, covered by its concurrent
    clause) are made with its own transfer by the node that makes it: every relation reached on the reference,
    and a backend whose copies share one staging buffer per node with no lock fails that clause."""
    spec = load_spec(operation_spec_path(api))
    clause = next(str(d.params["covered_by"]) for d in count_dimensions(spec).values()
                  if d.params["of"] == "pushes_at_once")
    good = certify("--clauses", clause, "--report-dir", str(tmp_path / "reference"), operation=("--operation", api))
    report = json.loads((tmp_path / "reference" / "report.json").read_text(encoding="utf-8"))
    assert all(t["outcome"] == "passed" for t in report["tests"]), (good.stdout[-2000:], report["tests"])
    unreached = report["run"]["domain_coverage"]["unreached_partitions"]
    assert not [k for k in unreached if k.startswith(("concurrency=", "pushes_at_once="))], (api, unreached)
    bad = certify("--backend", "shared_staging_backend:backend", "--clauses", clause, "--report-dir",
                  str(tmp_path / "unsafe"), operation=("--operation", api))
    rows = json.loads((tmp_path / "unsafe" / "report.json").read_text(encoding="utf-8"))["tests"]
    failed = [t for t in rows if t["outcome"] == "failed"]
    assert failed and all(t["message"].startswith(f"clause {clause} [thread ") for t in failed), (
        api, bad.stdout[-2000:], [(t["id"], t["outcome"]) for t in rows])

"""The setup operations' inputs as coverage dimensions (issue 29, point 1): bounds classed against the spec's
generation rules, how each side's cache was made, the destination's data type; the greedy pairwise covering array
that reaches them by construction; and backends correct only on the setup the kit used to hold fixed."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from conformance_tests.coverage import push_keys, universe
from conformance_tests.coverage.pairwise import covering_array, targets
from conformance_tests.coverage.setup_inputs import MADE_WAYS, classes
from conformance_tests.inputs.values import Value
from conformance_tests.procedures.setup_covering import plan
from conformance_tests.spec import default_spec_path, load_spec, operation_spec_path
from conformance_tests.spec.model import Bounds
from conformance_tests.testbed.testbed import Call
from reference_impl.backend import backend as reference
from tests.helpers.certify import certify

SPEC = load_spec()
SIG = SPEC.signature_for(SPEC.releases[-1])
CAPS = reference.capabilities()
SETUP = "push_cache.data.any_setup"
MIXED = "push_cache.data.mixed_data_types"


def _raw() -> dict[str, Any]:
    return yaml.safe_load(default_spec_path().read_text(encoding="utf-8"))


def _dims_of(clause_id: str) -> list[str]:
    assert SPEC.coverage is not None
    return [n for n, d in SPEC.coverage.dimensions.items() if d.params.get("covered_by") == clause_id]


def _run(caps: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(spec=SPEC, signature=SIG, caps=caps, params=[p.name for p in SIG.declared],
                           default_tnpl=2)


def _clause(cid: str) -> Any:
    return next(c for c in SPEC.clauses if c.id == cid)


def side(shape: tuple[int, ...], num_tensors: int, itemsize: int, made: str = "allocate") -> SimpleNamespace:
    nbytes = itemsize
    for d in shape:
        nbytes *= d
    return SimpleNamespace(shape=list(shape), num_tensors=num_tensors, nbytes=nbytes, data_type="DT_INT8",
                           placement="DEVICE", batch=shape[0], made=made)


def test_the_bounds_partitions_are_the_generation_rules():
    raw = _raw()
    uni = universe(SPEC, SIG)
    assert uni is not None
    for name, dim in raw["coverage"]["dimensions"].items():
        if dim["kind"] != "bounds":
            continue
        b = raw["generation"][dim["bound"]]
        want = ("minimum", "interior", "maximum") if b["max"] - b["min"] >= 2 else ("minimum", "maximum")
        assert uni.partitions[name] == want, f"universe: {name} -> {uni.partitions[name]}, generation {b}"
    for name, dim in raw["coverage"]["dimensions"].items():
        if dim["kind"] == "made":
            assert uni.partitions[name] == tuple(dim["ways"]) and set(dim["ways"]) <= set(MADE_WAYS), name


@pytest.mark.parametrize(("value", "lo", "hi", "want"), [
    (1, 1, 8, ["minimum"]), (8, 1, 8, ["maximum"]), (4, 1, 8, ["interior"]), (3, 3, 3, ["minimum", "maximum"]),
    (0, 1, 8, []), (9, 1, 8, [])])
def test_a_quantity_falls_in_its_bound_classes(value, lo, hi, want):
    assert classes(value, Bounds(lo, hi)) == want, f"classes({value}, [{lo}, {hi}])"


def test_a_push_reaches_the_bounds_and_made_of_its_caches():
    gen = SPEC.generation
    assert gen is not None
    top = side((gen.batch.max, gen.tensor_bytes.max // gen.batch.max), gen.tensors.max, 1, "allocate_with_keys")
    low = side((gen.batch.min,), gen.tensors.min, 1, "register")
    call = Call({"tensor_num_per_layer": Value(1, "1")}, SPEC.api)
    got = push_keys(SPEC, SIG, call, top, low)
    for k in ("src_rank=interior", "dst_rank=minimum", "src_batch=maximum", "dst_batch=minimum", "tensors=maximum",
              "layers=maximum", "tensor_bytes=maximum", "src_made=allocate_with_keys", "dst_made=register",
              "src_made=allocate_with_keys & dst_made=register", "src_batch=maximum & dst_batch=minimum"):
        assert k in got, f"push_keys(tnpl 1, {top}, {low}): {k!r} not in {sorted(got)}"
    # an invalid tensor_num_per_layer reaches no layer class; an unknown way of making a cache no way
    bad = push_keys(SPEC, SIG, Call({"tensor_num_per_layer": Value(0, "0")}, SPEC.api), side((2, 2), 4, 1, "odd"), low)
    assert not [k for k in bad if k.startswith(("layers=", "src_made="))], sorted(bad)


def test_the_pairwise_array_reaches_every_feasible_target_and_names_the_rest():
    factors = {"a": ("0", "1", "2"), "b": ("0", "1"), "c": ("x", "y")}
    pairs = [("a", "b"), ("a", "c"), ("b", "c")]

    def realise(row):  # a constraint: a=2 never with c=y
        if row.get("a") == "2" and row.get("c") == "y":
            return None
        return {k: [v] for k, v in row.items()}, dict(row)

    arr = covering_array(factors, pairs, realise)
    reached = {t for _, row in arr.rows for t in targets({k: [v] for k, v in row.items()}, [p for p in pairs
                                                                                         if set(p) <= set(row)])}
    assert set(arr.infeasible) == {(("a", "2"), ("c", "y"))}, arr.infeasible
    assert set(targets(factors, pairs)) - set(arr.infeasible) <= reached
    assert len(arr.rows) < 3 * 2 * 2, "a covering array, not every combination"
    nothing = covering_array(factors, pairs, lambda row: None)
    assert nothing.rows == () and len(nothing.infeasible) == len(targets(factors, pairs))


@pytest.mark.parametrize("clause_id", [SETUP, MIXED])
def test_the_covering_rows_reach_every_partition_and_spec_pair_of_their_dimensions(clause_id):
    got = plan(_run(CAPS), _clause(clause_id))  # type: ignore[arg-type]
    assert got is not None, clause_id
    arr, builder = got
    uni = universe(SPEC, SIG, CAPS)
    assert uni is not None
    reached: set[str] = set()
    for _, layout in arr.rows:
        reached |= {f"{d}={v}" for d, vs in builder.facts(layout).items() for v in vs}
        facts = builder.facts(layout)
        reached |= {f"{a}={x} & {b}={y}" for a, b in uni.pairs if a in facts and b in facts
                    for x in facts[a] for y in facts[b]}
    mine = _dims_of(clause_id)
    want = {k for k in uni.partition_keys() if k.split("=", 1)[0] in mine}
    want |= {k for k in uni.pair_keys() if any(p.split("=", 1)[0] in mine for p in k.split(" & "))}
    # the mixed clause's diagonal (equal types) is the data_type streams' and the setup array's, not its own
    if clause_id == MIXED:
        want = {k for k in want if not _same_types(k)}
    assert want and want <= reached, f"plan({clause_id}): unreached {sorted(want - reached)}"
    assert len(arr.rows) <= 200, f"plan({clause_id}): {len(arr.rows)} pushes"


def test_a_backend_without_registered_memory_is_not_asked_for_it():
    caps = {k: v for k, v in CAPS.items() if k not in ("register_cache", "raw_memory")}
    uni = universe(SPEC, SIG, caps)
    assert uni is not None and {"src_made=register", "dst_made=register"} <= set(uni.excluded), uni.excluded
    got = plan(_run(caps), _clause(SETUP))  # type: ignore[arg-type]
    assert got is not None and not [r for r, _ in got[0].rows if "register" in r.values()]


def test_certify_reaches_the_setup_partitions_by_construction(tmp_path):
    """The two covering clauses alone reach every partition of the dimensions naming them, through the testbed
    (make_cache records how it made each cache)."""
    proc = certify("--clauses", f"{SETUP},{MIXED}", "--report-dir", str(tmp_path))
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert all(t["outcome"] == "passed" for t in report["tests"]) and len(report["tests"]) == 2, proc.stdout[-3000:]
    mine = set(_dims_of(SETUP) + _dims_of(MIXED))
    unreached = report["run"]["domain_coverage"]["unreached_partitions"]
    assert not [k for k in unreached if k.split("=", 1)[0] in mine], unreached
    # the pairs they are in, but equal source and destination types (the data_type streams' in a full run)
    left = [k for k in report["run"]["domain_coverage"]["unreached_pairs"]
            if {p.split("=", 1)[0] for p in k.split(" & ")} & mine and not _same_types(k)]
    assert not left, left


def _same_types(key: str) -> bool:
    """Whether ``key`` is a pair of a source and a destination data type that are equal."""
    if " & " not in key:
        return False
    (a, x), (b, y) = (p.split("=", 1) for p in key.split(" & "))
    return {a, b} == {"data_type", "dst_data_type"} and x == y


@pytest.mark.parametrize(("fake", "clause_id", "caught"), [
    ("keyed_source_backend", SETUP, "src_made=allocate_with_keys"),
    ("mixed_types_backend", MIXED, "dst_data_type="),
])
def test_a_backend_correct_only_on_the_old_setup_is_not_certified(tmp_path, fake, clause_id, caught):
    """Wrong only on what the drawn layouts never varied (a source allocated with cache_keys; a destination of
    another data type): the covering clause fails, naming the row's partition, and the run is NOT CERTIFIED."""
    proc = certify("--backend", f"{fake}:backend", "--clauses", f"{SETUP},{MIXED}", "--report-dir", str(tmp_path))
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["verdict"]["label"].startswith("NOT CERTIFIED"), (report["verdict"], proc.stdout[-2000:])
    failed = [t for t in report["tests"] if t["outcome"] == "failed"]
    assert [t["clauses"] for t in failed] == [[clause_id]], [(t["id"], t["outcome"]) for t in report["tests"]]
    assert clause_id in report["verdict"]["blocking"], report["verdict"]
    assert caught in failed[0]["message"], failed[0]["message"][:2000]


def test_a_dimension_with_a_parameter_has_no_partitions_in_a_release_without_it():
    """Before tensor_num_per_layer a layer is two tensors: the tensor count is no input of its own there, and the
    covering array for that release still reaches every layer class."""
    old = SPEC.signature_for(SPEC.releases[0])
    assert "tensor_num_per_layer" not in {p.name for p in old.declared}, SPEC.releases[0]
    uni = universe(SPEC, old, CAPS)
    assert uni is not None and uni.partitions["tensors"] == () and uni.partitions["layers"], uni.partitions
    run = SimpleNamespace(spec=SPEC, signature=old, caps=CAPS, params=[p.name for p in old.declared], default_tnpl=2)
    got = plan(run, _clause(SETUP))  # type: ignore[arg-type]
    assert got is not None and got[0].rows
    reached = {v for _, layout in got[0].rows for v in got[1].facts(layout)["layers"]}
    assert reached == set(uni.partitions["layers"]), reached


@pytest.mark.parametrize("op", ["pull_cache", "push_blocks", "pull_blocks"])
def test_each_siblings_covering_clauses_reach_how_its_caches_are_made_and_its_defaults(tmp_path, op):
    """Each sibling's made dimensions (a blocks cache allocated or registered; a contiguous one allocated with or
    without keys, or registered) and its parameter defaults (the keywords **kwargs takes among them, by their
    keyword_defaults) are reached by the clauses they name alone, by construction: no partition of them, nor a
    pair of the two made dimensions, is left."""
    spec = load_spec(operation_spec_path(op))
    assert spec.coverage is not None
    dims = {n: d for n, d in spec.coverage.dimensions.items() if d.kind in ("made", "defaults")}
    assert {d.kind for d in dims.values()} == {"made", "defaults"}, dims
    clauses = sorted({str(d.params["covered_by"]) for d in dims.values()})
    proc = certify("--operation", op, "--clauses", ",".join(clauses), "--hypothesis-profile", "quick",
                   "--report-dir", str(tmp_path))
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["tests"] and all(t["outcome"] == "passed" for t in report["tests"]), proc.stdout[-3000:]
    cov = report["run"]["domain_coverage"]
    left = [k for k in cov["unreached_partitions"] + cov["unreached_pairs"]
            if all(p.split("=", 1)[0] in dims for p in k.split(" & "))]
    assert not left, left


@pytest.mark.parametrize(("op", "caught"), [("push_blocks", "src_made=register_blocks"),
                                            ("pull_blocks", "dst_made=register_blocks")])
def test_a_blocks_backend_correct_only_on_allocated_blocks_caches_is_not_certified(tmp_path, op, caught):
    """Wrong only where a blocks cache the call names locally was registered on raw memory: the covering clause
    fails, naming the row's partition."""
    clause_id = f"{op}.data.setup_extremes"
    proc = certify("--backend", "registered_blocks_backend:backend", "--operation", op, "--clauses", clause_id,
                   "--report-dir", str(tmp_path))
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["verdict"]["label"].startswith("NOT CERTIFIED"), (report["verdict"], proc.stdout[-2000:])
    failed = [t for t in report["tests"] if t["outcome"] == "failed"]
    assert [t["clauses"] for t in failed] == [[clause_id]], [(t["id"], t["outcome"]) for t in report["tests"]]
    assert caught in failed[0]["message"], failed[0]["message"][:2000]


@pytest.mark.parametrize(("op", "mutant"), [("pull_cache", "pull_first_layer_by_default"),
                                            ("pull_blocks", "pull_blocks_first_layer_by_default")])
def test_a_wrong_default_of_a_kwargs_keyword_fails_the_covering_pull(tmp_path, op, mutant):
    """The keywords of **kwargs whose defaults the spec states (the layer ranges: every layer) are left out by the
    covering pull of the parameter dimension: a backend whose ranges left out mean the first layer fails that
    pull, which names what it left out."""
    clause_id = f"{op}.data.postcondition"
    proc = certify("--backend", f"mutants.catalog:{mutant}", "--operation", op, "--clauses", clause_id,
                   "--report-dir", str(tmp_path))
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    failed = {t["params"]["item"]: t for t in report["tests"] if t["outcome"] == "failed"}
    assert "parameter_omitted" in failed, ([(t["id"], t["outcome"]) for t in report["tests"]], proc.stdout[-2000:])
    left_out = failed["parameter_omitted"]["message"].split(" left out")[0]
    assert "src_layer_range" in left_out and "dst_layer_range" in left_out, left_out[-500:]

"""Unit tests of the engine's pieces: backend resolution, expectations, the value language, the data model."""

from __future__ import annotations

import ast
import datetime as dt
import inspect
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conformance_tests.backend import capability_supported
from conformance_tests.inputs.values import DecodeContext, Value, decode, materialise
from conformance_tests.judging.oracle import CacheLayout, Transfer, expected_destination, plan
from conformance_tests.judging.oracle import diff as diff_tensors
from conformance_tests.resolution import BackendError, resolve_backend
from conformance_tests.selecting.expectations import ExpectationsError, load_expectations
from conformance_tests.spec.load import deep_merge
from conformance_tests.spec.model import Parameter, Signature
from conformance_tests.spec.value_language import ValueLanguageError, evaluate_int, parse_value

PKG = Path(__file__).resolve().parents[2] / "conformance_tests"


def test_suite_never_imports_the_reference():
    for path in PKG.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] in ("reference_impl", "mutants") for n in names), path


def test_resolve_backend_by_entry_point_and_by_path():
    backend, target = resolve_backend("reference")
    assert target == "reference_impl.backend:backend" and backend.name == "reference"
    _, target = resolve_backend("reference_impl.backend")
    assert target == "reference_impl.backend:backend"


def test_resolve_backend_errors_are_one_line():
    for spec in ("nope_not_here", "reference_impl.backend:no_such_attr", "no_pkg_xyz.mod:backend"):
        with pytest.raises(BackendError) as info:
            resolve_backend(spec)
        assert "\n" not in str(info.value) and "name a backend as an installed entry point" in str(info.value)


def test_capabilities_dotted():
    caps = {"placements": ["HOST"], "faults": ["delay"], "blocks_cache": True, "raw_memory": False}
    assert capability_supported(caps, "placements.HOST")
    assert not capability_supported(caps, "placements.DEVICE")
    assert capability_supported(caps, "faults.delay") and not capability_supported(caps, "faults.kill_node")
    assert capability_supported(caps, "blocks_cache") and not capability_supported(caps, "raw_memory")
    assert not capability_supported(caps, "threads")


def test_expectations_matching_and_expiry(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text(
        "version: 1\nentries:\n"
        "  - {match: 'push_cache.order.*', outcome: xfail, reason: r1}\n"
        "  - {match: '*size.only_default*-sixteen]', outcome: skip, reason: r2}\n"
        "  - {match: 'push_cache.data.*', outcome: xfail, reason: r3, expires: 2020-01-01}\n"
    )
    exp = load_expectations(path, today=dt.date(2026, 1, 1))
    assert [e.expired for e in exp.entries] == [False, False, True]
    hit = exp.lookup(["push_cache.order.python_checks"], [], record="t1")
    assert hit is not None and hit.reason == "r1"
    tid = "conformance_tests/suite/test_restriction.py::test_case[push_cache.restriction.size.only_default-sixteen]"
    hit = exp.lookup(["push_cache.restriction.size.only_default"], [tid], record="t2")
    assert hit is not None and hit.outcome == "skip"
    assert exp.lookup(["push_cache.data.postcondition"], []) is None  # expired entries are ignored
    assert exp.unmatched() == []
    assert len(exp.sha256) == 64


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("version: 2\nentries: []\n", "$.version"),
        ("version: 1\nentries:\n  - {match: x, outcome: xfail}\n", "$.entries[0]"),
        ("version: 1\nentries:\n  - {match: x, outcome: xfail, reason: r, expires: 'soon'}\n",
         "$.entries[0].expires"),
        ("version: 1\nentries: [\n", "not valid YAML"),
    ],
)
def test_bad_expectations_files(tmp_path, text, where):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ExpectationsError) as info:
        load_expectations(path)
    assert where in str(info.value) and "\n" not in str(info.value)


class _Key:
    def __init__(self, cluster_id, cache_id, batch_index=0):
        if batch_index < 0:
            raise ValueError("batch_index")
        self.cluster_id, self.cache_id, self.batch_index = cluster_id, cache_id, batch_index


def _ctx(**kw):
    api = SimpleNamespace(CacheKeyByIdAndIndex=_Key)
    base = dict(api=api, num_layers=2, num_tensors=4, batch_size=3, local_id=1, remote_id=2, unlinked_id=3,
                dst_cache_id=7, unknown_cache_id=1007, cache_lookup=lambda name, placement: Value(name, name))
    base.update(kw)
    return DecodeContext(**base)


def _decode(raw, ctx):
    return decode(parse_value(raw), ctx)


def test_value_language():
    ctx = _ctx()
    assert _decode({"range": [0, "L+1"]}, ctx).obj == range(0, 3)
    assert _decode({"range": [1, "T", 2]}, ctx).code == "range(1, 4, 2)"
    assert _decode({"symbol": "B"}, ctx).obj == 3 and _decode({"symbol": "T+1"}, ctx).obj == 5
    assert _decode("B", ctx).obj == "B" and _decode("x", ctx).obj == "x"  # a plain string is passed as it is
    assert _decode({"tuple": [1]}, ctx).code == "(1,)" and _decode({"list": [1, {"range": [0, 1]}]}, ctx).obj == [
        1, range(0, 1)]
    assert type(_decode({"object": {}}, ctx).obj) is object
    key = _decode({"key": "CacheKeyByIdAndIndex", "batch": 1}, ctx)
    assert key.code == "api.CacheKeyByIdAndIndex(2, dst.cache_id, 1)"
    built = materialise(key.obj)
    assert (built.cluster_id, built.cache_id, built.batch_index) == (2, 7, 1)
    bad = _decode({"key": "CacheKeyByIdAndIndex", "cluster": "unlinked", "cache": "unknown", "batch": -1}, ctx)
    with pytest.raises(ValueError):
        materialise(bad.obj)  # a key constructor error happens when the call is made, not at decode time
    assert parse_value({"key": "CacheKey", "args": ["local", 5]}).as_data() == {"key": "CacheKey", "args": ["local", 5]}


@pytest.mark.parametrize(("text", "value"), [("2**64", 2**64), ("-(2**63)", -(2**63)), ("2**32 - 1", 2**32 - 1),
                                             ("(1+2)*3", 9)])
def test_int_expressions_are_computed_by_a_small_grammar(text, value):
    assert evaluate_int(text) == value


@pytest.mark.parametrize("text", ["9**9**9**9", "2**1000", "__import__('os')", "1/2", "2**-1", "x", ""])
def test_int_expressions_outside_the_grammar_or_its_bounds_are_refused_at_once(text):
    with pytest.raises(ValueLanguageError):
        evaluate_int(text)


def test_expected_destination_model():
    src = [np.full(8, 10 + i, dtype=np.uint8) for i in range(4)]  # 4 tensors, batch 2, stride 4
    for i, t in enumerate(src):
        t[4:] = 100 + i  # batch 1 differs from batch 0
    before = [np.zeros(12, dtype=np.uint8) for _ in range(4)]  # batch 3, stride 4
    src_layout, dst_layout = CacheLayout(4, (2, 4), 1), CacheLayout(4, (3, 4), 1)
    plan = Transfer(src_layers=(1,), dst_layers=(1,), tnpl=2, entries=((1, 2),))
    out = expected_destination(src, before, plan, src_layout, dst_layout)
    assert [bytes(t).hex() for t in out[:2]] == ["00" * 12] * 2
    assert list(out[2][8:]) == [102] * 4 and list(out[3][8:]) == [103] * 4 and not out[2][:8].any()
    # out-of-range pairs move nothing
    plan = Transfer(src_layers=(0, 5), dst_layers=(0, 5), tnpl=2, entries=((0, 0),))
    out = expected_destination(src, before, plan, src_layout, dst_layout)
    assert list(out[0][:4]) == [10] * 4 and not out[2].any()


def test_block_lists_move_pairwise_in_order():
    """push_blocks' unit: src_blocks[i] of each targeted tensor into dst_blocks[i]; unequal or non-int lists
    describe no transfer; a destination block listed twice ends with the last source listed for it."""
    from conformance_tests.spec import load_spec, operation_spec_path

    op = load_spec(operation_spec_path("push_blocks")).operation
    src_layout, dst_layout = CacheLayout(2, (4, 2), 1), CacheLayout(2, (6, 2), 1)  # 4 and 6 blocks of 2 bytes
    src = [np.arange(8, dtype=np.uint8) + 10 * t for t in range(2)]
    before = [np.zeros(12, dtype=np.uint8) for _ in range(2)]
    moved = plan({"src_blocks": [0, 2, 3], "dst_blocks": [5, 1, 5], "tensor_num_per_layer": 1}, src_layout, 2, op)
    assert moved is not None and moved.entries == ((0, 5), (2, 1), (3, 5)) and moved.src_layers == (0, 1)
    out = expected_destination(src, before, moved, src_layout, dst_layout)
    assert list(out[1]) == [0, 0, 14, 15, 0, 0, 0, 0, 0, 0, 16, 17]  # block 2 -> 1, block 3 (last) -> 5
    for bad in ({"src_blocks": [0, 1], "dst_blocks": [0]}, {"src_blocks": [0, 1.0], "dst_blocks": [0, 1]},
                {"src_blocks": "01", "dst_blocks": [0, 1]}, {"src_blocks": [0, -1], "dst_blocks": [0, 1]}):
        assert plan(bad, src_layout, 2, op) is None, bad


def test_diff_tensors_message():
    want = [np.arange(16, dtype=np.uint8)]
    got = [want[0].copy()]
    got[0][5:7] = 0xFF
    (difference,) = diff_tensors(want, got, "dst")
    line = str(difference)
    assert "dst tensor 0: 2 of 16 bytes differ, first at offset 5" in line
    assert "expected 05 06" in line and "got ff ff" in line


def test_deep_merge_keeps_siblings_and_removes_nothing():
    base = {"local": {"cluster_id": 1, "options": {"a": "1", "b": "2"}}, "link": True}
    out = deep_merge(base, {"local": {"options": {"b": None}}, "link": False})
    assert out == {"local": {"cluster_id": 1, "options": {"a": "1", "b": None}}, "link": False}
    assert base["local"]["options"]["b"] == "2"


def test_signature_problems_are_specific():
    from conformance_tests.judging.signatures import signature_problems

    def push_cache(dst_cache_key, src_cache, src_batch_index=0, size=-2, **kwargs):  # noqa: ARG001
        return None

    spec = Signature(None, None, (
        Parameter("dst_cache_key", "positional_or_keyword", "K", required=True),
        Parameter("src_cache", "positional_or_keyword", "C", required=True),
        Parameter("src_batch_index", "positional_or_keyword", "int", has_default=True, default=0),
        Parameter("size", "positional_or_keyword", "int", has_default=True, default=-1),
    ))
    problems = signature_problems(inspect.signature(push_cache), spec)
    assert any("size defaults to -2" in p for p in problems)
    assert any("**kwargs is present" in p for p in problems)


def test_explore_runs_get_a_recorded_seed():
    from conformance_tests.__main__ import _explore_seed

    (arg,) = _explore_seed(["--hypothesis-profile", "explore"])
    assert arg.startswith("--hypothesis-seed=") and int(arg.split("=")[1]) >= 0
    assert _explore_seed(["--hypothesis-profile=explore", "--hypothesis-seed=7"]) == []
    assert _explore_seed(["--hypothesis-profile", "certify"]) == [] and _explore_seed([]) == []

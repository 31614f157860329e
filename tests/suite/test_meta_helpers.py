"""Meta-tests: the suite's assertion helpers reject wrong values (a byte off, a wrong exception type,
a wrong status code, a write into a guard byte) and accept right ones. Run on the reference backend."""

from __future__ import annotations

import numpy as np
import pytest

from conformance_tests.harness import GUARD_BYTES, Check, Outcome, World, scenario_for
from conformance_tests.spec import load_spec
from reference_impl.backend import backend

CLAUSE = "push_cache.data.postcondition"
SUCCESS = {"outcome": "success", "data": "exact"}


@pytest.fixture
def pushed():
    """A world (destination guarded by raw memory) after one valid push of layer 1, batch 1 -> batch 0."""
    spec = load_spec()
    world = World(backend, scenario_for(spec), guard=True, types=spec.types).open()
    try:
        call = world.call({"src_batch_index": 1, "src_layer_range": {"range": [1, 2]},
                           "dst_layer_range": {"range": [1, 2]}})
        outcome = world.push(call)
        yield world, Check(world, call, CLAUSE, "meta"), outcome
    finally:
        world.close()


def _flip(node, cache, tensor: int, offset: int) -> None:
    data = np.asarray(node.read_tensor(cache, tensor), dtype=np.uint8).copy()
    data[offset] ^= 0x01
    node.write_tensor(cache, tensor, data)


def test_a_correct_push_passes(pushed):
    world, check, outcome = pushed
    assert world.dst.guarded, "the destination is guarded"
    check.expect(outcome, SUCCESS)


@pytest.mark.parametrize("tensor", [2, 3, 0])
def test_one_byte_off_in_the_destination_is_caught(pushed, tensor):
    world, check, outcome = pushed
    _flip(world.remote, world.dst.cache, tensor, world.dst.stride - 1)  # last byte of batch 0
    with pytest.raises(AssertionError) as info:
        check.expect(outcome, SUCCESS)
    text = str(info.value)
    assert CLAUSE in text and "call:" in text and f"dst tensor {tensor}: 1 of" in text


def test_a_changed_source_byte_is_caught(pushed):
    world, check, outcome = pushed
    _flip(world.local, world.src.cache, 0, 0)
    with pytest.raises(AssertionError, match="src \\(must be unchanged\\) tensor 0: 1 of"):
        check.expect(outcome, SUCCESS)


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_write_into_a_guard_byte_is_caught(pushed, where):
    world, check, outcome = pushed
    addr = world.dst.guarded[1]
    target = addr - 1 if where == "before" else addr + world.dst.nbytes + GUARD_BYTES - 1
    byte = np.asarray(world.remote.read_memory(target, 1), dtype=np.uint8) ^ 0xFF
    world.remote.write_memory(target, byte)
    with pytest.raises(AssertionError, match=f"guard bytes {where} dst tensor 1 changed"):
        check.expect(outcome, SUCCESS)


def test_a_wrong_exception_type_is_caught(pushed):
    world, check, _ = pushed
    with pytest.raises(AssertionError, match="expected LLMException, but push_cache raised ValueError"):
        check.expect(Outcome(ValueError("bad step"), 0.0), {"raises": ["LLMException"]})
    with pytest.raises(AssertionError, match="returned normally"):
        check.expect(Outcome(None, 0.0), {"raises": ["TypeError", "ValueError"]})
    check.expect(Outcome(TypeError("x"), 0.0), {"raises": ["TypeError", "ValueError"]})


def test_a_wrong_status_code_is_caught(pushed):
    world, check, _ = pushed
    api = world.api
    timeout = api.LLMException("late", status_code=api.LLMStatusCode.LLM_TIMEOUT)
    with pytest.raises(AssertionError, match="LLM_PARAM_INVALID"):
        check.expect(Outcome(timeout, 0.0), {"raises": ["LLMException"], "status": "LLM_PARAM_INVALID"})
    check.expect(Outcome(timeout, 0.0), {"raises": ["LLMException"], "status": "LLM_TIMEOUT"})


def test_a_hang_is_never_a_pass(pushed):
    _, check, _ = pushed
    with pytest.raises(AssertionError, match="hang"):
        check.expect(Outcome(None, 30.0, hung=True), {"raises": ["LLMException"]})


def test_the_envelope_rejects_bytes_from_nowhere(pushed):
    world, check, outcome = pushed
    envelope = {"outcome": "any_of", "allowed": [{"raises": ["LLMException"]}, SUCCESS]}
    check.expect(outcome, envelope)
    _flip(world.remote, world.dst.cache, 0, 3)  # tensor 0 was not targeted: its bytes are neither old nor new
    with pytest.raises(AssertionError):
        check.expect(outcome, envelope)

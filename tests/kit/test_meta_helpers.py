"""Meta-tests: the typed expectations reject wrong values (a byte off, a wrong exception type, a wrong status
code, a write into a guard byte, a write by a refused call) and accept right ones. Run on the reference."""

from __future__ import annotations

import numpy as np
import pytest

from conformance_tests.judging.judge import judge
from conformance_tests.running.context import RunContext
from conformance_tests.spec.expect import Expectation, Succeeds, parse_expect
from conformance_tests.spec.value_language import parse_value
from conformance_tests.testbed.testbed import GUARD_BYTES, Outcome, Testbed
from reference_impl.backend import backend

CLAUSE = "push_cache.data.postcondition"
EXACT = Succeeds("exact")


@pytest.fixture
def pushed():
    """A testbed (destination guarded by raw memory) after one valid push of layer 1, batch 1 -> batch 0."""
    run = RunContext.for_backend(backend, "reference_impl.backend:backend")
    tb = Testbed(run, run.spec.scenario).open()
    try:
        args = {"src_batch_index": 1, "src_layer_range": {"range": [1, 2]}, "dst_layer_range": {"range": [1, 2]}}
        call = tb.call({k: parse_value(v) for k, v in args.items()})
        yield tb, call, tb.push(call)
    finally:
        tb.close()


def _flip(node, cache, tensor: int, offset: int) -> None:
    data = np.asarray(node.read_tensor(cache, tensor), dtype=np.uint8).copy()
    data[offset] ^= 0x01
    node.write_tensor(cache, tensor, data)


def _judge(tb, call, outcome, expect: Expectation | dict) -> None:
    judge(tb, call, outcome, parse_expect(expect) if isinstance(expect, dict) else expect, CLAUSE, "meta")


def test_a_correct_push_passes(pushed):
    tb, call, outcome = pushed
    assert tb.dst.guarded, "the destination is guarded"
    _judge(tb, call, outcome, EXACT)


@pytest.mark.parametrize("tensor", [2, 3, 0])
def test_one_byte_off_in_the_destination_is_caught(pushed, tensor):
    tb, call, outcome = pushed
    _flip(tb.remote, tb.dst.cache, tensor, tb.dst.stride - 1)  # last byte of batch 0
    with pytest.raises(AssertionError) as info:
        _judge(tb, call, outcome, EXACT)
    text = str(info.value)
    assert CLAUSE in text and "call:" in text
    if tensor in (2, 3):  # layer 1, batch 0: the pushed slice holds a wrong byte
        assert f"dst targeted slice tensor {tensor}: 1 of" in text and "the targeted slice holds wrong bytes" in text
    else:  # a byte no push may write changed
        assert f"dst outside the targeted slices tensor {tensor}: 1 of" in text
        assert "bytes were written outside the targeted slices" in text


def test_a_changed_source_byte_is_caught(pushed):
    tb, call, outcome = pushed
    _flip(tb.local, tb.src.cache, 0, 0)
    with pytest.raises(AssertionError, match="src \\(must be unchanged\\) tensor 0: 1 of"):
        _judge(tb, call, outcome, EXACT)


@pytest.mark.parametrize(("tensor", "offset", "where"), [
    (0, -1, "before dst tensor 0"),
    (1, -1, "between dst tensors 0 and 1"),
    (-1, None, "after dst tensor {last}"),
])
def test_a_write_into_a_guard_byte_is_caught(pushed, tensor, offset, where):
    tb, call, outcome = pushed
    addr = tb.dst.guarded[tensor]
    target = addr + offset if offset is not None else addr + tb.dst.nbytes + GUARD_BYTES - 1
    byte = np.asarray(tb.remote.read_memory(target, 1), dtype=np.uint8) ^ 0xFF
    tb.remote.write_memory(target, byte)
    expected = where.format(last=len(tb.dst.guarded) - 1)
    with pytest.raises(AssertionError, match=f"guard bytes {expected} changed"):
        _judge(tb, call, outcome, EXACT)


def test_a_refused_call_that_wrote_is_caught(pushed):
    """The push above wrote layer 1: as the outcome of a refused call, that write is a failure."""
    tb, call, _ = pushed
    api = tb.api
    refused = Outcome(api.LLMException("bad", status_code=api.LLMStatusCode.LLM_PARAM_INVALID), 0.0)
    with pytest.raises(AssertionError, match="dst \\(must be unchanged\\) tensor 2"):
        _judge(tb, call, refused, {"raises": ["LLMException"]})
    _judge(tb, call, refused, {"raises": ["LLMException"], "writes": "valid_layers"})  # allowed by the clause


def test_a_wrong_exception_type_is_caught(pushed):
    tb, call, _ = pushed
    tb.before["dst"] = tb.read_dst()  # only the exception is under test here
    with pytest.raises(AssertionError, match="push_cache raised ValueError.*, but the clause expects: raises LLMException"):
        _judge(tb, call, Outcome(ValueError("bad step"), 0.0), {"raises": ["LLMException"]})
    with pytest.raises(AssertionError, match="returned normally"):
        _judge(tb, call, Outcome(None, 0.0), {"raises": ["TypeError", "ValueError"]})
    _judge(tb, call, Outcome(TypeError("x"), 0.0), {"raises": ["TypeError", "ValueError"]})


def test_a_wrong_status_code_is_caught(pushed):
    tb, call, _ = pushed
    tb.before["dst"] = tb.read_dst()
    api = tb.api
    timeout = api.LLMException("late", status_code=api.LLMStatusCode.LLM_TIMEOUT)
    with pytest.raises(AssertionError, match="LLM_PARAM_INVALID"):
        _judge(tb, call, Outcome(timeout, 0.0), {"raises": ["LLMException"], "status": "LLM_PARAM_INVALID"})
    _judge(tb, call, Outcome(timeout, 0.0), {"raises": ["LLMException"], "status": "LLM_TIMEOUT"})


def test_a_hang_is_never_a_pass(pushed):
    tb, call, _ = pushed
    with pytest.raises(AssertionError, match="hang"):
        _judge(tb, call, Outcome(None, 30.0, hung=True), {"raises": ["LLMException"]})


def test_the_envelope_rejects_bytes_from_nowhere(pushed):
    tb, call, outcome = pushed
    envelope = {"outcome": "any_of", "allowed": [{"raises": ["LLMException"]}, {"outcome": "success", "post": "exact"}]}
    _judge(tb, call, outcome, envelope)
    _flip(tb.remote, tb.dst.cache, 0, 3)  # tensor 0 was not targeted: its bytes are neither old nor new
    with pytest.raises(AssertionError):
        _judge(tb, call, outcome, envelope)

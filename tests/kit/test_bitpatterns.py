"""The special bit patterns follow from the spec's encodings: numpy reads the float ones as the values they stand
for, and every integer type gets its extremes and all-ones."""

from __future__ import annotations

import numpy as np
import pytest

from conformance_tests.inputs.bitpatterns import pattern_bytes, patterns
from conformance_tests.spec import load_spec

MEMBERS = load_spec().types.enums["DataType"].members
FLOATS = {"DT_FLOAT16": np.float16, "DT_FLOAT": np.float32, "DT_DOUBLE": np.float64}


@pytest.mark.parametrize("name", sorted(FLOATS))
def test_ieee_patterns_are_what_they_claim(name):
    m = MEMBERS[name]
    values = np.frombuffer(pattern_bytes(m.encoding, m.size, "little"), dtype=FLOATS[name])
    bits = np.frombuffer(pattern_bytes(m.encoding, m.size, "little"), dtype=f"<u{m.size}")
    assert np.any((values == 0) & ~np.signbit(values)) and np.any((values == 0) & np.signbit(values))
    assert np.any(np.isposinf(values)) and np.any(np.isneginf(values))
    quiet_bit = 1 << (m.encoding.mantissa_bits - 1)
    nans = bits[np.isnan(values)]
    assert any(b & quiet_bit for b in nans) and any(not b & quiet_bit for b in nans), "quiet and signalling NaNs"
    tiny = np.finfo(FLOATS[name]).smallest_normal
    assert np.any((values != 0) & (np.abs(values) < tiny)), "subnormals"
    assert np.any(values == np.finfo(FLOATS[name]).max) and np.any(values == 1.0)
    assert (1 << 8 * m.size) - 1 in set(bits.tolist()), "all ones"


def test_bfloat16_patterns_widen_to_the_same_float32_specials():
    m = MEMBERS["DT_BF16"]
    halves = np.frombuffer(pattern_bytes(m.encoding, m.size, "little"), dtype="<u2").astype(np.uint32) << 16
    values = halves.view(np.float32)
    assert np.any(np.isnan(values)) and np.any(np.isinf(values)) and np.any(np.signbit(values) & (values == 0))
    assert np.any((values != 0) & (np.abs(values) < np.finfo(np.float32).smallest_normal))


@pytest.mark.parametrize("name", [n for n, m in MEMBERS.items() if m.encoding and m.encoding.kind in ("signed",
                                                                                                     "unsigned")])
def test_integer_patterns_hold_the_extremes(name):
    m = MEMBERS[name]
    got = set(patterns(m.encoding, m.size))
    ones = (1 << 8 * m.size) - 1
    assert {0, 1, ones, 1 << (8 * m.size - 1), ones >> 1} <= got


def test_bool_patterns_hold_bytes_a_bool_should_never_hold():
    m = MEMBERS["DT_BOOL"]
    got = pattern_bytes(m.encoding, m.size, "little")
    assert {0, 1} <= set(got) and len(set(got) - {0, 1}) >= 3


def test_byte_order_is_the_spec_s():
    m = MEMBERS["DT_FLOAT"]
    little, big = pattern_bytes(m.encoding, 4, "little"), pattern_bytes(m.encoding, 4, "big")
    assert little != big and little[:4] == big[:4][::-1]

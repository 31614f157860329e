"""The special bit patterns of a DataType's elements, derived from its encoding in the spec (``types.DataType``
members' ``encoding`` and ``types.byte_order``): a push copies bytes, so every pattern must arrive unchanged.

Floats (a sign bit, exponent and mantissa bits: IEEE 754 binary16/32/64 and bfloat16 alike): both zeros, both
infinities, quiet and signalling NaNs with small and full payloads and either sign, the smallest and largest
subnormals of either sign, the smallest normal, the largest finite of either sign, one, and the all-ones pattern.
Integers: zero, one, all ones, the extremes and the bit checkerboards. Bools: false, true and the bytes a
bool should never hold (a copy keeps them). Nothing here names a type: the patterns follow from the encoding.
"""

from __future__ import annotations

from ..spec.model import Encoding


def _float_patterns(exponent_bits: int, mantissa_bits: int) -> list[int]:
    sign = 1 << (exponent_bits + mantissa_bits)
    exp_all = ((1 << exponent_bits) - 1) << mantissa_bits
    quiet = 1 << (mantissa_bits - 1)
    payload_all = (1 << mantissa_bits) - 1
    one = ((1 << (exponent_bits - 1)) - 1) << mantissa_bits
    return [
        0, sign,                                        # +0, -0
        exp_all, sign | exp_all,                        # +inf, -inf
        exp_all | quiet, sign | exp_all | quiet,        # quiet NaNs
        exp_all | quiet | 1, exp_all | payload_all,     # quiet NaNs with a payload
        exp_all | 1, sign | exp_all | 1,                # signalling NaNs (smallest payload)
        exp_all | (payload_all ^ quiet),                # signalling NaN, every other payload bit
        1, sign | 1,                                    # smallest subnormals
        payload_all, sign | payload_all,                # largest subnormals
        1 << mantissa_bits,                             # smallest normal
        exp_all - 1, sign | (exp_all - 1),              # largest finite
        one,                                            # 1.0
        sign | exp_all | payload_all,                   # all ones (a negative NaN)
    ]


def _int_patterns(bits: int) -> list[int]:
    """Zero, one, all ones (-1 or the largest unsigned), all ones but the lowest bit, the sign bit alone (the
    smallest signed), all but the sign bit (the largest signed), and the two checkerboards: the same bits serve
    two's complement and unsigned elements."""
    ones = (1 << bits) - 1
    checker = int("55" * (bits // 8), 16)
    return [0, 1, ones, ones ^ 1, 1 << (bits - 1), ones >> 1, checker, (checker << 1) & ones]


def patterns(encoding: Encoding | None, size: int) -> list[int]:
    """The special element values of a ``size``-byte element with ``encoding``, as unsigned integers of its bits
    (an element without an encoding gets the integer patterns of its size)."""
    if encoding is not None and encoding.kind == "float":
        return _float_patterns(encoding.exponent_bits, encoding.mantissa_bits)
    if encoding is not None and encoding.kind == "bool":
        return [0x00, 0x01, 0x02, 0x7F, 0x80, 0xFE, 0xFF]
    return _int_patterns(8 * size)


def pattern_bytes(encoding: Encoding | None, size: int, byte_order: str) -> bytes:
    """The special patterns as consecutive elements in memory (``byte_order``: "little" or "big")."""
    if byte_order == "little":
        return b"".join(v.to_bytes(size, "little") for v in patterns(encoding, size))
    return b"".join(v.to_bytes(size, "big") for v in patterns(encoding, size))

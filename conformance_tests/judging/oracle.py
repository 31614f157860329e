"""The expected bytes: what a transfer call moves, computed from the call and the cache layouts alone.

Pure functions over numpy arrays; nothing here talks to a backend.  The rule is the spec's
``types.layout`` text: layer L covers tensors [L*N, (L+1)*N); for each i, layer src_layer_range[i] goes to
dst_layer_range[i]; per tensor, each moved source entry (``stride`` bytes at entry*stride) lands at its
destination entry (entry * destination stride).  An entry is a batch entry (push_cache: src_batch_index into
the key's batch index) or a block (push_blocks: src_blocks[i] into dst_blocks[i]; a blocks cache's first
dimension counts its blocks): the spec's ``operation`` says which parameters name them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..spec.model import Operation
from .differences import Difference, Where

#: caches up to this many bytes are compared in one step when they are as expected
FAST_PATH_BYTES = 1 << 20
#: the name under which a call's raw arguments give the remote cache's entry its key names (a batch entry)
KEY_ENTRY = "key_entry"


@dataclass(frozen=True)
class CacheLayout:
    """The memory layout of one contiguous cache: what the oracle needs to know about it."""

    num_tensors: int
    shape: tuple[int, ...]
    itemsize: int

    @property
    def nbytes(self) -> int:
        """Bytes of one tensor."""
        return math.prod(self.shape) * self.itemsize

    @property
    def batch(self) -> int:
        """Batch entries: shape[0] (the native layer ignores batch_dim_index)."""
        return self.shape[0] if self.shape else 1

    @property
    def stride(self) -> int:
        """Bytes of one batch entry of one tensor."""
        return self.nbytes // self.batch if self.batch else 0


@dataclass(frozen=True)
class Transfer:
    """The (src layer, dst layer) pairs and the (src entry, dst entry) pairs a call targets."""

    src_layers: tuple[int, ...]
    dst_layers: tuple[int, ...]
    tnpl: int
    entries: tuple[tuple[int, int], ...]
    #: a pull of blocks from a contiguous cache: the source's batch entry the key names, cut into blocks of the
    #: destination's block size, the k-th of which is the source of entries[k] (then (k, destination block))
    from_entry: int | None = None

    def tensor_pairs(self) -> list[tuple[int, int]]:
        """(source tensor, destination tensor) for every targeted layer pair, K,V,... in order."""
        return [(s * self.tnpl + j, d * self.tnpl + j)
                for s, d in zip(self.src_layers, self.dst_layers, strict=False) for j in range(self.tnpl)]


def _uint(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _entries(args: Mapping[str, object], op: Operation) -> tuple[tuple[int, int], ...] | None:
    """The (source, destination) entries ``args`` name: one pair of indices (default 0) or two lists of blocks
    paired in order (of equal length, else None); for a contiguous source (no source blocks, a key naming a
    batch entry: :func:`_from_entry`), each destination block with its position."""
    if not op.lists:
        pair = (_uint(args.get(op.src_entries, 0)), _uint(args.get(op.dst_entries, 0)))
        return ((pair[0], pair[1]),) if pair[0] is not None and pair[1] is not None else None
    src, dst = args.get(op.src_entries, ()), args.get(op.dst_entries, ())
    if not (isinstance(src, (list, tuple)) and isinstance(dst, (list, tuple))):
        return None
    if _from_entry(args, op) is not None:
        src = range(len(dst))
    if len(src) != len(dst):
        return None
    pairs = [(_uint(s), _uint(d)) for s, d in zip(src, dst, strict=True)]
    return tuple((s, d) for s, d in pairs if s is not None and d is not None) if all(
        s is not None and d is not None for s, d in pairs) else None


def _from_entry(args: Mapping[str, object], op: Operation) -> int | None:
    """The source batch entry of a pull of blocks from a contiguous cache: no source blocks listed, some
    destination blocks, and a key naming a batch entry (``KEY_ENTRY``); None otherwise."""
    src, dst = args.get(op.src_entries, ()), args.get(op.dst_entries, ())
    if not (op.lists and op.pulls and isinstance(src, (list, tuple)) and not src and isinstance(dst, (list, tuple))
            and dst):
        return None
    return _uint(args.get(KEY_ENTRY))


def plan(args: Mapping[str, object], src: CacheLayout, default_tnpl: int, op: Operation) -> Transfer | None:
    """The transfer the raw call ``args`` describes (the parameter names of ``op``; ``dst_batch_index`` is the
    key's batch index), or None when the arguments do not describe one (wrong types, tnpl 0, unequal lists)."""
    tnpl = _uint(args.get("tensor_num_per_layer", default_tnpl))
    entries = _entries(args, op)
    if tnpl is None or entries is None or tnpl == 0:
        return None
    default = range(0, src.num_tensors // tnpl)
    ranges = []
    for name in ("src_layer_range", "dst_layer_range"):
        r = args.get(name)
        r = default if r is None else r
        if not isinstance(r, range):
            return None
        ranges.append(tuple(r))
    return Transfer(ranges[0], ranges[1], tnpl, entries, _from_entry(args, op))


def entry_spans(transfer: Transfer, src: CacheLayout, dst: CacheLayout, *,
                prefix: bool = False) -> tuple[int, list[tuple[int, int]]]:
    """The bytes each moved entry takes, and the (source offset, destination offset) of every entry that moves
    (inside both caches), per tensor: the rule :func:`expected_destination` applies and a reproduction writes."""
    if transfer.from_entry is not None:
        # blocks of the destination's size cut from one source entry: all inside it, else nothing moves
        n, base = dst.stride, transfer.from_entry * src.stride
        if len(transfer.entries) * n > src.stride:
            return n, []
        starts = [(base + k * n, d * n) for k, d in transfer.entries]
    else:
        n = src.stride
        if n > dst.stride or (n < dst.stride and not prefix):
            return n, []
        starts = [(s * src.stride, d * dst.stride) for s, d in transfer.entries]
    return n, [(s0, d0) for s0, d0 in starts if s0 + n <= src.nbytes and d0 + n <= dst.nbytes]


def expected_destination(src_data: Sequence[np.ndarray], dst_before: Sequence[np.ndarray], transfer: Transfer,
                         src: CacheLayout, dst: CacheLayout, *, prefix: bool = False) -> list[np.ndarray]:
    """The destination after a successful transfer.  Pairs outside either cache move nothing (a call that names
    them is refused, and may leave the valid pairs before them pushed).  A source entry larger than the
    destination entry moves nothing; with ``prefix`` a smaller one fills the start of the destination entry,
    otherwise it also moves nothing (only equal entries are a plain push).  Entries move in their order, so a
    destination block listed twice holds the last source block listed for it."""
    out = [d.copy() for d in dst_before]
    n, starts = entry_spans(transfer, src, dst, prefix=prefix)
    for s0, d0 in starts:
        for s, d in transfer.tensor_pairs():
            if 0 <= s < len(src_data) and 0 <= d < len(out):
                out[d][d0:d0 + n] = src_data[s][s0:s0 + n]
    return out


def targeted_mask(transfer: Transfer, src: CacheLayout, dst: CacheLayout, *, prefix: bool = False) -> list[np.ndarray]:
    """Per destination tensor, True where a push writes."""
    ones = [np.ones(src.nbytes, dtype=np.uint8) for _ in range(src.num_tensors)]
    zeros = [np.zeros(dst.nbytes, dtype=np.uint8) for _ in range(dst.num_tensors)]
    return [m.astype(bool) for m in expected_destination(ones, zeros, transfer, src, dst, prefix=prefix)]


# ------------------------------------------------------------------------------------------------ comparisons


def _hex(a: np.ndarray, start: int, n: int = 16) -> str:
    return a[start:start + n].tobytes().hex(" ")


def diff(expected: Sequence[np.ndarray], got: Sequence[np.ndarray], what: str,
         mask: Sequence[np.ndarray] | None = None, *, where: Where = Where.DESTINATION,
         cache: str | None = None) -> list[Difference]:
    """Differences (tensor, first differing offset, expected vs got, count), each named ``what`` in its text and
    placed ``where`` in ``cache``; ``mask`` limits the comparison to the True bytes."""
    if mask is None and len(expected) == len(got):
        if all(e is g for e, g in zip(expected, got, strict=True)):
            return []  # the very arrays (a large cache whose windows matched what was expected)
        if (1 < len(expected) and sum(e.size for e in expected) <= FAST_PATH_BYTES
                and all(e.size == g.size for e, g in zip(expected, got, strict=True))
                and np.array_equal(np.concatenate(expected), np.concatenate(got))):
            return []  # the usual case, in one comparison: every tensor as expected
    out = []
    if len(expected) != len(got):
        out.append(Difference(where, f"{what}: expected {len(expected)} tensors, read {len(got)}", cache, shape=True))
    for i, (e, g) in enumerate(zip(expected, got, strict=False)):
        if e.size != g.size:
            out.append(Difference(where, f"{what} tensor {i}: expected {e.size} bytes, read {g.size}", cache,
                                  shape=True))
            continue
        bad = e != g
        if mask is not None:
            bad &= mask[i]
        idx = np.flatnonzero(bad)
        if idx.size:
            first = int(idx[0])
            out.append(Difference(where, f"{what} tensor {i}: {idx.size} of {e.size} bytes differ, first at offset "
                                         f"{first}: expected {_hex(e, first)} got {_hex(g, first)}", cache))
    return out


#: how a byte outside a partial push's envelope is named
NEITHER = "are neither the previous nor the pushed value"


def outside_envelope(before: Sequence[np.ndarray], full: Sequence[np.ndarray], got: Sequence[np.ndarray],
                     what: str, cache: str | None = None) -> list[Difference]:
    """Bytes that are neither their previous value nor what the complete push writes (a partial push is fine,
    a corrupted byte is not)."""
    out = []
    for i, (b, f, g) in enumerate(zip(before, full, got, strict=False)):
        if g.size != b.size:
            out.append(Difference(Where.ENVELOPE, f"{what} tensor {i}: read {g.size} bytes, expected {b.size}", cache,
                                  shape=True))
            continue
        idx = np.flatnonzero((g != b) & (g != f))
        if idx.size:
            first = int(idx[0])
            out.append(Difference(Where.ENVELOPE, f"{what} tensor {i}: {idx.size} bytes {NEITHER}, first at offset "
                                  f"{first}: previous {_hex(b, first)} / pushed {_hex(f, first)} got {_hex(g, first)}",
                                  cache))
    return out

"""A small HyperLogLog sketch of user keys: distinct users that merge across buckets."""

from __future__ import annotations

import hashlib
import math
import zlib
from collections.abc import Iterable
from functools import lru_cache

import numpy as np

SKETCH_BITS = 12
SKETCH_REGISTERS = 1 << SKETCH_BITS
_REST_BITS = 64 - SKETCH_BITS
HASHED_KEYS = 1 << 16  # keys whose register a process remembers (~10 MB)


@lru_cache(maxsize=HASHED_KEYS)
def _register(key: str) -> tuple[int, int]:
    """A key's register and rank (a seal sketches the same users once per breakdown value
    of every dimension, and for the totals: each key is hashed once)."""
    h = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")
    rest = h & ((1 << _REST_BITS) - 1)
    return h >> _REST_BITS, _REST_BITS - rest.bit_length() + 1


# How a sketch is stored. Sealed breakdowns hold one sketch per value per bucket and a
# 12-month dashboard reads thousands: inflating zlib (12-30 us each) was most of its time.
# A sparse sketch is stored as its set registers, 3 bytes each (b"S" + (index u16, rank
# u8)...); a dense one as its registers (b"R" + 4,096 bytes); rows written before this
# are zlib streams (their first byte is 0x78; never "S" or "R"), read as they were.
SPARSE, DENSE = b"S", b"R"
PAIR = np.dtype([("index", "<u2"), ("rank", "u1")])
SPARSE_MAX = SKETCH_REGISTERS // PAIR.itemsize  # more set registers: dense is smaller


def _encoded(registers: np.ndarray) -> bytes:
    """The stored bytes of these registers (sparse or dense, whichever is smaller)."""
    (index,) = np.nonzero(registers)
    if len(index) > SPARSE_MAX:
        return DENSE + registers.tobytes()
    pairs = np.empty(len(index), dtype=PAIR)
    pairs["index"], pairs["rank"] = index, registers[index]
    return SPARSE + pairs.tobytes()


def sketch_of(keys: Iterable[str]) -> bytes:
    """Return the stored HyperLogLog registers of a set of user keys."""
    registers = bytearray(SKETCH_REGISTERS)  # a bytearray: faster per key than numpy
    for key in keys:
        index, rank = _register(key)
        if rank > registers[index]:
            registers[index] = rank
    return _encoded(np.frombuffer(registers, dtype=np.uint8))


# A sketch as stored (see _encoded; b"" for none) or as merged in memory (the registers
# themselves: a read that only estimates never encodes them).
Sketch = bytes | np.ndarray


def _registers(sketch: Sketch) -> np.ndarray | None:
    if isinstance(sketch, np.ndarray):
        return sketch
    if not sketch:
        return None
    kind = sketch[:1]
    if kind == DENSE:
        return np.frombuffer(sketch, dtype=np.uint8, offset=1)
    if kind == SPARSE:
        pairs = np.frombuffer(sketch, dtype=PAIR, offset=1)
        registers = np.zeros(SKETCH_REGISTERS, dtype=np.uint8)
        registers[pairs["index"]] = pairs["rank"]
        return registers
    return np.frombuffer(zlib.decompress(sketch, bufsize=SKETCH_REGISTERS), dtype=np.uint8)


def sketch_union(sketches: Iterable[Sketch]) -> Sketch:
    """The registers of the union of the sets behind the given sketches (b"" for none)."""
    merged: np.ndarray | None = None
    sparse: list[bytes] = []
    for sketch in sketches:
        if not isinstance(sketch, np.ndarray) and sketch[:1] == SPARSE:
            sparse.append(sketch[1:])  # added together below: one numpy call, not one each
            continue
        registers = _registers(sketch)
        if registers is None:
            continue
        merged = registers.copy() if merged is None else np.maximum(merged, registers, out=merged)
    if sparse:
        pairs = np.frombuffer(b"".join(sparse), dtype=PAIR)
        if merged is None:
            merged = np.zeros(SKETCH_REGISTERS, dtype=np.uint8)
        np.maximum.at(merged, pairs["index"], pairs["rank"])
    return merged if merged is not None else b""


def sketch_bytes(sketch: Sketch) -> bytes:
    """A sketch as stored (see _encoded)."""
    return _encoded(sketch) if isinstance(sketch, np.ndarray) else sketch


def sketch_merge(sketches: Iterable[Sketch]) -> bytes:
    """Return the stored sketch of the union of the sets behind the given sketches."""
    return sketch_bytes(sketch_union(sketches))


def sketch_estimate(sketch: Sketch) -> int:
    """Return the estimated number of distinct keys in a sketch."""
    registers = _registers(sketch)
    if registers is None:
        return 0
    m = len(registers)
    estimate = 0.7213 / (1 + 1.079 / m) * m * m / float(np.exp2(-registers.astype(float)).sum())
    zeros = int(np.count_nonzero(registers == 0))
    if estimate <= 2.5 * m and zeros:
        estimate = m * math.log(m / zeros)  # small-range correction (linear counting)
    return round(estimate)

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


def sketch_of(keys: Iterable[str]) -> bytes:
    """Return the compressed HyperLogLog registers of a set of user keys."""
    registers = bytearray(SKETCH_REGISTERS)
    for key in keys:
        index, rank = _register(key)
        if rank > registers[index]:
            registers[index] = rank
    return zlib.compress(bytes(registers))


def _union(sketches: Iterable[bytes]) -> np.ndarray | None:
    """The registers of the union of the sets behind the given sketches (None: none)."""
    merged: np.ndarray | None = None
    for sketch in sketches:
        if not sketch:
            continue
        registers = np.frombuffer(zlib.decompress(sketch), dtype=np.uint8)
        merged = registers.copy() if merged is None else np.maximum(merged, registers, out=merged)
    return merged


def sketch_merge(sketches: Iterable[bytes]) -> bytes:
    """Return the sketch of the union of the sets behind the given sketches."""
    merged = _union(sketches)
    return zlib.compress(merged.tobytes()) if merged is not None else b""


def sketch_estimate(sketch: bytes) -> int:
    """Return the estimated number of distinct keys in a sketch."""
    if not sketch:
        return 0
    return _estimate(np.frombuffer(zlib.decompress(sketch), dtype=np.uint8))


def union_estimate(sketches: Iterable[bytes]) -> int:
    """Return the estimated number of distinct keys of the union of the sketches' sets
    (`sketch_estimate(sketch_merge(...))` without compressing the merged registers)."""
    merged = _union(sketches)
    return _estimate(merged) if merged is not None else 0


def _estimate(registers: np.ndarray) -> int:
    m = len(registers)
    estimate = 0.7213 / (1 + 1.079 / m) * m * m / float(np.exp2(-registers.astype(float)).sum())
    zeros = int(np.count_nonzero(registers == 0))
    if estimate <= 2.5 * m and zeros:
        estimate = m * math.log(m / zeros)  # small-range correction (linear counting)
    return round(estimate)

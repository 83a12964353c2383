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


# A sketch as stored (zlib-compressed registers, b"" for none) or as merged in memory
# (the registers themselves: a read that only estimates never compresses them).
Sketch = bytes | np.ndarray


def _registers(sketch: Sketch) -> np.ndarray | None:
    if isinstance(sketch, np.ndarray):
        return sketch
    return np.frombuffer(zlib.decompress(sketch), dtype=np.uint8) if sketch else None


def sketch_union(sketches: Iterable[Sketch]) -> Sketch:
    """The registers of the union of the sets behind the given sketches (b"" for none)."""
    merged: np.ndarray | None = None
    for sketch in sketches:
        registers = _registers(sketch)
        if registers is None:
            continue
        merged = registers.copy() if merged is None else np.maximum(merged, registers, out=merged)
    return merged if merged is not None else b""


def sketch_bytes(sketch: Sketch) -> bytes:
    """A sketch as stored (compressed registers)."""
    return zlib.compress(sketch.tobytes()) if isinstance(sketch, np.ndarray) else sketch


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

"""The read side's web vitals: sketches kept as the numpy arrays they are stored as.

A read of bucket_vitals (the Performance page, its API and CSV) never turns a stored
sketch into a Counter: `packed_unpack` views the blob's slots (int16) and counts (uint32)
as arrays without copying them, `packed_merge` adds up any number of them at once and
`packed_quantile` reads a rank from their running sum, so a month of days costs a few
numpy calls per metric whatever the number of slots: the rank of `vitals.exact_quantile`,
read as its slot's value, within ALPHA of the exact quantile.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sessions_app.domain.aggregates.vitals import ZERO, Cell, slot_value

Slots = npt.NDArray[np.int16]
Counts = npt.NDArray[np.int64] | npt.NDArray[np.uint32]


@dataclass(frozen=True)
class Packed:
    """A sketch as arrays: its slots ascending (each once) and their counts."""

    slots: Slots
    counts: Counts


EMPTY = Packed(np.zeros(0, np.int16), np.zeros(0, np.int64))


def packed_unpack(blob: bytes | None) -> Packed:
    """A stored sketch (vitals.sketch_pack: sorted int16 slots, then uint32 counts)."""
    if not blob:
        return EMPTY
    n = len(blob) // 6
    return Packed(np.frombuffer(blob, np.int16, n), np.frombuffer(blob, np.uint32, n, 2 * n))


def packed_of(sketch: Mapping[int, int]) -> Packed:
    """A Counter-form sketch (a live hour's) as arrays."""
    kept = sorted((i, n) for i, n in sketch.items() if n)
    return Packed(
        np.array([i for i, _ in kept], np.int16), np.array([n for _, n in kept], np.int64)
    )


def packed_merge(parts: list[Packed]) -> Packed:
    """The sum of these sketches (slot by slot: a bincount over the slots' range, the
    slot of 0 apart, so slots stay ascending)."""
    if len(parts) == 1:
        return parts[0]
    slots = np.concatenate([p.slots for p in parts]).astype(np.int32)
    if not len(slots):
        return EMPTY
    zero = slots == ZERO  # the slot of 0 (far below the others): counted apart
    counts = np.concatenate([p.counts for p in parts])
    low = int(slots[~zero].min()) if not zero.all() else 0
    sums = np.bincount(slots[~zero] - low, weights=counts[~zero])
    kept = np.flatnonzero(sums)
    merged = Packed((kept + low).astype(np.int16), sums[kept].astype(np.int64))
    if not zero.any():
        return merged
    zeros = np.array([int(counts[zero].sum())], np.int64)
    return Packed(
        np.concatenate([np.array([ZERO], np.int16), merged.slots]),
        np.concatenate([zeros, merged.counts]),
    )


def packed_quantile(sketch: Packed | None, q: float) -> float | None:
    """The value of rank floor(q · (n - 1)) among the sketch's n values (within ALPHA);
    None when it is empty."""
    if sketch is None or not len(sketch.counts):
        return None
    running = np.cumsum(sketch.counts, dtype=np.int64)
    rank = math.floor(q * (int(running[-1]) - 1))
    return slot_value(int(sketch.slots[int(np.searchsorted(running, rank, side="right"))]))


@dataclass
class Measured:
    """A read row (or rows merged): as vitals.Cell, its sketches packed."""

    sketches: dict[str, Packed] = field(default_factory=dict)
    ratings: dict[str, list[int]] = field(default_factory=dict)  # [good, ni, poor]
    elements: dict[str, dict[str, list[float]]] = field(default_factory=dict)


def measured_of(cell: Cell) -> Measured:
    """A counted cell (a live hour's) in the read form."""
    return Measured(
        {n: packed_of(s) for n, s in cell.sketches.items()}, cell.ratings, cell.elements
    )


def measured_merge(parts: list[Measured]) -> Measured:
    """Rows added up: sketches merged at once, ratings and elements summed."""
    if len(parts) == 1:
        return parts[0]
    merged = Measured()
    for name in {n for part in parts for n in part.sketches}:
        merged.sketches[name] = packed_merge(
            [p.sketches[name] for p in parts if name in p.sketches]
        )
    for part in parts:
        for name, counts in part.ratings.items():
            held = merged.ratings.setdefault(name, [0, 0, 0])
            for i, n in enumerate(counts):
                held[i] += n
        for name, found in part.elements.items():
            mine = merged.elements.setdefault(name, {})
            for label, (times, poor, total) in found.items():
                into = mine.setdefault(label, [0, 0, 0.0])
                into[0] += times
                into[1] += poor
                into[2] += total
    return merged

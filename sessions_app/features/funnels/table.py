"""Funnel outcomes as columns: what a warm funnel merges, counts and pages over.

A unit's outcome (funnels/results.Unit) is a row: its key, its level, the times of its
chain, its start event's place in Cassandra's order and its start session's dimensions
(codes into a vocabulary per dimension). The ids a drill-down shows — the last matched
event's user and session, the start's session and event id — are the row's detail,
kept apart (a day's details are read only when a page of units needs them).

A range's answer concatenates the outcomes its days settled and the ones evaluated from
edge events, keeps each unit's best row (more steps, then the later start: the same rule
as funnels._better), and counts with numpy: per-step counts, nearest-rank percentiles of
the times between steps, the trend per start day, the breakdown of one dimension.
"""

from __future__ import annotations

import math
import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import Any

import numpy as np
import orjson

from sessions_app.foundation import dimensions
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.ids import UUID_EPOCH_OFFSET

NONE = "(none)"
DAY_MS = 86_400_000
# [unit key, user key of the last matched event, start session id, start event id, last
# session id]
Detail = list[str | None]
_HEAD = struct.Struct(">I")
_MAGIC = struct.Struct(">2sHI")  # b"fs", the format's version, the JSON head's length
_SIGNED = 0x8080808080808080  # Cassandra compares a TimeUUID's last 8 bytes as signed


def split_names() -> list[str]:
    """The dimensions that split funnels (foundation/dimensions.py), in the order of a row's
    dimension codes; a stored summary or part of another list is computed again."""
    return [d.name for d in dimensions.funnel_splits()]


def order_key(event_id: uuid.UUID | str, ts: int) -> tuple[int, int]:
    """A TimeUUID's place in Cassandra's order after its time `ts` (ms): the 100 ns
    intervals past that millisecond, and its last 8 bytes as Cassandra compares them."""
    if isinstance(event_id, uuid.UUID):
        time, tail = event_id.time, event_id.int & 0xFFFF_FFFF_FFFF_FFFF
    else:
        time = int(event_id[15:18] + event_id[9:13] + event_id[0:8], 16)
        tail = int(event_id[19:23] + event_id[24:36], 16)
    return time - UUID_EPOCH_OFFSET - ts * 10_000, tail ^ _SIGNED


def key_hash(keys: Sequence[str]) -> np.ndarray:
    """Each unit key's 128-bit BLAKE2b digest as two uint64 columns: a unit is its digest
    (two of a million keys share one with a chance of about 1e-27; ClickHouse's exact
    count of strings rests on the same 128 bits)."""
    digests = b"".join(blake2b(k.encode(), digest_size=16).digest() for k in keys)
    return np.frombuffer(digests, ">u8").astype(np.uint64).reshape(len(keys), 2)


_COLUMNS = ("ident", "level", "times", "sub", "tail", "dims")  # what Outcomes stores


def pack(columns: dict[str, np.ndarray], head: dict[str, Any]) -> bytes:
    """Integer columns after a JSON head (`head` and how to read them back), each in the
    narrowest unsigned type its range needs above its minimum."""
    specs, blobs = [], []
    for name, values in columns.items():
        low = int(values.min()) if values.size else 0
        span = int(values.max()) - low if values.size else 0
        kind = next(
            t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if span <= np.iinfo(t).max
        )
        specs.append([name, low, np.dtype(kind).str, list(values.shape), values.dtype.str])
        blobs.append((values - values.dtype.type(low)).astype(kind).tobytes())
    text = orjson.dumps({**head, "columns": specs})
    return b"".join((_HEAD.pack(len(text)), text, *blobs))


def unpack(blob: bytes | memoryview) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The head and the columns `pack` wrote."""
    (size,) = _HEAD.unpack_from(blob)
    head = orjson.loads(blob[_HEAD.size : _HEAD.size + size])
    at, found = _HEAD.size + size, {}
    for name, low, kind, shape, dtype in head.pop("columns"):
        count, native = math.prod(shape), np.dtype(dtype)
        if not count:
            found[name] = np.zeros(shape, native)
            continue
        stored = np.frombuffer(blob, kind, count, at).reshape(shape)
        at += count * stored.itemsize
        found[name] = stored.astype(native) + native.type(low)
    return head, found


@dataclass
class Outcomes:
    """Rows of unit outcomes (one per unit once `best` has run): its key's digest, level,
    chain times (ms; past the level, the first step's), its start's place after the
    start time, its start session's dimension codes."""

    steps: int
    ident: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.uint64))
    level: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    times: np.ndarray = field(default_factory=lambda: np.zeros((0, 1), np.int64))
    sub: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tail: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    dims: np.ndarray = field(default_factory=lambda: np.zeros((0, len(split_names())), np.int32))
    vocab: list[list[str]] = field(default_factory=lambda: [[] for _ in split_names()])
    # Where each row's detail is: sources[src[i]]() is a list, pos[i] the row's index in it.
    sources: list[Callable[[], list[Detail]]] = field(default_factory=list)
    src: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    pos: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __post_init__(self) -> None:
        if not len(self.level):
            self.times = self.times.reshape(0, self.steps)

    def __len__(self) -> int:
        return len(self.level)

    @classmethod
    def from_units(
        cls, units: Sequence[Any], sessions: dict[str, list[str | None]], steps: int
    ) -> Outcomes:
        """Rows of evaluated units (funnels.Unit), their start session's dimensions from
        `sessions` (session id -> values in split_names' order)."""
        n = len(units)
        vocab: list[dict[str, int]] = [{} for _ in split_names()]
        times, subs, tails, dims, details = [], [], [], [], []
        blank = [None] * len(vocab)
        for unit in units:
            chain = unit.chain
            at = [e[2] for e in chain]
            times.append(at + at[:1] * (steps - len(at)))
            sub, tail = order_key(chain[0][3], at[0])
            first_id = str(chain[0][3])
            subs.append(sub)
            tails.append(tail)
            values = sessions.get(chain[0][1]) or blank
            dims.append(
                [vocab[d].setdefault(v or NONE, len(vocab[d])) for d, v in enumerate(values)]
            )
            details.append([unit.key, chain[-1][0], chain[0][1], first_id, chain[-1][1]])
        if not n:
            return cls(steps)
        return cls(
            steps=steps,
            ident=key_hash([u.key for u in units]),
            level=np.fromiter((u.level for u in units), np.uint8, count=n),
            times=np.array(times, np.int64),
            sub=np.array(subs, np.int64),
            tail=np.array(tails, np.uint64),
            dims=np.array(dims, np.int32),
            vocab=[list(v) for v in vocab],
            sources=[lambda: details],
            src=np.zeros(n, np.int32),
            pos=np.arange(n, dtype=np.int64),
        )

    def encode(self) -> bytes:
        """The rows as stored (details apart: `details`)."""
        columns = {name: getattr(self, name) for name in _COLUMNS}
        return pack(columns, {"n": len(self), "vocab": self.vocab})

    def details(self) -> list[Detail]:
        return [self.detail(i) for i in range(len(self))]

    @classmethod
    def decode(
        cls, blob: bytes | memoryview, steps: int, details: Callable[[], list[Detail]]
    ) -> Outcomes:
        head, found = unpack(blob)
        n = head["n"]
        if not n:
            return cls(steps)
        return cls(
            steps,
            **found,
            vocab=head["vocab"],
            sources=[details],
            src=np.zeros(n, np.int32),
            pos=np.arange(n, dtype=np.int64),
        )

    def detail(self, row: int) -> Detail:
        return self.sources[int(self.src[row])]()[int(self.pos[row])]

    def take(self, rows: np.ndarray) -> Outcomes:
        def pick(values: np.ndarray) -> np.ndarray:
            return np.take(values, rows, axis=0)

        return Outcomes(
            self.steps,
            pick(self.ident),
            pick(self.level),
            pick(self.times),
            pick(self.sub),
            pick(self.tail),
            pick(self.dims),
            self.vocab,
            self.sources,
            pick(self.src),
            pick(self.pos),
        )


def concat(parts: Sequence[Outcomes], steps: int) -> Outcomes:
    """One table of every part's rows, their dimension codes in one vocabulary."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return Outcomes(steps)
    vocab: list[dict[str, int]] = [{} for _ in split_names()]
    dims = []
    for part in parts:
        mapped = np.empty_like(part.dims)
        for d, codes in enumerate(vocab):
            table = np.fromiter((codes.setdefault(v, len(codes)) for v in part.vocab[d]), np.int32)
            mapped[:, d] = table[part.dims[:, d]]
        dims.append(mapped)
    sources: list[Callable[[], list[Detail]]] = []
    src = []
    for part in parts:
        src.append(part.src + len(sources))
        sources.extend(part.sources)
    joined = {
        name: np.concatenate([getattr(p, name) for p in parts])
        for name in ("ident", "level", "times", "sub", "tail", "pos")
    }
    return Outcomes(
        steps=steps,
        **joined,
        dims=np.concatenate(dims),
        vocab=[list(codes) for codes in vocab],
        sources=sources,
        src=np.concatenate(src),
    )


def best(table: Outcomes) -> Outcomes:
    """Each unit's best row: more steps, then the later start (time, then event id)."""
    if not len(table):
        return table
    # Level and start time in one number (a start is < 2^43 ms after 1970); rows grouped
    # by the first half of the digest, each group's highest rank kept. The full order
    # only where that is ambiguous: the second halves differ, or two rows tie.
    rank = table.level.astype(np.int64) << 43 | table.times[:, 0]
    order = np.argsort(table.ident[:, 0], kind="stable")
    grouped = table.ident[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:, 0] != grouped[:-1, 0]])
    ranks = rank[order]
    top = np.repeat(np.maximum.reduceat(ranks, starts), np.diff(np.r_[starts, len(order)]))
    kept = order[ranks == top]
    mixed = grouped[1:, 1] != grouped[:-1, 1]
    if len(kept) == len(starts) and not mixed[grouped[1:, 0] == grouped[:-1, 0]].any():
        return table.take(kept)
    ranked = np.lexsort((table.tail, table.sub, rank, table.ident[:, 1], table.ident[:, 0]))
    grouped = table.ident[ranked]
    last = np.ones(len(ranked), bool)
    last[:-1] = (grouped[1:] != grouped[:-1]).any(axis=1)
    return table.take(ranked[last])


def newest_first(table: Outcomes, rows: np.ndarray) -> np.ndarray:
    """These rows ordered by their start, the latest first."""
    ranked = np.lexsort((table.tail[rows], table.sub[rows], table.times[rows, 0]))
    return rows[ranked[::-1]]


def percentile_s(values: np.ndarray, q: float) -> float | None:
    """Nearest-rank percentile of milliseconds, in seconds."""
    if not len(values):
        return None
    rank = max(1, math.ceil(len(values) * q))
    return int(np.partition(values, rank - 1)[rank - 1]) / 1000


def step_counts(table: Outcomes) -> list[int]:
    return [int((table.level > i).sum()) for i in range(table.steps)]


def step_gaps(table: Outcomes, step: int) -> np.ndarray:
    """Milliseconds from step `step - 1` to `step` (0-based) of the units that reached it."""
    reached = table.level > step
    return table.times[reached, step] - table.times[reached, step - 1]


def trend(table: Outcomes) -> list[tuple[str, int, int]]:
    """(start day, units started, units converted) per day, in order."""
    if not len(table):
        return []
    days = table.times[:, 0] // DAY_MS
    first = int(days.min())
    entered = np.bincount(days - first)
    converted = np.bincount(days - first, weights=table.level == table.steps)
    return [
        (
            timebuckets.from_epoch_ms((first + i) * DAY_MS).date().isoformat(),
            int(n),
            int(converted[i]),
        )
        for i, n in enumerate(entered.tolist())
        if n
    ]


def breakdown_counts(table: Outcomes, dimension: int) -> dict[str, list[int]]:
    """Per value of the start session's dimension, the units reaching each step."""
    codes = table.dims[:, dimension] if len(table) else np.zeros(0, np.int32)
    size = len(table.vocab[dimension])
    per_step = [np.bincount(codes[table.level > i], minlength=size) for i in range(table.steps)]
    return {
        value: [int(c[code]) for c in per_step]
        for code, value in enumerate(table.vocab[dimension])
        if per_step[0][code]
    }


@dataclass
class DaySummary:
    """A whole day's funnel summary (funnels.day_summary). The units the day settled
    alone, as outcomes; the open groups (a unit's events, of one session with a session
    window) that may reach into a neighbouring day, with their events and, for those
    that reached a step, their outcome from this day's events alone (`provisional`; row
    i is group provisional_group[i]'s); the dimensions of the open groups' sessions.
    A stored summary parses a group's events only when asked (`events`)."""

    settled: Outcomes
    groups: list[tuple[str, str]]  # [unit key, session id or ""]
    provisional: Outcomes
    provisional_group: list[int]
    dims: dict[str, list[str | None]]
    found: list[list[Any]] | None = None  # each group's events, in order
    stored: memoryview | None = None  # else: their JSON, one after the other
    bounds: list[int] = field(default_factory=list)  # where each group's JSON ends

    def events(self, group: int) -> list[Any]:
        if self.found is not None:
            return self.found[group]
        assert self.stored is not None
        begin = self.bounds[group - 1] if group else 0
        found: list[Any] = orjson.loads(self.stored[begin : self.bounds[group]])
        return found

    def encode(self, version: int) -> bytes:
        found = [orjson.dumps(self.events(i)) for i in range(len(self.groups))]
        head = orjson.dumps(
            {
                "groups": self.groups,
                "dims": self.dims,
                "provisional": self.provisional_group,
                "dimensions": split_names(),
                "bounds": np.cumsum([len(f) for f in found]).tolist(),
            }
        )
        settled, provisional = self.settled.encode(), self.provisional.encode()
        return b"".join(
            (
                _MAGIC.pack(b"fs", version, len(head)),
                head,
                _HEAD.pack(len(settled)),
                settled,
                _HEAD.pack(len(provisional)),
                provisional,
                *found,
            )
        )

    def details(self) -> list[list[Detail]]:
        return [self.settled.details(), self.provisional.details()]

    @classmethod
    def decode(
        cls, blob: bytes, version: int, steps: int, details: Callable[[], list[list[Detail]]]
    ) -> DaySummary | None:
        """The stored summary, or None if another format wrote it."""
        view = memoryview(blob)
        if len(view) < _MAGIC.size:
            return None
        magic, stored, size = _MAGIC.unpack_from(view)
        if magic != b"fs" or stored != version:
            return None
        at = _MAGIC.size
        head = orjson.loads(view[at : at + size])
        if head.get("dimensions") != split_names():
            return None  # split by other dimensions
        at += size
        tables = []
        for loader in (lambda: details()[0], lambda: details()[1]):
            (length,) = _HEAD.unpack_from(view, at)
            at += _HEAD.size
            tables.append(Outcomes.decode(view[at : at + length], steps, loader))
            at += length
        return cls(
            tables[0],
            [tuple(g) for g in head["groups"]],
            tables[1],
            head["provisional"],
            head["dims"],
            stored=view[at:],
            bounds=head["bounds"],
        )

"""A funnel's per-day partial result: the day's events that match any of its steps.

A day's part is computed once from the day's raw rows (every hour and shard of
site_events_by_bucket) and, when the day is sealed, cached in funnel_days under the
definition's digest and the day's BucketState version. Days the result needs that are
not cached are scanned inline (a few) or fanned out as Celery tasks (`funnel_day`, on the
analysis queue: features/funnels/queue.py), so more workers finish a cold funnel sooner.
A part is a list of matching events — user, session, time, event id, the steps it
matches — plus the dimensions of their sessions; the funnel itself is evaluated over the
concatenated parts (features/funnels/results.py), which is what keeps a conversion window that
crosses a day's edge exact.
"""

from __future__ import annotations

import gc
import struct
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np
import orjson
from django.conf import settings

from sessions_app.domain.aggregates.seal import aggregate_ttl
from sessions_app.domain.aggregates.sources import site_bucket_funnel_rows
from sessions_app.domain.ledger import policies
from sessions_app.features.funnels.spec import Funnel
from sessions_app.features.funnels.table import DaySummary, pack, split_names, unpack
from sessions_app.foundation import dimensions
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import cassandra_order, uuid_time
from sessions_app.foundation.core.timebuckets import DRIVER_EPOCH, ONE_MS, driver_ms
from sessions_app.foundation.models import BucketState, Site
from sessions_app.foundation.tables import funnel_days, site_sessions

HOURS_AT_ONCE = 6  # hours of a day scanned concurrently
_PART = struct.Struct(">2sH")  # b"fp", the format's version
PART_FORMAT = 8  # what a stored part's blob holds (older ones are scanned again)

# [user key, session id, ts (ms), event id, step mask] (the event id a UUID when scanned,
# its text when read back: str() it); a part holds them in Cassandra's
# order (time, then event id), so a range's parts, day after day, are one ordered stream.
Match = list[Any]


@dataclass
class DayPart:
    """One day's matching events and the dimensions of their sessions."""

    day: datetime
    events: list[Match] = field(default_factory=list)
    sessions: dict[str, list[str | None]] = field(default_factory=dict)
    scanned: int = 0
    summary: DaySummary | None = None  # funnels.day_summary of the whole day
    # Each session's first and last event of the day (all of its events, not only the
    # matching ones): whether it may run across midnight.
    extents: dict[str, list[int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        """The events as columns: user and session as indexes into their lists, the
        event ids' 16 bytes (a day's part is a few hundred KB, not MB)."""
        users: dict[str, int] = {}
        sessions: dict[str, int] = {}
        columns: dict[str, np.ndarray] = {
            "user": np.array([users.setdefault(e[0], len(users)) for e in self.events], np.int64),
            "session": np.array(
                [sessions.setdefault(e[1], len(sessions)) for e in self.events], np.int64
            ),
            "ts": np.array([e[2] for e in self.events], np.int64),
            "mask": np.array([e[4] for e in self.events], np.int64),
            "ids": np.frombuffer(b"".join(_id_bytes(e[3]) for e in self.events), np.uint8).reshape(
                len(self.events), 16
            ),
        }
        head = {
            "users": list(users),
            "sessions": list(sessions),
            "dims": self.sessions,
            "dimensions": split_names(),
        }
        return _PART.pack(b"fp", PART_FORMAT) + pack(columns, head)

    @classmethod
    def decode(cls, day: datetime, blob: bytes, scanned: int) -> DayPart | None:
        """The stored part, or None if it was written in another format (scan again)."""
        if blob[:2] != b"fp" or _PART.unpack_from(blob)[1] != PART_FORMAT:
            return None
        head, columns = unpack(memoryview(blob)[_PART.size :])
        if head.get("dimensions") != split_names():
            return None  # its sessions' dimensions are another list
        users, sessions, ids = head["users"], head["sessions"], columns["ids"].tobytes()
        events = [
            [users[u], sessions[s], t, uuid.UUID(bytes=ids[16 * i : 16 * i + 16]), m]
            for i, (u, s, t, m) in enumerate(
                zip(
                    columns["user"].tolist(),
                    columns["session"].tolist(),
                    columns["ts"].tolist(),
                    columns["mask"].tolist(),
                    strict=True,
                )
            )
        ]
        return cls(day, events, head["dims"], scanned)


def _id_bytes(value: uuid.UUID | str) -> bytes:
    return value.bytes if isinstance(value, uuid.UUID) else uuid.UUID(value).bytes


def day_scan(*, site: Site, funnel: Funnel, day: datetime) -> DayPart:
    """Read every raw row of the day (bots left out) and keep those matching a step."""
    day = timebuckets.floor(day, timebuckets.Width.DAY)
    hours = timebuckets.buckets_between(day, timebuckets.next_start(day, "day"), "hour")
    used = dict(
        BucketState.objects.filter(site=site, granularity="hour", bucket__in=hours).values_list(
            "bucket", "shards"
        )
    )
    shards = {h: max(site.event_shards, used.get(h, 1)) for h in hours}
    part = DayPart(day)
    spans: dict[Any, list[Any]] = {}
    with ThreadPoolExecutor(HOURS_AT_ONCE, thread_name_prefix="funnel-scan") as pool:
        whole_day = pool.submit(_day_dimensions, site.id, day)
        scan = partial(
            _hour_scan,
            site_id=site.id,
            shards=shards,
            mask=funnel.masker(),
            track=funnel.session_window,
        )
        for found, scanned, hour_spans in pool.map(scan, hours):
            part.events.extend(found)
            part.scanned += scanned
            for sid, (first, last) in hour_spans.items():
                held = spans.setdefault(sid, [first, last])
                held[0], held[1] = min(held[0], first), max(held[1], last)
    matched = {e[1] for e in part.events}
    part.extents = {
        str(sid): [driver_ms(first), driver_ms(last)]
        for sid, (first, last) in spans.items()
        if str(sid) in matched
    }
    part.sessions = _dimensions(site.id, day, sorted(matched), whole_day.result())
    return part


def _hour_scan(
    hour: datetime,
    *,
    site_id: uuid.UUID,
    shards: dict[datetime, int],
    mask: Callable[[dict[str, Any]], int],
    track: bool,
) -> tuple[list[Match], int, dict[Any, list[Any]]]:
    """The hour's rows matching a step, the rows read, and (if `track`: the session
    window) each session's first and last driver time."""
    found: list[Match] = []
    spans: dict[Any, list[Any]] = {}  # session -> [first, last] driver times
    names: dict[uuid.UUID, str] = {}  # session -> its text
    scanned = 0
    # One shard's rows come in event-id order, which is (time, event id) order while
    # their times never decrease (an event id's time is its ts, to the millisecond).
    ordered, previous = shards[hour] == 1, DRIVER_EPOCH
    for row in site_bucket_funnel_rows(site_id=site_id, hour=hour, shards=shards[hour]):
        scanned += 1
        if row["is_bot"]:
            continue
        at, sid = row["ts"], row["session_id"]
        if at < previous:
            ordered = False
        previous = at
        if track:
            span = spans.get(sid)
            if span is None:
                spans[sid] = [at, at]
            elif at < span[0]:
                span[0] = at
            elif at > span[1]:
                span[1] = at
        bits = mask(row)
        if bits:
            text = names.get(sid)
            if text is None:
                text = names[sid] = str(sid)
            found.append(
                [row["user_key"], text, (at - DRIVER_EPOCH) // ONE_MS, row["event_id"], bits]
            )
    if not ordered:
        found.sort(key=lambda e: (e[2], cassandra_order(e[3])))
    return found, scanned, spans


def _day_dimensions(site_id: uuid.UUID, day: datetime) -> dict[str, list[str | None]]:
    """The dimensions of every session the day's site_sessions partitions hold (read
    while the day's events are scanned)."""
    db = cassandra_session()
    found: dict[str, list[str | None]] = {}
    whole_day = prepare(site_sessions.funnel_statement(site_sessions.SELECT_DAY_DIMENSIONS))
    columns = [d.column for d in dimensions.funnel_splits()]
    for shard in range(max(1, settings.SESSION_SHARDS)):
        query = whole_day.bind((site_id, day, shard))
        query.fetch_size = 5_000
        for row in db.execute(query):
            found[str(row["session_id"])] = [row[c] for c in columns]
    return found


def _dimensions(
    site_id: uuid.UUID, day: datetime, sessions: list[str], whole_day: dict[str, Any]
) -> dict[str, list[str | None]]:
    """Each session's dimensions that split funnels (foundation/dimensions.py): from the
    day's own site_sessions partitions (`whole_day`), a point read for a session another
    day's partition holds (one that began before midnight)."""
    db = cassandra_session()
    found = {sid: whole_day[sid] for sid in sessions if sid in whole_day}
    following = timebuckets.next_start(day, "day")
    earlier = [  # another day's partition holds them
        s for s in sessions if s not in found and not day <= uuid_time(uuid.UUID(s)) < following
    ]
    statement = prepare(site_sessions.funnel_statement(site_sessions.SELECT_DIMENSIONS))
    columns = [d.column for d in dimensions.funnel_splits()]
    futures = [
        (sid, db.execute_async(statement, site_sessions.row_key(site_id, uuid.UUID(sid))))
        for sid in earlier
    ]
    for sid, future in futures:
        row = future.result().one()
        if row:
            found[sid] = [row[c] for c in columns]
    return found


def cached_parts(
    *,
    site_id: uuid.UUID,
    digest: str,
    days: dict[datetime, int],
    whole: set[datetime],
    steps: int,
) -> dict[datetime, DayPart]:
    """The cached parts of these sealed days ({day: its version}) still valid: for the
    days the range holds `whole`, their summary alone (its details read when a page of
    units needs them); for the others, their events."""
    db = cassandra_session()
    events, summary = prepare(funnel_days.SELECT), prepare(funnel_days.SELECT_SUMMARY)
    futures = {
        day: db.execute_async(summary if day in whole else events, (site_id, day, digest))
        for day in days
    }
    found = {}
    for day, future in futures.items():
        row = future.result().one()
        if not row or row["version"] != days[day]:
            continue
        if day in whole:
            loader = _details_loader(site_id, day, digest)
            body = DaySummary.decode(row["summary"], PART_FORMAT, steps, loader)
            if body is not None:
                found[day] = DayPart(day, scanned=row["scanned"] or 0, summary=body)
        elif row["matches"] is not None:
            part = DayPart.decode(day, row["matches"], row["scanned"] or 0)
            if part is not None:
                found[day] = part
    return found


def _details_loader(
    site_id: uuid.UUID, day: datetime, digest: str
) -> Callable[[], list[list[Any]]]:
    """Read a cached day's unit details once, when first asked for."""
    held: list[list[Any]] = []

    def load() -> list[list[Any]]:
        if not held:
            row = (
                cassandra_session()
                .execute(prepare(funnel_days.SELECT_DETAILS), (site_id, day, digest))
                .one()
            )
            held.append(orjson.loads(row["details"]) if row and row["details"] else [])
        return held[0]

    return load


def part_store(*, site_id: uuid.UUID, digest: str, part: DayPart, version: int) -> Any:
    """Write a day's part; return the write's future, or None if the day's raw rows may
    be gone: the part names users and sessions, and ends with them (the TTL)."""
    assert part.summary is not None
    ttl = policies.derived_ttl_seconds(part.day, ceiling=aggregate_ttl("day"))
    if ttl <= 0:
        return None
    return cassandra_session().execute_async(
        prepare(funnel_days.INSERT, idempotent=True, write=True),
        (
            site_id,
            part.day,
            digest,
            version,
            part.encode(),
            part.summary.encode(PART_FORMAT),
            orjson.dumps(part.summary.details()),
            part.scanned,
            ttl,
        ),
    )


def sealed_versions(site_id: uuid.UUID, days: list[datetime]) -> dict[datetime, int]:
    """The sealed days among these, with their versions."""
    states = BucketState.objects.filter(
        site_id=site_id, granularity="day", bucket__in=days, state=BucketState.SEALED
    ).values_list("bucket", "version")
    return {timebuckets.as_utc(b): v for b, v in states}


def day_compute(
    *,
    site: Site,
    funnel: Funnel,
    digest: str,
    day: datetime,
    summarize: Callable[[Funnel, DayPart], DaySummary],
    writes: list[Any] | None = None,
) -> DayPart:
    """Scan a day; cache it (with its summary) if it is sealed and was sealed when the
    scan began. The write is waited for, or added to `writes` for the caller to wait
    for (it goes on while the next day is scanned)."""
    before = sealed_versions(site.id, [day]).get(day)
    with gc_paused():
        part = day_scan(site=site, funnel=funnel, day=day)
        if before is not None and sealed_versions(site.id, [day]).get(day) == before:
            part.summary = summarize(funnel, part)
            write = part_store(site_id=site.id, digest=digest, part=part, version=before)
            if writes is not None and write is not None:
                writes.append(write)
            elif write is not None:
                write.result()
    return part


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a result's lists are built (they hold no
    cycles; a collection would walk every one of them, again and again)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

"""Goals counted per bucket: conversions, converting sessions and users per goal, in total
and per breakdown value of the converting session (foundation/dimensions.py).

An hour is counted when it seals, only for a site that has goals; the hour a conversion
happened in counts it. Its conversions come from the hour's tally when the tally matched
every goal (domain/aggregates/tally.py: ingest matches each batch's events against the site's
goals then; a seal from raw rows matches them as it tallies), else from one scan of the
hour's raw rows (a goal added or changed since the tallies were written; a live hour).
A converting session's dimension values come from its site_sessions row: the hour's
started sessions the seal read already, a point read for a session that began earlier.
Counts are exact per bucket; a day merges its hours and a month its days (conversions
add up, sessions and users from merged HyperLogLog sketches, ±1.6 %), like the
breakdowns. An erasure reseals the user's hours: the recount leaves them out.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sessions_app.domain.aggregates import tally
from sessions_app.domain.aggregates.breakdowns import NONE, names
from sessions_app.domain.aggregates.sketch import (
    Sketch,
    sketch_bytes,
    sketch_estimate,
    sketch_of,
    sketch_union,
)
from sessions_app.domain.aggregates.sources import Hour, site_bucket_funnel_rows
from sessions_app.domain.aggregates.stored import bucket_overwrite
from sessions_app.domain.goals.defs import Goal
from sessions_app.domain.ledger import policies
from sessions_app.foundation.core.cql import cassandra_session, execute_windowed, prepare
from sessions_app.foundation.core.ids import uuid_time
from sessions_app.foundation.tables import bucket_goals, retention_specs, site_sessions

TOTAL = ("", "")  # the (dimension, value) of a goal's total row
Key = tuple[str, str, str]  # (goal digest, dimension, value)


@dataclass
class GoalCount:
    """One goal's numbers (in total or for one value); the keys only while counting."""

    conversions: int = 0
    sessions: int = 0
    users: int = 0
    sessions_sketch: Sketch = b""  # stored bytes, or registers merged in memory
    users_sketch: Sketch = b""
    # While counting; a total keeps them for the hour's user sets and session marks (not
    # stored, not compared: a stored bucket read back has none).
    session_ids: set[uuid.UUID] = field(default_factory=set, compare=False)
    user_keys: set[str] = field(default_factory=set, compare=False)


Counts = dict[Key, GoalCount]


Converted = dict[tuple[str, uuid.UUID], list[Any]]  # (digest, session): [events, user]


def conversions(rows: Iterable[dict[str, Any]], goals: list[Goal]) -> Converted:
    """The goals' conversions among raw rows (bots left out), per goal and session."""
    found = tally.goal_conversions(rows, goals)
    return {
        (digest, uuid.UUID(sid)): held
        for digest, sessions in found.items()
        for sid, held in sessions.items()
    }


def goals_count(converted: Converted, dimensions_of: Any) -> Counts:
    """Count the goals' conversions per goal, in total and per breakdown value of the
    converting session; `dimensions_of(ids)` returns each converting session's
    {dimension: value}."""
    counted: Counts = defaultdict(GoalCount)
    values = dimensions_of({sid for (_, sid) in converted})
    for (digest, session_id), (n, user) in converted.items():
        dims = values.get(session_id, {})
        for dimension, value in [TOTAL, *((d, dims.get(d) or NONE) for d in names())]:
            entry = counted[digest, dimension, value]
            entry.conversions += n
            entry.session_ids.add(session_id)
            entry.user_keys.add(user)
    for key, entry in counted.items():
        entry.sessions, entry.users = len(entry.session_ids), len(entry.user_keys)
        entry.sessions_sketch = sketch_of(str(s) for s in entry.session_ids)
        entry.users_sketch = sketch_of(entry.user_keys)
        if key[1:] != TOTAL:  # a total's users and sessions stay: the hour's user sets
            entry.session_ids, entry.user_keys = set(), set()  # (`goal_users`), its marks
    return dict(counted)


def goal_users(goals: list[Goal], counts: Counts) -> dict[int, set[str]]:
    """Each goal's converting users in an hour's counts (by goal id; goals sharing a
    definition share them)."""
    found: dict[int, set[str]] = {}
    for goal in goals:
        entry = counts.get((goal.digest, *TOTAL))
        if entry is not None and entry.user_keys:
            found[goal.id] = entry.user_keys
    return found


def hour_goals(source: Hour, goals: list[Goal]) -> Counts:
    """Count one hour of a site for these goals (nothing read without goals): from the
    hour's tally if it is counted already and matched every one of them, else from its
    raw rows."""
    if not goals:
        return {}
    counted, digests = source.tallied(), {g.digest for g in goals}
    if counted is not None and digests <= counted.goals_checked:
        converted = {
            (digest, uuid.UUID(sid)): held
            for digest in digests
            for sid, held in counted.goals.get(digest, {}).items()
        }
    else:
        rows = site_bucket_funnel_rows(
            site_id=source.site_id, hour=source.start, shards=source.shards
        )
        converted = conversions(rows, goals)

    def dimensions_of(wanted: set[uuid.UUID]) -> dict[uuid.UUID, dict[str, str | None]]:
        return session_dimensions(source, wanted)

    return goals_count(converted, dimensions_of)


def session_dimensions(
    source: Hour, wanted: set[uuid.UUID]
) -> dict[uuid.UUID, dict[str, str | None]]:
    """The breakdown values of these sessions: from the hour's started sessions' rows, a
    point read of site_sessions (by its primary key) for each that began earlier."""
    columns = names()
    found: dict[uuid.UUID, dict[str, str | None]] = {}
    if not wanted:
        return found
    for row in source.started:
        if row["session_id"] in wanted:
            found[row["session_id"]] = {n: row[c] for n, c in columns.items()}
    earlier = [sid for sid in wanted if sid not in found]
    statement = prepare(site_sessions.with_dimensions(site_sessions.SELECT_DIMENSIONS))
    db = cassandra_session()
    for offset in range(0, len(earlier), 256):  # at most 256 reads in flight
        futures = [
            (sid, db.execute_async(statement, site_sessions.row_key(source.site_id, sid)))
            for sid in earlier[offset : offset + 256]
        ]
        for sid, future in futures:
            row = future.result().one()
            if row:
                found[sid] = {n: row[c] for n, c in columns.items()}
    return found


def sessions_mark(*, site_id: uuid.UUID, counts: Counts, now: datetime) -> int:
    """Mark each converting session of an hour's counts with the digests of the goals it
    reached (site_sessions.goals: the explorer's `goal` filter); each cell expires with its
    row. Marks only add: a recount (late events, a backfill) adds what is new."""
    reached: dict[uuid.UUID, set[str]] = defaultdict(set)
    for (digest, dimension, value), entry in counts.items():
        if (dimension, value) == TOTAL:
            for session_id in entry.session_ids:
                reached[session_id].add(digest)
    ttl = policies.ttl_seconds(retention_specs.SESSIONS)
    statement = prepare(site_sessions.MARK_GOALS, idempotent=True, write=True)
    work = []
    for session_id, digests in reached.items():
        left = ttl - int((now - uuid_time(session_id)).total_seconds())
        if left > 0:
            work.append((statement, (left, digests, *site_sessions.row_key(site_id, session_id))))
    execute_windowed(work)
    return len(work)


def goals_merge(parts: list[Counts]) -> Counts:
    """Combine the counts of adjacent buckets (a day's hours, a month's days)."""
    if len(parts) == 1:
        return parts[0]
    grouped: dict[Key, list[GoalCount]] = defaultdict(list)
    for part in parts:
        for key, entry in part.items():
            grouped[key].append(entry)
    return {key: count_merge(entries) for key, entries in grouped.items()}


def count_merge(entries: list[GoalCount]) -> GoalCount:
    """One goal's numbers over several buckets: conversions add up, sessions and users are
    estimated from the merged sketches (exact for one bucket; kept as registers, compressed
    only when written, as breakdowns.entries_total does)."""
    if len(entries) == 1:
        return entries[0]
    merged = GoalCount(
        conversions=sum(e.conversions for e in entries),
        sessions_sketch=sketch_union(e.sessions_sketch for e in entries),
        users_sketch=sketch_union(e.users_sketch for e in entries),
    )
    merged.sessions = sketch_estimate(merged.sessions_sketch)
    merged.users = sketch_estimate(merged.users_sketch)
    return merged


def goals_write(
    *,
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    value: Counts,
    ttl: int,
    now: datetime,
) -> None:
    """Overwrite a bucket's goal rows (a goal, dimension or value it no longer has goes
    too); an hour's also marks its converting sessions (the explorer's goal filter)."""
    bucket_overwrite(
        delete=bucket_goals.DELETE_BUCKET,
        key=(site_id, granularity, bucket),
        insert=bucket_goals.UPSERT,
        rows=((site_id, granularity, bucket, *key, *_stored(e)) for key, e in value.items()),
        now=now,
        ttl=ttl,
    )
    if granularity == "hour":
        sessions_mark(site_id=site_id, counts=value, now=now)


def _stored(e: GoalCount) -> tuple[int, int, int, bytes, bytes]:
    return (
        e.conversions,
        e.sessions,
        e.users,
        sketch_bytes(e.sessions_sketch),
        sketch_bytes(e.users_sketch),
    )


def _count_of(row: dict[str, Any]) -> GoalCount:
    """A stored row's count (the columns a slimmer read left out: zero, no sketch)."""
    return GoalCount(
        conversions=row["conversions"] or 0,
        sessions=row.get("sessions") or 0,
        users=row.get("users") or 0,
        sessions_sketch=row.get("sessions_sketch") or b"",
        users_sketch=row.get("users_sketch") or b"",
    )


def goals_read(*, site_id: uuid.UUID, buckets: list[tuple[str, datetime]]) -> list[Counts]:
    """The stored counts of these (resolution, bucket)s that have rows, whole partitions."""
    statement = prepare(bucket_goals.SELECT_BUCKET)

    def read(key: tuple[str, datetime]) -> Counts:
        query = statement.bind((site_id, *key))
        query.fetch_size = 5_000
        rows = cassandra_session().execute(query)
        return {(r["goal"], r["dimension"], r["value"]): _count_of(r) for r in rows}

    with ThreadPoolExecutor(8, thread_name_prefix="goals") as pool:
        return [found for found in pool.map(read, buckets) if found]


# What a read of the goals' rows needs besides conversions: its statement.
SLIM_READS = {
    ("visits", "visitors"): bucket_goals.SELECT_VALUE,
    ("visitors",): bucket_goals.SELECT_VALUE_USERS,
    (): bucket_goals.SELECT_VALUE_CONVERSIONS,
}


def goal_values_read(
    *,
    site_id: uuid.UUID,
    reads: list[tuple[list[tuple[str, datetime]], tuple[str, ...]]],
    digests: list[str],
    dimension: str = "",
    value: str = "",
) -> list[list[Counts]]:
    """For each read (buckets, the `distinct` counts whose sketches it merges: a key of
    SLIM_READS), the stored rows of these goals for one dimension value (or their totals)
    in its buckets: one row per goal and bucket. Every read's queries are sent before
    any answer is awaited (one concurrent round)."""
    db = cassandra_session()
    pending = []
    for buckets, distinct in reads:
        statement = prepare(SLIM_READS[distinct])
        pending.append(
            [
                db.execute_async(statement, (site_id, *key, digests, dimension, value))
                for key in buckets
            ]
        )
    return [
        [
            {(r["goal"], r["dimension"], r["value"]): _count_of(r) for r in future.result()}
            for future in futures
        ]
        for futures in pending
    ]

"""Paths: the page-view sequences of sessions, counted when an hour seals and merged up.

A path is up to MAX_STEPS consecutive page views of one session, in the order of their
event ids (session_events' order: time, then id); a leading ENTRANCE marks a path that
begins where its session did. Each human page view counts, in its own hour, every path
that ends at it: the page alone, the page before it and it, ... up to MAX_STEPS pages,
and the ENTRANCE-led one while the session's first page views reach back to its start.
So for any path q a bucket holds how often visitors followed q with q's last page
viewed in the bucket, and buckets add up: days merge hours, months days. Transitions
are the two-page paths; entrances are also counted by the session's source.

The hour's page views come from the seal's tally (or its raw rows); the ones before
the hour from session_events, for the sessions that were running when it began (the
last MAX_STEPS + 1 page views, newest first). An hour's counts therefore never depend
on another bucket's seal. A page view that lands in a session before page views
already counted in later hours reopens those hours, so they reseal with it
(aggregates/states.plan_buckets_touch, ingest/apply._reopen_late).

Stored in bucket_paths, a row per (side, anchor): the paths from a page and to it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from sessions_app.aggregates.stored import bucket_overwrite
from sessions_app.aggregates.tally import page_path
from sessions_app.core import timebuckets
from sessions_app.core.cql import cassandra_session, prepare
from sessions_app.core.ids import cassandra_order, time_uuid_bound
from sessions_app.tables import bucket_paths, session_events, site_sessions

ENTRANCE = "(entrance)"
NONE = "(none)"  # a session without a known source
MAX_STEPS = 5
FROM, TO = "from", "to"
TOP_ANCHORS = 1_000  # pages a bucket keeps rows for (by views; ENTRANCE always)
TOP_GRAMS = 200  # paths a row keeps; the rest are counted in `dropped`
EARLIER_ROWS = 5_000  # events read back per session for the page views before an hour

Gram = tuple[str, ...]


@dataclass
class PathCounts:
    """Every path counted in some page views, and entrances by (page, source)."""

    grams: Counter[Gram] = field(default_factory=Counter)
    sources: Counter[tuple[str, str]] = field(default_factory=Counter)


@dataclass
class Row:
    """One stored row: the paths from (or to) one anchor in a bucket."""

    grams: dict[Gram, int] = field(default_factory=dict)
    sources: dict[str, int] = field(default_factory=dict)
    dropped: int = 0


Stored = dict[tuple[str, str], Row]  # (side, anchor) -> row


def session_count(counts: PathCounts, before: list[str], pages: Iterable[str], source: str) -> None:
    """Count the paths ending at each of `pages` (one session's, in order), after the
    pages `before` them (ENTRANCE first when those reach back to the session's start)."""
    trail = list(before)
    for page in pages:
        if trail == [ENTRANCE]:
            counts.sources[page, source] += 1
        window = [*trail[-MAX_STEPS:], page]
        steps = 0
        for k in range(1, len(window) + 1):
            if window[-k] != ENTRANCE:
                steps += 1
                if steps > MAX_STEPS:
                    break
            counts.grams[tuple(window[-k:])] += 1
        trail = [*trail[-MAX_STEPS:], page]


def hour_count(
    *,
    site_id: uuid.UUID,
    hour: datetime,
    views: dict[uuid.UUID, list[tuple[uuid.UUID, str]]],
    started: Iterable[dict[str, Any]],
) -> PathCounts:
    """Count an hour's paths from its human page views ({session: [(event id, path)]}) and
    the site_sessions rows of the sessions that started in it (their start and source)."""
    hour = timebuckets.floor(hour, timebuckets.Width.HOUR)
    rows = {row["session_id"]: row for row in started}
    earlier = [sid for sid in views if not _began_in(rows.get(sid), hour)]
    before = _pages_before(earlier, hour)
    entered = [
        sid for sid in views if before.get(sid, [ENTRANCE]) == [ENTRANCE] and sid not in rows
    ]
    sources = {sid: row["source"] for sid, row in rows.items()}
    sources.update(_sources(site_id, entered))
    counts = PathCounts()
    for sid, seen in views.items():
        pages = [path for _, path in sorted(seen, key=lambda v: cassandra_order(v[0]))]
        session_count(counts, before.get(sid, [ENTRANCE]), pages, sources.get(sid) or NONE)
    return counts


def _began_in(row: dict[str, Any] | None, hour: datetime) -> bool:
    """Whether a session certainly has no event before the hour (it started in it)."""
    return row is not None and timebuckets.from_driver(row["started_at"]) >= hour


def _pages_before(sessions: list[uuid.UUID], hour: datetime) -> dict[uuid.UUID, list[str]]:
    """Each session's last MAX_STEPS page paths before the hour, ENTRANCE first when
    they are all it had (a session read up to EARLIER_ROWS events back)."""
    if not sessions:
        return {}
    statement = prepare(session_events.SELECT_DOCS_BEFORE)
    bound = time_uuid_bound(hour)

    def read(session_id: uuid.UUID) -> tuple[uuid.UUID, list[str]]:
        query = statement.bind((session_id, bound))
        query.fetch_size = 200
        found: list[str] = []
        complete = True
        for n, row in enumerate(cassandra_session().execute(query)):
            if n >= EARLIER_ROWS:
                complete = False
                break
            doc = orjson.loads(row["doc"])
            path = page_path(doc.get("url")) if doc.get("type") == "pageview" else None
            if path and not doc.get("is_bot"):
                found.append(path)
                if len(found) > MAX_STEPS:
                    complete = False
                    break
        found.reverse()
        return session_id, ([ENTRANCE] if complete else []) + found[-MAX_STEPS:]

    with ThreadPoolExecutor(8, thread_name_prefix="paths-before") as pool:
        return dict(pool.map(read, sessions))


def _sources(site_id: uuid.UUID, sessions: list[uuid.UUID]) -> dict[uuid.UUID, str | None]:
    """The source of sessions that started before the hour (their site_sessions rows)."""
    if not sessions:
        return {}
    statement = prepare(site_sessions.SELECT_SOURCE)

    def read(session_id: uuid.UUID) -> tuple[uuid.UUID, str | None]:
        row = (
            cassandra_session().execute(statement, site_sessions.row_key(site_id, session_id)).one()
        )
        return session_id, row["source"] if row else None

    with ThreadPoolExecutor(8, thread_name_prefix="paths-sources") as pool:
        return dict(pool.map(read, sessions))


def stored_of(counts: PathCounts) -> Stored:
    """Arrange counted paths in rows: each under its first page ("from") and, two pages
    or more, under its last ("to"); entrances by source under the page entered."""
    result: Stored = {}
    for gram, n in counts.grams.items():
        row = result.setdefault((FROM, gram[0]), Row())
        row.grams[gram] = n
        if len(gram) > 1:
            row = result.setdefault((TO, gram[-1]), Row())
            row.grams[gram] = n
    for (page, source), n in counts.sources.items():
        row = result.setdefault((TO, page), Row())
        row.sources[source] = row.sources.get(source, 0) + n
    return _capped(result)


def _capped(rows: Stored) -> Stored:
    """Keep the TOP_ANCHORS most viewed pages' rows (and ENTRANCE's), and in each row its
    TOP_GRAMS most frequent paths; what a row leaves out is added to its `dropped`."""
    views = {anchor: row.grams.get((anchor,), 0) for (side, anchor), row in rows.items()}
    ranked = sorted((a for a in views if a != ENTRANCE), key=lambda a: (-views[a], a))
    kept = {ENTRANCE, *ranked[:TOP_ANCHORS]}
    result: Stored = {}
    for key, row in rows.items():
        if key[1] not in kept:
            continue
        if len(row.grams) > TOP_GRAMS:
            ordered = _ranked(row.grams)
            row = Row(
                dict(ordered[:TOP_GRAMS]),
                row.sources,
                row.dropped + sum(n for _, n in ordered[TOP_GRAMS:]),
            )
        result[key] = row
    return result


def paths_merge(parts: list[Stored]) -> Stored:
    """Add up the rows of several buckets (a day's hours, a month's days, a range)."""
    if len(parts) == 1:
        return parts[0]
    merged: Stored = {}
    for part in parts:
        for key, row in part.items():
            into = merged.setdefault(key, Row())
            for gram, n in row.grams.items():
                into.grams[gram] = into.grams.get(gram, 0) + n
            for source, n in row.sources.items():
                into.sources[source] = into.sources.get(source, 0) + n
            into.dropped += row.dropped
    return _capped(merged)


def paths_write(
    *,
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    stored: Stored,
    ttl: int,
    now: datetime,
) -> None:
    """Overwrite a bucket's rows (an anchor it no longer has goes too)."""
    bucket_overwrite(
        delete=bucket_paths.DELETE_BUCKET,
        key=(site_id, granularity, bucket),
        insert=bucket_paths.UPSERT,
        rows=(
            (
                site_id,
                granularity,
                bucket,
                side,
                anchor,
                orjson.dumps([[list(g), n] for g, n in _ranked(row.grams)]).decode(),
                orjson.dumps(row.sources).decode() if row.sources else None,
                row.dropped,
            )
            for (side, anchor), row in stored.items()
        ),
        now=now,
        ttl=ttl,
    )


def _ranked(grams: dict[Gram, int]) -> list[tuple[Gram, int]]:
    """A row's paths, the most frequent first (ties by path)."""
    return sorted(grams.items(), key=lambda kv: (-kv[1], kv[0]))


def _row(found: dict[str, Any]) -> Row:
    return Row(
        {tuple(g): n for g, n in orjson.loads(found["grams"] or "[]")},
        orjson.loads(found["sources"]) if found["sources"] else {},
        found["dropped"] or 0,
    )


def buckets_read(*, site_id: uuid.UUID, buckets: list[tuple[str, datetime]]) -> list[Stored]:
    """The whole stored rows of these (resolution, bucket)s, read in parallel (rollups)."""
    statement = prepare(bucket_paths.SELECT_BUCKET)

    def read(key: tuple[str, datetime]) -> Stored:
        rows = cassandra_session().execute(statement, (site_id, key[0], key[1]))
        return {(r["side"], r["anchor"]): _row(r) for r in rows}

    with ThreadPoolExecutor(8, thread_name_prefix="paths") as pool:
        return [found for found in pool.map(read, buckets) if found]


def anchor_read(
    *, site_id: uuid.UUID, buckets: list[tuple[str, datetime]], side: str, anchor: str
) -> list[Row]:
    """One (side, anchor) row of each of these buckets (absent: none there), in parallel."""
    statement = prepare(bucket_paths.SELECT_ANCHOR)

    def read(key: tuple[str, datetime]) -> Row | None:
        found = (
            cassandra_session().execute(statement, (site_id, key[0], key[1], side, anchor)).one()
        )
        return _row(found) if found else None

    with ThreadPoolExecutor(8, thread_name_prefix="paths") as pool:
        return [row for row in pool.map(read, buckets) if row is not None]

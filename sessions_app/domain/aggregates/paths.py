"""Paths: the page-view sequences of sessions, counted when an hour seals and merged up.

A path is up to MAX_STEPS consecutive page views of one session, in the order of their
event ids (session_events' order: time, then id); a leading ENTRANCE marks a path that
begins where its session did. Each human page view counts, in its own hour, every path
that ends at it: the page alone, the page before it and it, ... up to MAX_STEPS pages,
and the ENTRANCE-led one while the session's first page views reach back to its start.
So for any path q a bucket holds how often visitors followed q with q's last page
viewed in the bucket, and buckets add up: days merge hours, months days. Transitions
are the two-page paths; entrances are also counted by the session's source.

The hour's page views come from the seal's tally (or its raw rows), with each session's
start and source as ingest knew them (a tally of raw rows: from site_sessions); the page
views before the hour from session_events, only for the sessions that were running when
it began (the last MAX_STEPS + 1 page views, newest first). An hour's counts therefore never depend
on another bucket's seal. A path whose first page view is in an earlier hour is also
kept in its row's `carried`, with that hour: a range that begins after it subtracts it,
so a Sankey from a page holds only visits that began in the range and every column's
continuing and leaving visits add up to its arrivals. A page view that lands in a session
before page views already counted in later hours reopens those hours, so they reseal
with it (aggregates/states.plan_buckets_touch, ingest/apply._reopen_late).

Stored in bucket_paths, a row per (side, anchor): the paths from a page and to it.
"""

from __future__ import annotations

import heapq
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from sessions_app.domain.aggregates.path_grams import (
    ENTRANCE,
    MAX_STEPS,
    Carried,
    Gram,
    PathCounts,
    session_count,
    visits_count,
)
from sessions_app.domain.aggregates.sources import Hour
from sessions_app.domain.aggregates.stored import bucket_overwrite
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import time_uuid_bound, uuid_time
from sessions_app.foundation.core.pagepaths import page_path
from sessions_app.foundation.tables import bucket_paths, session_events, site_sessions

OTHER = "(other)"  # the pages of paths folded away by a row's cap
NONE = "(none)"  # a session without a known source
FROM, TO = "from", "to"
TOP_ANCHORS = 1_000  # pages a bucket keeps rows for (by views; ENTRANCE always)
TOP_GRAMS = 200  # paths a row keeps; the rest fold into OTHER, counted in `dropped`
EARLIER_ROWS = 5_000  # events read back per session for the page views before an hour


@dataclass
class Row:
    """One stored row: the paths from (or to) one anchor in a bucket."""

    grams: dict[Gram, int] = field(default_factory=dict)
    sources: dict[str, int] = field(default_factory=dict)
    dropped: int = 0
    carried: dict[Carried, int] = field(default_factory=dict)  # "from" rows only


Stored = dict[tuple[str, str], Row]  # (side, anchor) -> row


def hour_count(source: Hour) -> PathCounts:
    """Count an hour's paths from its human page views (the tally's {session: [[time, low,
    path], ...]}), each session's start and source, and its page views before the hour.

    A session's start and source come from the tally when ingest put them there, else
    from the site_sessions rows of the sessions that started in the hour (or, begun
    earlier, its own row); the page views before the hour from session_events, for the
    sessions that began before it only.
    """
    hour, views, known = source.start, source.counted.views, source.counted.starts
    rows: dict[str, dict[str, Any]] = {}  # by the session id's text, as the tally's
    if any(sid not in known for sid in views):
        rows = {str(row["session_id"]): row for row in source.started}
    since = timebuckets.epoch_ms(hour)
    began = {
        sid
        for sid in views
        if (known[sid][0] >= since if sid in known else _began_in(rows.get(sid), hour))
    }
    before = _pages_before([sid for sid in views if sid not in began], hour)
    sources = {sid: start[1] for sid, start in known.items()}
    sources.update((sid, row["source"]) for sid, row in rows.items() if sid not in known)
    entered = [
        sid
        for sid in views
        if sid not in sources and before.get(sid, ([ENTRANCE], []))[0] == [ENTRANCE]
    ]
    sources.update(_sources(source.site_id, entered))
    counts = PathCounts()
    # The sessions begun in the hour (nothing before it, nothing carried), by their pages
    # and source: their paths depend on nothing else, so each distinct visit is counted
    # once (most visits of a site repeat a few short ones: a landing page, a bounce).
    visits: Counter[tuple[tuple[str, ...], str]] = Counter()
    for sid, seen in views.items():
        if len(seen) > 1:
            seen = sorted(seen)  # [time, low, path]: the order of their event ids
        pages = [view[2] for view in seen]
        if sid in began:
            visits[tuple(pages), sources.get(sid) or NONE] += 1
            continue
        pages_before, hours_before = before[sid]
        session_count(
            counts,
            pages_before,
            pages,
            sources.get(sid) or NONE,
            hour=hour,
            before_hours=hours_before,
        )
    visits_count(counts, visits)
    return counts


def _began_in(row: dict[str, Any] | None, hour: datetime) -> bool:
    """Whether a session certainly has no event before the hour (it started in it)."""
    return row is not None and timebuckets.from_driver(row["started_at"]) >= hour


def _pages_before(
    sessions: list[str], hour: datetime
) -> dict[str, tuple[list[str], list[datetime]]]:
    """Each session's last MAX_STEPS page paths before the hour, ENTRANCE first when
    they are all it had (a session read up to EARLIER_ROWS events back), and the hours
    they were viewed in."""
    if not sessions:
        return {}
    statement = prepare(session_events.SELECT_DOCS_BEFORE)
    bound = time_uuid_bound(hour)

    def read(session_id: str) -> tuple[str, tuple[list[str], list[datetime]]]:
        query = statement.bind((uuid.UUID(session_id), bound))
        query.fetch_size = 200
        found: list[tuple[str, datetime]] = []
        complete = True
        for n, row in enumerate(cassandra_session().execute(query)):
            if n >= EARLIER_ROWS:
                complete = False
                break
            doc = orjson.loads(row["doc"])
            path = page_path(doc.get("url")) if doc.get("type") == "pageview" else None
            if path and not doc.get("is_bot"):
                viewed = timebuckets.floor(uuid_time(row["event_id"]), timebuckets.Width.HOUR)
                found.append((path, viewed))
                if len(found) > MAX_STEPS:
                    complete = False
                    break
        found.reverse()
        kept = found[-MAX_STEPS:]
        return session_id, (
            ([ENTRANCE] if complete else []) + [p for p, _ in kept],
            [h for _, h in kept],
        )

    with ThreadPoolExecutor(8, thread_name_prefix="paths-before") as pool:
        return dict(pool.map(read, sessions))


def _sources(site_id: uuid.UUID, sessions: list[str]) -> dict[str, str | None]:
    """The source of sessions that started before the hour (their site_sessions rows)."""
    if not sessions:
        return {}
    statement = prepare(site_sessions.SELECT_SOURCE)

    def read(session_id: str) -> tuple[str, str | None]:
        key = site_sessions.row_key(site_id, uuid.UUID(session_id))
        row = cassandra_session().execute(statement, key).one()
        return session_id, row["source"] if row else None

    with ThreadPoolExecutor(8, thread_name_prefix="paths-sources") as pool:
        return dict(pool.map(read, sessions))


def stored_of(counts: PathCounts) -> Stored:
    """Arrange counted paths in rows: each under its first page ("from", with the paths
    begun in an earlier hour as `carried`) and, two pages or more, under its last ("to");
    entrances by source under the page entered."""
    result: Stored = {}
    for gram, n in counts.grams.items():
        row = result.setdefault((FROM, gram[0]), Row())
        row.grams[gram] = n
        if len(gram) > 1:
            row = result.setdefault((TO, gram[-1]), Row())
            row.grams[gram] = n
    for (gram, first), n in counts.carried.items():
        result[FROM, gram[0]].carried[gram, first] = n
    for (page, source), n in counts.sources.items():
        row = result.setdefault((TO, page), Row())
        row.sources[source] = row.sources.get(source, 0) + n
    return _capped(result)


def _capped(rows: Stored) -> Stored:
    """Keep the TOP_ANCHORS most viewed pages' rows (and ENTRANCE's), each row cut to its
    TOP_GRAMS most frequent paths (`_folded`)."""
    views = {anchor: row.grams.get((anchor,), 0) for (side, anchor), row in rows.items()}
    ranked = sorted((a for a in views if a != ENTRANCE), key=lambda a: (-views[a], a))
    kept = {ENTRANCE, *ranked[:TOP_ANCHORS]}
    return {key: _folded(row, key[0]) for key, row in rows.items() if key[1] in kept}


def _shorter(gram: Gram, side: str) -> Gram:
    """The path one page shorter at its far end from the anchor (a "to" path's first)."""
    return gram[:-1] if side == FROM else gram[1:]


def _folded(row: Row, side: str) -> Row:
    """Keep the row's TOP_GRAMS most frequent paths whose shorter paths are kept too, and
    fold each other path into its longest kept (or absent: begun in an earlier bucket)
    shorter path with OTHER for the pages beyond, so every step's arrivals, continuations
    and stops still add up; `dropped` counts the folded paths."""
    if len(row.grams) <= TOP_GRAMS:
        return row
    # A path never outnumbers its shorter one, and a tie puts the shorter first.
    # The first TOP_GRAMS of the whole row sorted so, without sorting it (heapq: the same).
    top = heapq.nsmallest(TOP_GRAMS, row.grams.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))
    kept: set[Gram] = set()
    for gram in sorted((g for g, _ in top), key=len):
        shorter = _shorter(gram, side)
        if len(gram) == 1 or shorter in kept or shorter not in row.grams:
            kept.add(gram)

    def fold(gram: Gram) -> Gram:
        base, beyond = gram, 0
        while len(base) > 1 and base not in kept and (beyond == 0 or base in row.grams):
            base, beyond = _shorter(base, side), beyond + 1
        return base + (OTHER,) * beyond if side == FROM else (OTHER,) * beyond + base

    grams: Counter[Gram] = Counter()
    dropped = row.dropped
    for gram, n in row.grams.items():
        if gram in kept:  # the row's top paths stay as they are
            grams[gram] += n
            continue
        into = fold(gram)
        grams[into] += n
        dropped += n if into != gram else 0
    carried: Counter[Carried] = Counter()
    for (gram, first), n in row.carried.items():
        carried[fold(gram), first] += n
    return Row(dict(grams), row.sources, dropped, dict(carried))


def paths_merge(
    parts: list[Stored], *, begun_before: datetime | None = None, cap: bool = True
) -> Stored:
    """Add up the rows of several buckets (a day's hours, a month's days, a range); keep
    the carried paths whose first page view is before `begun_before` (the merged
    bucket's start; None: all)."""
    merged: Stored = {}
    for part in parts:
        for key, row in part.items():
            into = merged.setdefault(key, Row())
            for gram, n in row.grams.items():
                into.grams[gram] = into.grams.get(gram, 0) + n
            for source, n in row.sources.items():
                into.sources[source] = into.sources.get(source, 0) + n
            into.dropped += row.dropped
            for carried, n in row.carried.items():
                if begun_before is None or carried[1] < begun_before:
                    into.carried[carried] = into.carried.get(carried, 0) + n
    return _capped(merged) if cap else merged


def paths_write(
    *,
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    value: Stored,
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
                _carried_json(row.carried),
            )
            for (side, anchor), row in value.items()
        ),
        now=now,
        ttl=ttl,
    )


def _ranked(grams: dict[Gram, int]) -> list[tuple[Gram, int]]:
    """A row's paths, the most frequent first (ties by path)."""
    return sorted(grams.items(), key=lambda kv: (-kv[1], kv[0]))


def _carried_json(carried: dict[Carried, int]) -> str | None:
    """[[[page, ...], first view's hour as epoch seconds, count], ...], or None."""
    if not carried:
        return None
    return orjson.dumps(
        [[list(g), int(first.timestamp()), n] for (g, first), n in sorted(carried.items())]
    ).decode()


def _row(found: dict[str, Any]) -> Row:
    return Row(
        {tuple(g): n for g, n in orjson.loads(found["grams"] or "[]")},
        orjson.loads(found["sources"]) if found["sources"] else {},
        found["dropped"] or 0,
        {
            (tuple(g), datetime.fromtimestamp(first, UTC)): n
            for g, first, n in orjson.loads(found["carried"] or "[]")
        },
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

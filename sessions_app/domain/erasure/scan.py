"""Paged reads and concurrent writes the erasure job runs, and how it matches stored payloads."""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError

from sessions_app.domain.aggregates import usersets
from sessions_app.foundation.core import payloads, timebuckets
from sessions_app.foundation.core.cql import (
    cassandra_session,
    execute_windowed,
    prepare,
    read_windowed,
)
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import FailedEvent, LatestSession, Site
from sessions_app.foundation.tables import (
    failed_events,
    replay_assets,
    replay_chunks,
    retention_specs,
    rolling_counts,
    site_sessions,
    user_directory,
)

PAGE = 1000
MAX_TERMS = 10_000  # search terms one user key may have in user_directory
# Keys looked for inside recordings: at least this long (a shorter one, "42", would
# match the text of most recordings), as a whole word of a text or attribute.
MIN_KEY_CHARS = 4
PROBE_WINDOW = 500  # sessions probed for a recording at a time


@dataclass
class Found:
    """What the job found of the user keys before deleting it."""

    # session id -> (user key, started_at, last_seen_at)
    sessions: dict[uuid.UUID, tuple[str, datetime, datetime]] = field(default_factory=dict)
    # event id -> ts
    events: dict[uuid.UUID, datetime] = field(default_factory=dict)
    # (user key, user-events bucket) -> rows
    user_buckets: Counter[tuple[str, datetime]] = field(default_factory=Counter)
    session_rows: int = 0

    def earliest(self) -> datetime | None:
        times = [s[1] for s in self.sessions.values()] + list(self.events.values())
        return min(times) if times else None


def table_ttl(model: Any) -> timedelta:
    return timedelta(seconds=int(model.__options__["default_time_to_live"]))


def pages(cql: str, params: tuple[Any, ...]) -> Iterator[dict[str, Any]]:
    """Yield every row of one partition (or slice), PAGE rows per round trip."""
    statement = prepare(cql).bind(params)
    statement.fetch_size = PAGE
    yield from cassandra_session().execute(statement)


def pages_many(
    cql: str, params: Iterable[tuple[Any, ...]], *, window: int
) -> Iterator[dict[str, Any]]:
    """Yield every row of many reads, in the order given: the first page of `window`
    reads is asked for at once, then each is read to its end (later pages one round trip
    each). At most `window` x PAGE rows are held."""
    session, statement = cassandra_session(), prepare(cql)
    pending = list(params)
    for first in range(0, len(pending), window):
        futures = []
        for values in pending[first : first + window]:
            bound = statement.bind(values)
            bound.fetch_size = PAGE
            futures.append(session.execute_async(bound))
        for future in futures:
            yield from future.result()


def write_all(cql: str, rows: Iterable[tuple[Any, ...]]) -> int:
    statement = prepare(cql, idempotent=True, write=True)
    work = [(statement, row) for row in rows]
    execute_windowed(work)
    return len(work)


def feed_ttl() -> timedelta:
    return table_ttl(LatestSession)


def payload_mentions(payload: str | None, keys: set[str]) -> bool:
    """Return True if a failed event's stored payload belongs to one of the keys.

    A JSON object (an event as sent) is matched on its anonymous_id and user_id
    (also Segment's anonymousId/userId); anything else (a truncated payload, a
    whole request body) on the key appearing as a JSON string anywhere in it.
    """
    if not payload:
        return False
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's limit
        data = None
    if isinstance(data, dict):
        names = ("anonymous_id", "user_id", "anonymousId", "userId")
        if any(isinstance(data.get(n), str) and data[n] in keys for n in names):
            return True
    return any(json.dumps(k) in payload for k in keys)


def counted_buckets(site_id: uuid.UUID, keys: list[str], now: datetime) -> dict[str, set[datetime]]:
    """The buckets whose per-user counts hold one of the keys, found by the key itself.

    Sealed counts outlive the raw events and sessions they came from, so they are looked
    up in the key's own `rolling_counts` partitions: every period a row of each
    resolution can still be in (its policy's longest allowed TTL), a few dozen small
    partitions per key.
    """
    found: dict[str, set[datetime]] = {g: set() for g in _AGGREGATE_POLICIES}
    for granularity in _AGGREGATE_POLICIES:
        for period in _periods(granularity, now):
            for key in keys:
                params = (site_id, key, granularity, period)
                for row in pages(rolling_counts.SELECT_BUCKETS, params):
                    found[granularity].add(timebuckets.from_driver(row["bucket"]))
    return found


_AGGREGATE_POLICIES = {
    "hour": retention_specs.AGGREGATES_HOUR,
    "day": retention_specs.AGGREGATES_DAY,
    "month": retention_specs.AGGREGATES_MONTH,
}


def _periods(granularity: str, now: datetime) -> list[datetime]:
    """Every rolling-counter period a row of this resolution may still be in."""
    if granularity == "month":
        return [timebuckets.EPOCH]
    oldest = now - timedelta(days=retention_specs.SPECS[_AGGREGATE_POLICIES[granularity]].max_days)
    first = timebuckets.rolling_period(granularity, oldest)
    periods = []
    while first <= now:
        periods.append(first)
        first = timebuckets.rolling_period_end(granularity, first)
    return periods


def failed_rows_mentioning(
    site_id: uuid.UUID, keys: set[str], now: datetime
) -> list[tuple[Any, ...]]:
    """The keys of rejected events whose stored payload carries one of the keys: every
    day partition still inside the failed-events TTL is scanned."""
    first = timebuckets.floor(now - table_ttl(FailedEvent), timebuckets.Width.DAY)
    end = timebuckets.next_start(now, timebuckets.Width.DAY)
    doomed = []
    for day in timebuckets.buckets_between(first, end, timebuckets.Width.DAY):
        for row in pages(failed_events.SELECT_PAYLOADS, (site_id, day)):
            if payload_mentions(row["payload"], keys):
                doomed.append((site_id, day, row["failed_id"]))
    return doomed


def user_sets_erase(
    site_id: uuid.UUID, keys: list[str], buckets: dict[str, set[datetime]]
) -> dict[str, int]:
    """Remove the keys' numbers from every stored user set of `buckets` and of the weeks
    of their days, then forget the numbers; how many set rows were rewritten and numbers
    forgotten."""
    numbers = usersets.numbers_of(site_id, keys, assign=False)
    lost = [key for key, number in numbers.items() if number is None]
    if lost:  # a number row without its number: found from the reverse rows
        for key in lost:
            usersets.key_forget(site_id, key)
        numbers.update(usersets.numbers_scanned(site_id, lost))
    named = [(g, b) for g, found in buckets.items() for b in sorted(found)]
    weeks = {timebuckets.floor(d, "week") for d in buckets.get("day", ())}
    named += [("week", w) for w in sorted(weeks)]
    rows = unreadable = 0
    for key, number in numbers.items():
        if number is None:  # not in the reverse rows either: in no set
            continue
        changed, bad = usersets.user_remove(site_id=site_id, number=number, buckets=named)
        rows, unreadable = rows + changed, unreadable + bad
        usersets.number_forget(site_id, key, number)
    return {"user_sets": rows, "user_sets_unreadable": unreadable, "user_numbers": len(numbers)}


def directory_deletes(
    site_id: uuid.UUID, keys: list[str]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The user_directory rows of the keys and their own partitions (DELETE_ROW and
    DELETE_PARTITION parameters), found through each key's own partition of the terms
    written for it (foundation/tables/user_directory.py)."""
    rows: list[tuple[Any, ...]] = []
    own = [(site_id, user_directory.KEY_PARTITION + key) for key in keys]
    for (_, partition), key in zip(own, keys, strict=True):
        for row in pages(user_directory.SELECT_TERMS, (site_id, partition, MAX_TERMS)):
            term = row["term"]
            rows += [(site_id, p, term, key) for p in user_directory.prefixes(term)]
    return rows, own


def _strings(body: Any) -> Iterator[str]:
    """Every string of a parsed chunk, keys too (iterative: a deep DOM is no recursion)."""
    stack = [body]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())


# A stylesheet a chunk names instead of holding it (features/replays/assets.py: written by orjson
# or the standard library with compact separators).
_ASSET_REFERENCE = re.compile(rb'\{"_cs_asset":"([0-9a-f]{64})"\}')


@dataclass(frozen=True)
class Verdict:
    """What the scan makes of one stored chunk or stylesheet."""

    doomed: bool  # it shows one of the keys, or cannot be read: deleted
    unreadable: bool = False
    assets: frozenset[str] = frozenset()  # the stylesheets a readable chunk names


@dataclass(frozen=True)
class KeyMatcher:
    """Whether an inflated chunk holds one of the keys: a cheap byte search of the JSON
    first, then the keys as whole words of its strings. What cannot be read (not one
    gzip member within the inflated cap, not JSON within the depth the collector accepts)
    is doomed: a chunk belongs to the session it is stored under, and when in doubt the
    erasure deletes."""

    quick: tuple[bytes, ...]
    pattern: re.Pattern[str]

    @classmethod
    def of(cls, keys: Iterable[str]) -> KeyMatcher | None:
        wanted = sorted({k for k in keys if len(k) >= MIN_KEY_CHARS})
        if not wanted:
            return None
        quick = {
            form.encode("utf-8", "surrogatepass")
            for k in wanted
            for form in (json.dumps(k)[1:-1], json.dumps(k, ensure_ascii=False)[1:-1])
        }
        words = "|".join(rf"(?<!\w){re.escape(k)}(?!\w)" for k in wanted)
        return cls(quick=tuple(sorted(quick)), pattern=re.compile(words))

    def chunk(self, data: bytes | None) -> Verdict:
        try:
            text = payloads.gzip_inflate(data or b"", settings.REPLAY_MAX_INFLATED_BYTES)
        except payloads.PayloadError:
            return Verdict(doomed=True, unreadable=True)
        try:  # kept only if it reads as the collector accepts a chunk
            body = payloads.json_parse(text, max_depth=replay_chunks.MAX_JSON_DEPTH)
        except payloads.PayloadError:
            return Verdict(doomed=True, unreadable=True)
        named = _stylesheets_named(text)
        if not any(q in text for q in self.quick):
            return Verdict(doomed=False, assets=named)
        return Verdict(doomed=any(self.pattern.search(s) for s in _strings(body)), assets=named)

    def stylesheet(self, data: bytes | None) -> Verdict:
        try:
            raw = payloads.gzip_inflate(data or b"", settings.REPLAY_MAX_INFLATED_BYTES)
            text = raw.decode("utf-8", "surrogatepass")
        except (payloads.PayloadError, UnicodeDecodeError):
            return Verdict(doomed=True, unreadable=True)
        return Verdict(doomed=self.pattern.search(text) is not None)


@dataclass
class ReplayScan:
    """The chunks and stylesheets an erasure deletes, beside the sessions deleted whole."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)  # DELETE_ROW parameters
    unreadable: int = 0
    assets: set[str] = field(default_factory=set)  # named by a chunk read

    def inspect(self, matcher: KeyMatcher, site_id: uuid.UUID, session_id: uuid.UUID) -> None:
        """Read another session's chunks: keep the stylesheets they name; a chunk that
        shows a key or cannot be read is doomed."""
        for row in pages(replay_chunks.SELECT_DATA, (site_id, session_id)):
            verdict = matcher.chunk(row["data"])
            self.assets |= verdict.assets
            self.unreadable += verdict.unreadable
            if verdict.doomed:
                self.rows.append((site_id, session_id, row["page_start"], row["seq"]))

    def names_of(self, site_id: uuid.UUID, session_id: uuid.UUID) -> None:
        """Keep the stylesheets a session deleted whole names (its chunks are not judged)."""
        for row in pages(replay_chunks.SELECT_DATA, (site_id, session_id)):
            try:
                text = payloads.gzip_inflate(row["data"] or b"", settings.REPLAY_MAX_INFLATED_BYTES)
            except payloads.PayloadError:
                continue  # it goes with its session
            self.assets |= _stylesheets_named(text)


def _stylesheets_named(text: bytes) -> frozenset[str]:
    return frozenset(h.decode() for h in _ASSET_REFERENCE.findall(text))


def replay_rows_mentioning(
    site_id: uuid.UUID,
    matcher: KeyMatcher,
    *,
    own: Collection[uuid.UUID],
    days: int,
    now: datetime,
) -> ReplayScan:
    """The replay chunks, of any session of the site, whose recording holds one of the
    keys (typed into the page, shown in its text) or cannot be read, and the stylesheets
    every chunk read names (the user's `own` sessions, deleted whole, are read for those).

    Bounded by the site's sessions: those that started in the last `days` days (the
    site's replay retention) and a day more, read from their site_sessions day
    partitions (every shard), probed for a recording PROBE_WINDOW at a time; only the
    recorded ones' chunks are read and inflated.
    """
    scan = ReplayScan()
    for session_id in own:
        scan.names_of(site_id, session_id)
    probe, width = prepare(replay_chunks.PROBE), timebuckets.Width.DAY
    first = timebuckets.floor(now - timedelta(days=days + 1), width)
    for day in timebuckets.buckets_between(first, timebuckets.next_start(now, width), width):
        for shard in range(max(1, settings.SESSION_SHARDS)):
            rows = pages(site_sessions.SELECT_IDS, (site_id, day, shard))
            ids = [r["session_id"] for r in rows if r["session_id"] not in own]
            for start in range(0, len(ids), PROBE_WINDOW):
                window = ids[start : start + PROBE_WINDOW]
                found = read_windowed(probe, [(site_id, s) for s in window])
                for session_id in (s for s, hit in zip(window, found, strict=True) if hit):
                    scan.inspect(matcher, site_id, session_id)
    return scan


def stylesheets_mentioning(
    site_id: uuid.UUID, matcher: KeyMatcher, hashes: Iterable[str]
) -> tuple[list[str], int]:
    """The stylesheets among these (stored once per site, named by chunks) that show one
    of the keys or cannot be read, and how many could not be read."""
    wanted, doomed, unreadable = sorted(hashes), [], 0
    for at in range(0, len(wanted), replay_assets.MAX_READ):
        stored = replay_assets.assets_read(
            site_id=site_id, hashes=wanted[at : at + replay_assets.MAX_READ]
        )
        for digest, data in stored.items():
            verdict = matcher.stylesheet(data)
            unreadable += verdict.unreadable
            if verdict.doomed:
                doomed.append(digest)
    return doomed, unreadable


def replays_erase(
    site: Site, keys: list[str], sessions: Collection[uuid.UUID], now: datetime
) -> dict[str, int]:
    """Delete the recordings of the sessions (a partition each), the chunks of the site's
    other sessions that show one of the keys or cannot be read, and the stylesheets any
    chunk read names that show one of them or cannot be read; how many of each."""
    scan, bad_sheets = ReplayScan(), 0
    sheets: list[str] = []
    matcher = KeyMatcher.of(keys)  # None: no key long enough to look for inside recordings
    if matcher is not None:
        days = site.replay_retention_days
        scan = replay_rows_mentioning(site.id, matcher, own=sessions, days=days, now=now)
        sheets, bad_sheets = stylesheets_mentioning(site.id, matcher, scan.assets)
    write_all(replay_chunks.DELETE_PARTITION, [(site.id, s) for s in sessions])
    write_all(replay_assets.DELETE, [(site.id, h) for h in sheets])
    _markers_forget(site, sheets)
    return {
        "replay_chunks": len(sessions),  # partitions: one a session
        "replay_chunks_mentioning": write_all(replay_chunks.DELETE_ROW, scan.rows),
        "replay_assets": len(sheets),
        "replay_unreadable": scan.unreadable + bad_sheets,
    }


def _markers_forget(site: Site, digests: list[str]) -> None:
    """Forget that the stylesheets were written (the next chunk naming one writes it)."""
    names = [replay_assets.marker_key(site.id, site.replay_retention_days, d) for d in digests]
    if names:
        with contextlib.suppress(RedisError):  # else they lapse within REWRITE_DAYS
            redis_client().delete(*names)

"""Erasure on request: delete a user key's rows everywhere, reseal the aggregates, suppress it.

A service module beside `services.py` (writes only; one entry point per action):
`erasure_request` records who asked and suppresses the key at once; `user_erase`
(run by the `erase_user` task) does the work and leaves the receipt in the same
`ErasureRequest` row. Every read here pages by partition key (no ALLOW FILTERING,
`PAGE` rows a page); every delete names a whole partition or a full primary key.
Running it again is harmless: what was deleted is not found again, so the counts
add up to what was removed in all.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone
from redis.exceptions import RedisError

from sessions_app import buckets, selectors, services
from sessions_app.cassandra import execute_windowed, prepare, session
from sessions_app.collector.identity import state_key
from sessions_app.collector.writer import (
    LOG_WIDTH,
    feed_sentinel,
    plan_decode,
    plan_encode,
    plan_without,
)
from sessions_app.ids import time_uuid_bound
from sessions_app.models import (
    BucketState,
    ErasureRequest,
    FailedEvent,
    Site,
    Suppression,
    TransactionLog,
)
from sessions_app.redis_client import redis_client

log = logging.getLogger(__name__)

PAGE = 1000
MAX_LINKED_IDS = 1000
# The tables of the receipt, in the order the job clears them.
TABLES = (
    "site_events_by_bucket",
    "bucket_partials",
    "user_events_by_bucket",
    "session_events",
    "latest_sessions",
    "user_sessions",
    "identity_links",
    "failed_events",
    "transaction_log",
    "bucket_users",
    "bucket_user_counts",
    "rolling_counts",
)
RESEALED = ("hour", "day", "month")
# A clamped event's ts can be up to 24 h after its receipt: the log scan starts
# that much before the user's earliest event.
RECEIPT_BEFORE_TS = timedelta(hours=24)

SELECT_USER_SESSIONS = """
SELECT session_id, started_at, last_seen_at FROM {ks}.user_sessions
WHERE site_id = ? AND user_key = ?
"""
SELECT_SESSION_EVENT_IDS = "SELECT event_id, ts FROM {ks}.session_events WHERE session_id = ?"
SELECT_USER_BUCKET_IDS = """
SELECT event_id, session_id, ts FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ?
"""
SELECT_FEED_RANGE = """
SELECT seen_id, session_id, user_key FROM {ks}.latest_sessions
WHERE site_id = ? AND sentinel = ? AND seen_id >= ? AND seen_id <= ?
"""
SELECT_FAILED_PAYLOADS = """
SELECT failed_id, payload FROM {ks}.failed_events WHERE site_id = ? AND day = ?
"""
SELECT_LOG_ENTRIES = """
SELECT batch_id, received_at, payload FROM {ks}.transaction_log
WHERE site_id = ? AND minute = ? AND shard = ?
"""
SELECT_BUCKET_USER = """
SELECT user_key FROM {ks}.bucket_users
WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key = ?
"""
SELECT_USER_COUNT_KEYS = """
SELECT event_key FROM {ks}.bucket_user_counts
WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key = ?
"""
SELECT_ROLLING_KEYS = """
SELECT event_key FROM {ks}.rolling_counts
WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ?
"""
DELETE_USER_SESSIONS = "DELETE FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ?"
DELETE_SESSION_EVENTS = "DELETE FROM {ks}.session_events WHERE session_id = ?"
DELETE_USER_BUCKET = """
DELETE FROM {ks}.user_events_by_bucket WHERE site_id = ? AND user_key = ? AND bucket = ?
"""
DELETE_SITE_EVENT = """
DELETE FROM {ks}.site_events_by_bucket
WHERE site_id = ? AND bucket = ? AND shard = ? AND event_id = ?
"""
DELETE_PARTIALS = "DELETE FROM {ks}.bucket_partials WHERE site_id = ? AND bucket = ? AND shard = ?"
DELETE_FEED = """
DELETE FROM {ks}.latest_sessions
WHERE site_id = ? AND sentinel = ? AND seen_id = ? AND session_id = ?
"""
DELETE_LINKS = "DELETE FROM {ks}.identity_links WHERE site_id = ? AND user_id = ?"
DELETE_FAILED = "DELETE FROM {ks}.failed_events WHERE site_id = ? AND day = ? AND failed_id = ?"
DELETE_LOG = """
DELETE FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ? AND batch_id = ?
"""
REWRITE_LOG = """
UPDATE {ks}.transaction_log USING TTL ? SET payload = ?, event_count = ?
WHERE site_id = ? AND minute = ? AND shard = ? AND batch_id = ?
"""
DELETE_BUCKET_USER = """
DELETE FROM {ks}.bucket_users WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key = ?
"""
DELETE_USER_COUNTS = """
DELETE FROM {ks}.bucket_user_counts
WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key = ?
"""
DELETE_ROLLING = """
DELETE FROM {ks}.rolling_counts
WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ?
"""


class ErasureError(ValueError):
    """The request cannot be accepted; the message names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def _ttl(model: Any) -> timedelta:
    return timedelta(seconds=int(model.__options__["default_time_to_live"]))


def erasure_request(*, site: Site, key: str, kind: str, requested_by: Any) -> ErasureRequest:
    """Record an erasure request, suppress the key at once and enqueue the job.

    The key is suppressed before the job runs, so beacons arriving while it waits
    in the queue are already rejected. The task is sent after the commit, so the
    worker always finds the row.
    """
    from sessions_app import tasks

    key = key.strip()
    if not key:
        raise ErasureError("key", "required")
    if len(key) > 256:
        raise ErasureError("key", "at most 256 characters")
    if kind not in (ErasureRequest.USER_ID, ErasureRequest.ANONYMOUS_ID):
        raise ErasureError("kind", "user_id or anonymous_id")
    with transaction.atomic():
        request = ErasureRequest.objects.create(
            site=site,
            key=key,
            kind=kind,
            requested_by=requested_by,
            requested_by_name=getattr(requested_by, "username", "") or "system",
            keys=[key],
        )
        Suppression.objects.get_or_create(site=site, key=key, defaults={"erasure": request})
        # The audit names the request, not the key: the key is what is being erased.
        services.admin_action_record(
            actor=requested_by,
            action="erasure.request",
            target=f"site {site.name} ({site.id})",
            details={"erasure": str(request.pk), "kind": kind},
        )
        transaction.on_commit(lambda: tasks.erase_user.delay(str(request.pk)))
    log.info(
        "erasure %s (%s) on site %s requested by %s",
        request.pk,
        kind,
        site.pk,
        request.requested_by_name,
    )
    return request


def erasures_stalled(*, now: datetime, after: timedelta) -> list[ErasureRequest]:
    """Return requests still queued, or running, longer than `after` (a lost task)."""
    cutoff = buckets.as_utc(now) - after
    queued = ErasureRequest.objects.filter(state=ErasureRequest.QUEUED, created_at__lt=cutoff)
    running = ErasureRequest.objects.filter(state=ErasureRequest.RUNNING, started_at__lt=cutoff)
    return list(queued) + list(running)


@dataclass
class _Found:
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


def _pages(cql: str, params: tuple[Any, ...]) -> Iterator[dict[str, Any]]:
    """Yield every row of one partition (or slice), PAGE rows per round trip."""
    statement = prepare(cql).bind(params)
    statement.fetch_size = PAGE
    yield from session().execute(statement)


def _write(cql: str, rows: Iterable[tuple[Any, ...]]) -> int:
    statement = prepare(cql, idempotent=True, write=True)
    work = [(statement, row) for row in rows]
    execute_windowed(work)
    return len(work)


def user_erase(*, request_id: uuid.UUID | str, now: datetime) -> ErasureRequest:
    """Erase a request's user keys from every table, reseal the aggregates; return the receipt.

    Idempotent: a done request is returned as is; a failed or interrupted one
    runs again from the start (what it already deleted is simply not found).
    """
    request = ErasureRequest.objects.select_related("site").get(pk=request_id)
    if request.state == ErasureRequest.DONE:
        return request
    job = _Job(request, buckets.as_utc(now))
    try:
        job.run()
    except Exception as exc:
        request.state = ErasureRequest.FAILED
        request.error = f"{type(exc).__name__}: {exc}"[:2000]
        request.finished_at = timezone.now()
        request.save(update_fields=["state", "error", "finished_at"])
        raise
    return request


class _Job:
    def __init__(self, request: ErasureRequest, now: datetime) -> None:
        self.request = request
        self.site = request.site
        self.now = now
        self.counts: Counter[str] = Counter(request.counts or {})

    # --- bookkeeping ------------------------------------------------------------

    def _progress(self, step: str) -> None:
        self.request.step = step
        self.request.counts = dict(self.counts)
        self.request.save(update_fields=["step", "counts"])

    def run(self) -> None:
        request = self.request
        request.state = ErasureRequest.RUNNING
        request.started_at = request.started_at or timezone.now()
        request.attempts += 1
        request.error = ""
        request.save(update_fields=["state", "started_at", "attempts", "error"])
        keys = self._keys()
        self._suppress(keys)
        self._progress("waiting for collectors to see the suppression")
        self._settle(keys)
        self._forget_redis(keys)
        self._progress("finding sessions and events")
        found = self._find(keys)
        self._progress("deleting events")
        hours = {buckets.floor(ts, buckets.Width.HOUR) for ts in found.events.values()}
        self._delete_events(found)
        self._delete_tallies(sorted(hours))
        self._progress("deleting sessions and the feed")
        self._delete_sessions(keys, found)
        self._progress("deleting identity links and failed events")
        self._delete_links(keys)
        self._delete_failed(set(keys))
        self._rewrite_log(set(keys), found.earliest())
        self._progress("deleting per-user counts")
        self._delete_counts(keys, hours)
        self._reseal(hours)
        # A seal that read the rows before they were deleted may have written the
        # per-user counts again meanwhile (its aggregate row it cannot mark sealed:
        # the reopening bumped the version); clear them once more.
        self._delete_counts(keys, hours)
        request.state = ErasureRequest.DONE
        request.finished_at = timezone.now()
        request.step = "done"
        request.counts = dict(self.counts)
        request.save(update_fields=["state", "finished_at", "step", "counts"])
        log.info("erasure %s done: %s", request.pk, dict(self.counts))

    # --- steps ---------------------------------------------------------------------

    def _keys(self) -> list[str]:
        """Return the key and, for a user id, the anonymous ids identify() linked to it."""
        keys = [self.request.key]
        if self.request.kind == ErasureRequest.USER_ID:
            linked = selectors.identity_links(
                site_id=self.site.id, user_id=self.request.key, limit=MAX_LINKED_IDS
            )
            keys += sorted(set(linked) - {self.request.key})
        keys += [k for k in self.request.keys or [] if k not in keys]  # from an earlier run
        self.request.keys = keys
        self.request.save(update_fields=["keys"])
        return keys

    def _suppress(self, keys: list[str]) -> None:
        for key in keys:
            Suppression.objects.get_or_create(
                site=self.site, key=key, defaults={"erasure": self.request}
            )
        selectors.suppressed_keys_forget(site_id=self.site.id)

    def _settle(self, keys: list[str]) -> None:
        """Wait until every collector process has reloaded the suppression list.

        Collectors cache it for SUPPRESSION_CACHE_SECONDS; a request that passed
        the check just before must also have finished writing. Deleting earlier
        could leave rows that such a request wrote afterwards.
        """
        newest = Suppression.objects.filter(site=self.site, key__in=keys).aggregate(
            newest=Max("created_at")
        )["newest"]
        if newest is None:
            return
        ready = newest + timedelta(seconds=settings.ERASURE_SETTLE_SECONDS)
        wait = (ready - timezone.now()).total_seconds()
        if wait > 0:
            _pause(wait)

    def _forget_redis(self, keys: list[str]) -> None:
        """Drop the cached session states (they hold session ids, entry and exit URLs)."""
        names = [state_key(self.site.id, k) for k in keys]
        try:
            self.counts["redis_keys"] += int(redis_client().delete(*names))
        except RedisError:  # they expire with the inactivity gap anyway
            log.warning(
                "erasure %s: Redis unavailable, session states left to expire", self.request.pk
            )

    def _find(self, keys: list[str]) -> _Found:
        """Read the keys' sessions, their events, and the user-event buckets they span."""
        found = _Found()
        site_id = self.site.id
        for key in keys:
            for row in _pages(SELECT_USER_SESSIONS, (site_id, key)):
                found.sessions[row["session_id"]] = (
                    key,
                    buckets.from_driver(row["started_at"]),
                    buckets.from_driver(row["last_seen_at"]),
                )
        for session_id in found.sessions:
            for row in _pages(SELECT_SESSION_EVENT_IDS, (session_id,)):
                found.events[row["event_id"]] = buckets.from_driver(row["ts"])
                found.session_rows += 1
        # Bucket partitions from the sessions' spans: they hold the same events, and
        # are read too, so an event whose session_events row is missing still goes.
        spans: set[tuple[str, datetime]] = set()
        for key, started, last in found.sessions.values():
            spans.update(
                (key, b)
                for b in selectors.user_partitions(
                    site_id=site_id, user_key=key, start=started, end=last + timedelta(seconds=1)
                )
            )
        for key, bucket in sorted(spans):
            for row in _pages(SELECT_USER_BUCKET_IDS, (site_id, key, bucket)):
                found.events.setdefault(row["event_id"], buckets.from_driver(row["ts"]))
                found.user_buckets[key, bucket] += 1
        return found

    def _delete_events(self, found: _Found) -> None:
        site_id, now_shards = self.site.id, max(1, self.site.event_shards)
        hours = sorted({buckets.floor(ts, buckets.Width.HOUR) for ts in found.events.values()})
        recorded = selectors.hour_shards(site_id=site_id, hours=hours)
        _write(
            DELETE_SITE_EVENT,
            (
                (site_id, hour, shard, event_id)
                for event_id, ts in found.events.items()
                for hour in (buckets.floor(ts, buckets.Width.HOUR),)
                # The collector chose crc32 % the site's shard count at the time; any
                # count up to what the hour recorded is possible.
                for shard in sorted(
                    {
                        zlib.crc32(event_id.bytes) % n
                        for n in range(1, max(now_shards, recorded.get(hour, 1)) + 1)
                    }
                )
            ),
        )
        self.counts["site_events_by_bucket"] += len(found.events)
        _write(DELETE_USER_BUCKET, ((site_id, k, b) for k, b in found.user_buckets))
        self.counts["user_events_by_bucket"] += sum(found.user_buckets.values())
        _write(DELETE_SESSION_EVENTS, ((s,) for s in found.sessions))
        self.counts["session_events"] += found.session_rows

    def _delete_tallies(self, hours: list[datetime]) -> None:
        """Delete the per-batch tallies of the user's hours; seal those hours from raw rows.

        A tally counts the erased events and names their user key, and cannot be
        edited without its batch's other events: every tally of those hours goes,
        and the hours stop trusting tallies for good (later batches' tallies would
        cover only part of them).
        """
        site_id, now_shards = self.site.id, max(1, self.site.event_shards)
        for hour in hours:
            state, created = BucketState.objects.get_or_create(
                site=self.site, granularity="hour", bucket=hour, defaults={"partials": False}
            )
            if not created and state.partials:
                BucketState.objects.filter(pk=state.pk).update(partials=False)
        recorded = selectors.hour_shards(site_id=site_id, hours=hours)
        self.counts["bucket_partials"] += _write(
            DELETE_PARTIALS,
            (
                (site_id, hour, shard)
                for hour in hours
                for shard in range(max(now_shards, recorded.get(hour, 1)))
            ),
        )

    def _delete_sessions(self, keys: list[str], found: _Found) -> None:
        site_id = self.site.id
        # Feed rows: one per batch of each session, seen_id = the batch's last_seen;
        # the sentinel partition holds a day (TTL), read over the sessions' span only.
        by_sentinel: dict[int, list[tuple[datetime, datetime]]] = {}
        for key, started, last in found.sessions.values():
            by_sentinel.setdefault(feed_sentinel(key), []).append((started, last))
        for key in keys:
            by_sentinel.setdefault(feed_sentinel(key), [])
        key_set = set(keys)
        doomed = []
        horizon = self.now - _ttl_feed()
        for sentinel, spans in by_sentinel.items():
            low = max(horizon, min((started for started, _ in spans), default=horizon))
            high = max([self.now, *(last for _, last in spans)])
            bounds = (time_uuid_bound(low), time_uuid_bound(high, upper=True))
            for row in _pages(SELECT_FEED_RANGE, (site_id, sentinel, *bounds)):
                if row["session_id"] in found.sessions or row["user_key"] in key_set:
                    doomed.append((site_id, sentinel, row["seen_id"], row["session_id"]))
        self.counts["latest_sessions"] += _write(DELETE_FEED, doomed)
        _write(DELETE_USER_SESSIONS, ((site_id, k) for k in keys))
        self.counts["user_sessions"] += len(found.sessions)

    def _delete_links(self, keys: list[str]) -> None:
        """Delete the identity links of a user id (the partition keyed by it)."""
        if self.request.kind != ErasureRequest.USER_ID:
            return
        key = self.request.key
        links = selectors.identity_links(site_id=self.site.id, user_id=key, limit=MAX_LINKED_IDS)
        _write(DELETE_LINKS, [(self.site.id, key)])
        self.counts["identity_links"] += len(links)

    def _delete_failed(self, keys: set[str]) -> None:
        """Delete rejected events whose stored payload carries one of the keys.

        Scans every day partition still inside the failed-events TTL.
        """
        site_id = self.site.id
        first = buckets.floor(self.now - _ttl(FailedEvent), buckets.Width.DAY)
        end = buckets.next_start(self.now, buckets.Width.DAY)
        doomed = []
        for day in buckets.buckets_between(first, end, buckets.Width.DAY):
            for row in _pages(SELECT_FAILED_PAYLOADS, (site_id, day)):
                if payload_mentions(row["payload"], keys):
                    doomed.append((site_id, day, row["failed_id"]))
        self.counts["failed_events"] += _write(DELETE_FAILED, doomed)

    def _rewrite_log(self, keys: set[str], earliest: datetime | None) -> None:
        """Strip the keys from transaction-log plans: delete entries left empty, rewrite others.

        Scans the log from a day before the user's earliest event (or the whole
        TTL when nothing was found) up to now, every shard, decompressing each
        entry and decoding only those whose text holds a key.
        """
        site_id, ttl = self.site.id, _ttl(TransactionLog)
        start = self.now - ttl
        if earliest is not None:
            start = max(start, earliest - RECEIPT_BEFORE_TS)
        minutes = buckets.buckets_between(start, self.now + timedelta(minutes=10), LOG_WIDTH)
        needles = [json.dumps(k).encode() for k in keys]
        deleted, rewritten = [], []
        for index, minute in enumerate(minutes):
            if index % 36 == 0:
                self._progress(f"transaction log: {index} of {len(minutes)} buckets")
            for shard in range(settings.TXLOG_SHARDS):
                for row in _pages(SELECT_LOG_ENTRIES, (site_id, minute, shard)):
                    text = zlib.decompress(row["payload"])
                    if not any(n in text for n in needles):
                        continue
                    plan = plan_decode(row["payload"])
                    kept = plan_without(plan, keys)
                    key = (site_id, minute, shard, row["batch_id"])
                    if not kept.events and not kept.sessions and not kept.links:
                        deleted.append(key)
                        continue
                    left = buckets.from_driver(row["received_at"]) + ttl - self.now
                    rewritten.append(
                        (
                            max(1, int(left.total_seconds())),
                            plan_encode(kept),
                            len(kept.events),
                            *key,
                        )
                    )
        self.counts["transaction_log"] += _write(DELETE_LOG, deleted) + _write(
            REWRITE_LOG, rewritten
        )
        self.counts["transaction_log_rewritten"] += len(rewritten)

    def _delete_counts(self, keys: list[str], hours: set[datetime]) -> None:
        """Delete the keys' per-user counts of every affected hour, day and month.

        From bucket_users and from the legacy bucket_user_counts (buckets sealed
        before it), whichever holds them.
        """
        site_id = self.site.id
        starts = {g: {buckets.floor(h, g) for h in hours} for g in RESEALED}
        user_rows, bucket_rows, rolling_rows = [], [], set()
        for granularity, found in starts.items():
            for bucket in sorted(found):
                for key in keys:
                    row = (site_id, granularity, bucket, key)
                    if any(True for _ in _pages(SELECT_BUCKET_USER, row)):
                        user_rows.append(row)
                    n = sum(1 for _ in _pages(SELECT_USER_COUNT_KEYS, row))
                    if n:
                        bucket_rows.append((row, n))
                    rolling_rows.add(
                        (site_id, key, granularity, buckets.rolling_period(granularity, bucket))
                    )
        self.counts["bucket_users"] += _write(DELETE_BUCKET_USER, user_rows)
        _write(DELETE_USER_COUNTS, (row for row, _ in bucket_rows))
        self.counts["bucket_user_counts"] += sum(n for _, n in bucket_rows)
        rolling = sorted(rolling_rows, key=str)
        self.counts["rolling_counts"] += sum(
            sum(1 for _ in _pages(SELECT_ROLLING_KEYS, row)) for row in rolling
        )
        _write(DELETE_ROLLING, rolling)

    def _reseal(self, hours: set[datetime]) -> None:
        """Reopen the sealed buckets the user's events were in, then seal them again.

        Hours first (from the remaining raw rows), then the days and months above
        (from the resealed children). Reopening bumps each bucket's version, like a
        late event: a seal already running cannot mark its stale result sealed. A
        bucket this job cannot reseal (a child still open) stays reopened for the
        sweep.
        """
        site = self.site
        starts = {g: sorted({buckets.floor(h, g) for h in hours}) for g in RESEALED}
        for granularity, chosen in starts.items():
            states = BucketState.objects.filter(
                site=site, granularity=granularity, bucket__in=chosen
            )
            states.update(version=F("version") + 1)
            states.filter(state=BucketState.SEALED).update(state=BucketState.REOPENED)
        unsealed = [BucketState.OPEN, BucketState.REOPENED]
        for granularity, chosen in starts.items():
            self._progress(f"resealing {len(chosen)} {granularity} buckets")
            for start in chosen:
                state = BucketState.objects.filter(
                    site=site, granularity=granularity, bucket=start
                ).first()
                if state is None or state.state != BucketState.REOPENED:
                    continue  # never sealed: its seal will read the remaining rows
                if granularity == "hour":
                    done = services.bucket_seal(site_id=site.id, hour=start, now=self.now)
                else:
                    child = services.CHILD[granularity]
                    if BucketState.objects.filter(
                        site=site,
                        granularity=child,
                        state__in=unsealed,
                        bucket__gte=start,
                        bucket__lt=buckets.next_start(start, granularity),
                    ).exists():
                        continue
                    done = services.bucket_rollup(
                        site_id=site.id, granularity=granularity, bucket=start, now=self.now
                    )
                self.counts[f"{granularity}s_resealed"] += int(done)


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def _ttl_feed() -> timedelta:
    from sessions_app.models import LatestSession

    return _ttl(LatestSession)


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
    except ValueError:
        data = None
    if isinstance(data, dict):
        names = ("anonymous_id", "user_id", "anonymousId", "userId")
        if any(isinstance(data.get(n), str) and data[n] in keys for n in names):
            return True
    return any(json.dumps(k) in payload for k in keys)

"""The erasure job: find a user's rows in every table, delete them, reseal their buckets."""

from __future__ import annotations

import logging
import time
import zlib
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Max
from django.utils import timezone
from redis.exceptions import RedisError

from sessions_app.domain.aggregates import states
from sessions_app.domain.erasure import log_entries
from sessions_app.domain.erasure.scan import (
    Found,
    counted_buckets,
    directory_deletes,
    failed_rows_mentioning,
    feed_ttl,
    pages,
    replays_erase,
    user_sets_erase,
    write_all,
)
from sessions_app.domain.ingest.state import state_key
from sessions_app.domain.ledger import policies, shards, suppression, widths
from sessions_app.domain.sessions import lists
from sessions_app.foundation.core import stamps, timebuckets
from sessions_app.foundation.core.ids import time_uuid_bound, uuid_time
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import (
    BucketState,
    ErasureRequest,
    Suppression,
    UserBucketWidth,
)
from sessions_app.foundation.tables import (
    anonymous_links,
    bucket_partials,
    bucket_users,
    failed_events,
    identity_links,
    latest_sessions,
    registry,
    retention_specs,
    rolling_counts,
    session_events,
    site_events_by_bucket,
    site_sessions,
    user_directory,
    user_events_by_bucket,
    user_properties,
    user_sessions,
)

log = logging.getLogger(__name__)
MAX_LINKED_IDS = 1000

# The tables of the receipt, in the order the job clears them.
TABLES = registry.erased_tables()
RESEALED = ("hour", "day", "month")


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
        hours = {timebuckets.floor(ts, timebuckets.Width.HOUR) for ts in found.events.values()}
        self._delete_events(found)
        self._delete_replays(keys, found)
        self._delete_tallies(sorted(hours))
        self._progress("deleting sessions and the feed")
        self._delete_sessions(keys, found)
        self._progress("deleting identity links, user properties and failed events")
        self._delete_links(keys)
        self._delete_properties(keys)
        self._delete_directory(keys)
        self._delete_failed(set(keys))
        self._rewrite_log(set(keys), found.earliest())
        self._progress("deleting per-user counts")
        self._delete_counts(keys, hours)
        self._delete_widths(keys)
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
            linked = lists.identity_links(
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
        suppression.suppressed_keys_forget(site_id=self.site.id)

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

    def _find(self, keys: list[str]) -> Found:
        """Read the keys' sessions, their events, and the user-event buckets they span."""
        found = Found()
        site_id = self.site.id
        for key in keys:
            for row in pages(user_sessions.SELECT_SPANS, (site_id, key)):
                # A row without its times (damaged, or written by an older version)
                # spans everything its events can still be in.
                started, last = row["started_at"], row["last_seen_at"]
                found.sessions[row["session_id"]] = (
                    key,
                    timebuckets.from_driver(started) if started else self._oldest(),
                    timebuckets.from_driver(last) if last else self.now,
                )
        for session_id in found.sessions:
            for row in pages(session_events.SELECT_IDS, (session_id,)):
                found.events[row["event_id"]] = _event_time(row)
                found.session_rows += 1
        # Bucket partitions from the sessions' spans: they hold the same events, and
        # are read too, so an event whose session_events row is missing still goes.
        spans: set[tuple[str, datetime]] = set()
        for key, started, last in found.sessions.values():
            spans.update(
                (key, b)
                for b in widths.user_partitions(
                    site_id=site_id, user_key=key, start=started, end=last + timedelta(seconds=1)
                )
            )
        for key, bucket in sorted(spans):
            for row in pages(user_events_by_bucket.SELECT_IDS, (site_id, key, bucket)):
                found.events.setdefault(row["event_id"], _event_time(row))
                found.user_buckets[key, bucket] += 1
        return found

    def _oldest(self) -> datetime:
        """The earliest time a user's raw rows can still hold."""
        return self.now - timedelta(seconds=policies.ttl_seconds(retention_specs.RAW_EVENTS))

    def _delete_events(self, found: Found) -> None:
        site_id, now_shards = self.site.id, max(1, self.site.event_shards)
        hours = sorted(
            {timebuckets.floor(ts, timebuckets.Width.HOUR) for ts in found.events.values()}
        )
        recorded = shards.hour_shards(site_id=site_id, hours=hours)
        write_all(
            site_events_by_bucket.DELETE_ROW,
            (
                (site_id, hour, shard, event_id)
                for event_id, ts in found.events.items()
                for hour in (timebuckets.floor(ts, timebuckets.Width.HOUR),)
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
        write_all(
            user_events_by_bucket.DELETE_PARTITION, ((site_id, k, b) for k, b in found.user_buckets)
        )
        self.counts["user_events_by_bucket"] += sum(found.user_buckets.values())
        write_all(session_events.DELETE_PARTITION, ((s,) for s in found.sessions))
        self.counts["session_events"] += found.session_rows

    def _delete_replays(self, keys: list[str], found: Found) -> None:
        """Delete the recordings of the user's sessions, and any other session's chunk that
        shows one of the keys (read inside the chunks: scan.replays_erase)."""
        self._progress("deleting replays, reading inside the site's recordings")
        self.counts.update(replays_erase(self.site, keys, found.sessions, self.now))

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
        recorded = shards.hour_shards(site_id=site_id, hours=hours)
        self.counts["bucket_partials"] += write_all(
            bucket_partials.DELETE_PARTITION,
            (
                (site_id, hour, shard)
                for hour in hours
                for shard in range(max(now_shards, recorded.get(hour, 1)))
            ),
        )

    def _delete_sessions(self, keys: list[str], found: Found) -> None:
        site_id = self.site.id
        # Feed rows: one per batch of each session, seen_id = the batch's last_seen;
        # the sentinel partition holds a day (TTL), read over the sessions' span only.
        by_sentinel: dict[int, list[tuple[datetime, datetime]]] = {}
        for key, started, last in found.sessions.values():
            by_sentinel.setdefault(latest_sessions.feed_sentinel(key), []).append((started, last))
        for key in keys:
            by_sentinel.setdefault(latest_sessions.feed_sentinel(key), [])
        key_set = set(keys)
        doomed = []
        horizon = self.now - feed_ttl()
        for sentinel, spans in by_sentinel.items():
            low = max(horizon, min((started for started, _ in spans), default=horizon))
            high = max([self.now, *(last for _, last in spans)])
            bounds = (time_uuid_bound(low), time_uuid_bound(high, upper=True))
            for row in pages(latest_sessions.SELECT_RANGE, (site_id, sentinel, *bounds)):
                if row["session_id"] in found.sessions or row["user_key"] in key_set:
                    doomed.append((site_id, sentinel, row["seen_id"], row["session_id"]))
        self.counts["latest_sessions"] += write_all(latest_sessions.DELETE_ROW, doomed)
        write_all(user_sessions.DELETE_PARTITION, ((site_id, k) for k in keys))
        self.counts["user_sessions"] += len(found.sessions)
        rows = (site_sessions.row_key(site_id, sid) for sid in found.sessions)
        self.counts["site_sessions"] += write_all(site_sessions.DELETE_ROW, rows)

    def _delete_links(self, keys: list[str]) -> None:
        """Delete the identity links of an erased user id (its partition) and, for every
        erased anonymous id, its link rows in the partitions of whichever user ids it was
        linked to (found through anonymous_links, the reverse rows, deleted too)."""
        site_id, key = self.site.id, self.request.key
        anons = list(keys)
        if self.request.kind == ErasureRequest.USER_ID:
            anons.remove(key)
            linked = lists.identity_links(site_id=site_id, user_id=key, limit=MAX_LINKED_IDS)
            write_all(identity_links.DELETE_PARTITION, [(site_id, key)])
            self.counts["identity_links"] += len(linked)
        rows = [
            (site_id, row["user_id"], anon)
            for anon in anons
            for row in pages(anonymous_links.SELECT_USERS, (site_id, anon, MAX_LINKED_IDS))
        ]
        write_all(identity_links.DELETE_ROW, [r for r in rows if r[1] != key])
        write_all(anonymous_links.DELETE_PARTITION, [(site_id, anon) for anon in anons])
        self.counts["identity_links"] += sum(r[1] != key for r in rows)

    def _delete_properties(self, keys: list[str]) -> None:
        """Delete the user properties (identify traits) of every key."""
        for key in keys:  # counted, not decoded: a value no reader expects is deleted too
            params = (self.site.id, key, lists.MAX_PROPERTIES)
            self.counts["user_properties"] += sum(1 for _ in pages(user_properties.SELECT, params))
        stamp = stamps.erasure_us()  # above a value stamped by an event dated ahead
        write_all(user_properties.DELETE_PARTITION, [(stamp, self.site.id, k) for k in keys])

    def _delete_directory(self, keys: list[str]) -> None:
        """Delete the user_directory rows of every key (its search terms), found by the key."""
        rows, own = directory_deletes(self.site.id, keys)
        self.counts["user_directory"] += write_all(user_directory.DELETE_ROW, rows)
        write_all(user_directory.DELETE_PARTITION, own)

    def _delete_failed(self, keys: set[str]) -> None:
        """Delete rejected events whose stored payload carries one of the keys."""
        doomed = failed_rows_mentioning(self.site.id, keys, self.now)
        self.counts["failed_events"] += write_all(failed_events.DELETE_ROW, doomed)

    def _rewrite_log(self, keys: set[str], earliest: datetime | None) -> None:
        """Strip the keys from transaction-log plans (domain/erasure/log_entries.py)."""
        self.counts.update(
            log_entries.log_entries_strip(
                site_id=self.site.id,
                keys=keys,
                earliest=earliest,
                now=self.now,
                progress=self._progress,
            )
        )

    def _delete_widths(self, keys: list[str]) -> None:
        """Forget the keys' user-partition width history (after their events are gone)."""
        deleted, _ = UserBucketWidth.objects.filter(site=self.site, user_key__in=keys).delete()
        self.counts["user_bucket_widths"] += deleted
        widths.user_widths_forget(self.site.id)

    def _delete_counts(self, keys: list[str], hours: set[datetime]) -> None:
        """Delete the keys' per-user counts and user-set numbers of every affected hour, day
        and month, and of every bucket their own counters name (also after raw events expired)."""
        site_id = self.site.id
        starts = {g: {timebuckets.floor(h, g) for h in hours} for g in RESEALED}
        for granularity, buckets in counted_buckets(site_id, keys, self.now).items():
            starts[granularity] |= buckets
        self.counts.update(user_sets_erase(site_id, keys, starts))  # sets outlive raw rows
        user_rows, rolling_rows = [], set()
        for granularity, found in starts.items():
            for bucket in sorted(found):
                for key in keys:
                    row = (site_id, granularity, bucket, key)
                    if any(True for _ in pages(bucket_users.SELECT_USER, row)):
                        user_rows.append(row)
                    rolling_rows.add(
                        (site_id, key, granularity, timebuckets.rolling_period(granularity, bucket))
                    )
        self.counts["bucket_users"] += write_all(bucket_users.DELETE_USER, user_rows)
        rolling = sorted(rolling_rows, key=str)
        self.counts["rolling_counts"] += sum(
            sum(1 for _ in pages(rolling_counts.SELECT_KEYS, row)) for row in rolling
        )
        write_all(rolling_counts.DELETE_PARTITION, rolling)

    def _reseal(self, hours: set[datetime]) -> None:
        """Reopen the sealed buckets the user's events were in, then seal them again.

        The user's rows are gone by now: a bucket that cannot be sealed (another
        visitor's rows no reader expects, the node busy) stays reopened, and the sweep
        seals it later (the receipt counts it); the erasure does not fail for it."""
        self.counts.update(
            states.buckets_reseal(
                site=self.site, hours=hours, now=self.now, progress=self._progress
            )
        )


def _event_time(row: Any) -> datetime:
    """An event row's time; from its id (a TimeUUID of it) when the row has lost it."""
    if row["ts"] is not None:
        return timebuckets.from_driver(row["ts"])
    return uuid_time(row["event_id"])


def _pause(seconds: float) -> None:
    time.sleep(seconds)

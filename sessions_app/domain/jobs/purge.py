"""The purge: drop whole bucket partitions wholly past their policy, from per-table watermarks."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from cassandra.concurrent import execute_concurrent_with_args
from celery import current_app
from django.conf import settings
from django.utils import timezone

from sessions_app.domain.aggregates.seal import ROLLUP_CHAIN
from sessions_app.domain.ledger import policies, shards
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import bounded_limit
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import (
    BucketState,
    PurgeRun,
    PurgeWatermark,
    Site,
)
from sessions_app.foundation.tables import bucket_users, registry, retention_specs
from sessions_app.foundation.tables.spec import Keys, Purge


def purge_runs(*, limit: int = 20) -> list[Any]:
    """Return the latest purge runs, newest first."""
    return list(PurgeRun.objects.select_related("requested_by")[: bounded_limit(limit)])


PURGE_CONCURRENCY = 64
# By name: the tasks module imports this one.
TASK = "sessions_app.tasks.purge_expired_partitions"


@dataclass(frozen=True)
class PurgeTarget:
    """A table whose partitions are (site, bucket[, shard]): their keys can be named."""

    name: str  # the watermark's table name
    policy: str
    width: timebuckets.Width
    probe: str
    delete: str
    keys: Callable[[Site, datetime], list[tuple[Any, ...]]]
    # Bucketed by receipt time (never before the site existed), not by event time.
    by_receipt: bool = False


def _shards_of(site: Site, hour: datetime) -> int:
    """Every shard an hour of site events may use: what it recorded, or the site's now."""
    recorded = shards.hour_shards(site_id=site.id, hours=[hour]).get(hour, 1)
    return max(site.event_shards, recorded)


def _count_keys(granularity: str) -> Callable[[Site, datetime], list[tuple[Any, ...]]]:
    return lambda site, bucket: [(site.id, granularity, bucket)]


# How the partitions of one bucket of a site are named, by the table's key shape.
KEY_NAMERS: dict[Keys, Callable[[Site, datetime], list[tuple[Any, ...]]]] = {
    Keys.HOUR_SHARDS: lambda site, bucket: [
        (site.id, bucket, shard) for shard in range(_shards_of(site, bucket))
    ],
    Keys.LOG_SHARDS: lambda site, bucket: [
        (site.id, bucket, shard) for shard in range(settings.TXLOG_SHARDS)
    ],
    Keys.SITE_BUCKET: lambda site, bucket: [(site.id, bucket)],
}


def _targets() -> Iterator[PurgeTarget]:
    """Yield the purge's targets from the table registry (user buckets are walked apart)."""
    for spec in registry.TABLES:
        purge = spec.purge
        if purge is None or purge.keys is Keys.USERS_FROM_COUNTS:
            continue
        if purge.keys is Keys.GRANULARITIES:
            for granularity in (*ROLLUP_CHAIN, *(("week",) if purge.weeks else ())):
                kept_as = "day" if granularity == "week" else granularity
                yield PurgeTarget(
                    f"{spec.name}:{granularity}",
                    retention_specs.aggregate_key(kept_as),
                    timebuckets.Width(granularity),
                    purge.probe,
                    purge.delete,
                    _count_keys(granularity),
                )
            continue
        (policy,) = spec.policies
        assert purge.width is not None, spec.name
        yield PurgeTarget(
            spec.name,
            policy,
            purge.width,
            purge.probe,
            purge.delete,
            KEY_NAMERS[purge.keys],
            by_receipt=purge.by_receipt,
        )


PURGE_TARGETS = tuple(_targets())
# Per-user partitions of user_events_by_bucket cannot be listed without a scan, but
# the sealed per-user counts of the same time (bucket_users, site-partitioned) name
# every user who had events in it: those are the keys to delete.
(USER_BUCKETS_SPEC,) = (
    s for s in registry.TABLES if s.purge and s.purge.keys is Keys.USERS_FROM_COUNTS
)
USER_BUCKETS = USER_BUCKETS_SPEC.name
USER_PURGE = cast(Purge, USER_BUCKETS_SPEC.purge)


def _purge_start(site: Site, target: PurgeTarget) -> datetime:
    mark = PurgeWatermark.objects.filter(site=site, table=target.name).first()
    if mark is not None:
        return timebuckets.as_utc(mark.purged_through)
    # Nothing of a site is older than its creation (minus the oldest event accepted,
    # for tables bucketed by event time).
    earliest = timebuckets.as_utc(site.created_at)
    if not target.by_receipt:
        earliest -= settings.MAX_EVENT_AGE + timedelta(days=1)
    return timebuckets.floor(earliest, target.width)


def _purge_target(
    site: Site, target: PurgeTarget, *, now: datetime, keep: timedelta, budget: int
) -> tuple[int, int, bool]:
    """Delete a site's partitions of target wholly older than keep; return (probed, deleted, done).

    Only buckets that ended at or before now - keep are named, so a partition
    holding anything younger than the policy is never touched. Each key is probed
    first (LIMIT 1): a partition already emptied by its TTL gets no tombstone.
    """
    start = _purge_start(site, target)
    cutoff = timebuckets.fully_expired_before(now, keep, target.width)
    if start >= cutoff:
        return 0, 0, True
    keys: list[tuple[Any, ...]] = []
    through, done = start, True
    for bucket in timebuckets.iter_buckets(start, cutoff, target.width):
        named = target.keys(site, bucket)
        if keys and len(keys) + len(named) > budget:
            done = False
            break
        keys.extend(named)
        through = timebuckets.next_start(bucket, target.width)
        if len(keys) >= budget:
            done = through >= cutoff
            break
    deleted = _probe_and_delete(target.probe, target.delete, keys)
    _watermark_advance(site, target.name, through)
    return len(keys), deleted, done


def _probe_and_delete(probe: str, delete: str, keys: list[tuple[Any, ...]]) -> int:
    """Delete the partitions among keys that still hold a live row; return how many."""
    if not keys:
        return 0
    current = cassandra_session()
    probes = execute_concurrent_with_args(
        current, prepare(probe), keys, concurrency=PURGE_CONCURRENCY, raise_on_first_error=True
    )
    present = [key for key, (_, rows) in zip(keys, probes, strict=True) if rows.current_rows]
    if present:
        execute_concurrent_with_args(
            current,
            prepare(delete, idempotent=True, write=True),
            present,
            concurrency=PURGE_CONCURRENCY,
            raise_on_first_error=True,
        )
    return len(present)


def _watermark_advance(site: Site, table: str, through: datetime, cursor: str = "") -> None:
    """Move a purge watermark forward to (through, cursor); never back (concurrent runs)."""
    mark, created = PurgeWatermark.objects.get_or_create(
        site=site, table=table, defaults={"purged_through": through, "cursor": cursor}
    )
    if created:
        return
    PurgeWatermark.objects.filter(pk=mark.pk, purged_through__lt=through).update(
        purged_through=through, cursor=cursor
    )
    PurgeWatermark.objects.filter(pk=mark.pk, purged_through=through, cursor__lt=cursor).update(
        cursor=cursor
    )


def _bucket_users(
    site: Site, bucket: datetime, width: timebuckets.Width, after: str
) -> Iterator[str]:
    """Yield each user with events in a user bucket once, in key order, after `after`."""
    streams = [
        (
            row["user_key"]
            for row in cassandra_session().execute(prepare(cql), (site.id, g.value, b, after))
        )
        for g, b in timebuckets.count_buckets(bucket, width)
        for cql in (bucket_users.SELECT_USERS_AFTER,)
    ]
    previous = None
    # Users repeat across the buckets.
    for user in heapq.merge(*streams):
        if user != previous:
            yield user
            previous = user


def _purge_user_buckets(
    site: Site, *, now: datetime, keep: timedelta, budget: int
) -> tuple[int, int, bool]:
    """Delete (site, user, bucket) partitions of user buckets wholly older than keep.

    Users come from the bucket's sealed per-user counts; a bucket whose counts are
    not sealed yet stops the walk (the next run retries), one without counts has
    no nameable users and is left to TTL. Every count partition read and every
    user key probed counts against the budget; the watermark keeps the last user
    done, so a bucket with more users than the budget is finished over several runs.
    """
    width = timebuckets.parse_width(settings.USER_EVENTS_BUCKET)
    mark = PurgeWatermark.objects.filter(site=site, table=USER_BUCKETS).first()
    if mark is not None:
        start, after = timebuckets.as_utc(mark.purged_through), mark.cursor
    else:
        earliest = timebuckets.as_utc(site.created_at) - settings.MAX_EVENT_AGE - timedelta(days=1)
        start, after = timebuckets.floor(earliest, width), ""
    cutoff = timebuckets.fully_expired_before(now, keep, width)
    if start >= cutoff:
        return 0, 0, True
    keys: list[tuple[Any, ...]] = []
    through, cursor, reads, done = start, after, 0, True
    for bucket in timebuckets.iter_buckets(start, cutoff, width):
        sources = timebuckets.count_buckets(bucket, width)
        if _counts_unsealed(site, sources):
            break  # its users are not final yet: wait for the seal
        partitions = len(sources)
        if (reads or keys) and reads + len(keys) + partitions > budget:
            done = False
            break
        reads += partitions
        finished = True
        for user in _bucket_users(site, bucket, width, cursor):
            if reads + len(keys) >= budget:
                finished = False
                break
            keys.append((site.id, user, bucket))
            cursor = user
        if not finished:
            done = False  # through stays at this bucket, cursor at its last user done
            break
        through, cursor = timebuckets.next_start(bucket, width), ""
        if reads + len(keys) >= budget:
            done = through >= cutoff
            break
    deleted = _probe_and_delete(USER_PURGE.probe, USER_PURGE.delete, keys)
    if (through, cursor) != (start, after):
        _watermark_advance(site, USER_BUCKETS, through, cursor)
    return reads + len(keys), deleted, done


def _counts_unsealed(site: Site, sources: list[tuple[timebuckets.Width, datetime]]) -> bool:
    """Return True if any of these count buckets exists but is not sealed (yet, or again)."""
    return any(
        BucketState.objects.filter(site=site, granularity=g.value, bucket=b)
        .exclude(state=BucketState.SEALED)
        .exists()
        for g, b in sources
    )


def partitions_purge(
    *,
    now: datetime,
    limit: int | None = None,
    trigger: str = PurgeRun.BEAT,
    requested_by: Any = None,
) -> PurgeRun:
    """Delete whole bucket partitions that are past their retention policy; record the run.

    Walks every site's nameable partitions (PURGE_TARGETS) from each table's
    watermark up to the last bucket wholly older than the policy, probing at most
    `limit` (PURGE_MAX_PARTITIONS) keys a run; the next run continues from the
    watermarks. Users' event buckets are named from the sealed per-user counts;
    sessions, timelines and counters are left to their TTL.
    """
    now = timebuckets.as_utc(now)
    budget = settings.PURGE_MAX_PARTITIONS if limit is None else limit
    run = PurgeRun.objects.create(trigger=trigger, requested_by=requested_by)
    days = policies.policy_days()
    counts: dict[str, int] = {}
    try:
        for site in Site.objects.order_by("created_at", "id"):
            for target in PURGE_TARGETS:
                if budget <= 0:
                    run.more_left = True
                    break
                probed, deleted, done = _purge_target(
                    site, target, now=now, keep=timedelta(days=days[target.policy]), budget=budget
                )
                budget -= probed
                run.probed += probed
                run.deleted += deleted
                counts[target.name] = counts.get(target.name, 0) + deleted
                run.more_left = run.more_left or not done
            if budget > 0:
                probed, deleted, done = _purge_user_buckets(
                    site,
                    now=now,
                    keep=timedelta(days=days[retention_specs.RAW_EVENTS]),
                    budget=budget,
                )
                budget -= probed
                run.probed += probed
                run.deleted += deleted
                counts[USER_BUCKETS] = counts.get(USER_BUCKETS, 0) + deleted
                run.more_left = run.more_left or not done
    except Exception as exc:
        run.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        run.by_table = counts
        run.finished_at = timezone.now()
        run.save()
    return run


def purge_queue(*, requested_by: int | None) -> str:
    """Queue a purge run for a worker; return its task id (its result says how it went)."""
    return str(current_app.send_task(TASK, kwargs={"requested_by": requested_by}).id)

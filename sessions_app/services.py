"""Writes: every change to stored state goes through a function here (or the collector writer)."""

from __future__ import annotations

import heapq
import json
import random
import secrets
import socket
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cassandra.concurrent import execute_concurrent_with_args
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from sessions_app import aggregation, buckets, retention, selectors, series
from sessions_app.cassandra import (
    execute_windowed,
    prepare,
    replica_batches,
    session,
)
from sessions_app.models import (
    AdminAction,
    BucketState,
    PurgeRun,
    PurgeWatermark,
    RetentionPolicy,
    Site,
    UserBucketWidth,
)
from sessions_app.models.sites import new_site_key

UPSERT_HEARTBEAT = """
INSERT INTO {ks}.pipeline_heartbeats (worker, beat_at, written_at) VALUES (?, ?, ?)
"""
ANY_SESSION = "SELECT site_id FROM {ks}.user_sessions LIMIT 1"


def heartbeat_record(*, beat_at: datetime, now: datetime, worker: str | None = None) -> str:
    """Record that a beat-scheduled task reached a worker and Cassandra; return the worker."""
    name = worker or socket.gethostname()
    statement = prepare(UPSERT_HEARTBEAT, idempotent=True, write=True)
    session().execute(statement, (name, buckets.as_utc(beat_at), buckets.as_utc(now)))
    return name


def site_create(*, name: str, origins: list[str], events_per_second: float = 10.0) -> Site:
    """Create a site with its allowed origins, a fresh tracker key and its shard count.

    The shard count keeps each hour partition of site_events_by_bucket inside the
    partition budget at the expected event rate (seed 003 sizing, seed 000 suffix).
    """
    shards = buckets.shards_for(
        writes_per_second=events_per_second,
        row_bytes=settings.SITE_EVENT_ROW_BYTES,
        width=buckets.Width.HOUR,
    )
    return Site.objects.create(name=name, allowed_origins=origins, event_shards=shards)


@dataclass(frozen=True)
class AdminLogin:
    username: str
    password: str | None  # None: set earlier and not known here
    created: bool


def admin_ensure(*, username: str = "admin", password_file: Path) -> AdminLogin:
    """Create the admin login once; never change an existing user's password.

    The password comes from CLICKSTREAM_ADMIN_PASSWORD, else it is generated and
    kept in password_file (mode 0600) so later runs can print it again.
    """
    users = get_user_model()
    known = settings.CLICKSTREAM_ADMIN_PASSWORD or (
        password_file.read_text().strip() if password_file.exists() else ""
    )
    if users.objects.filter(username=username).exists():
        return AdminLogin(username, known or None, created=False)
    password = known or secrets.token_urlsafe(12)
    users.objects.create_superuser(username=username, email="", password=password)
    if not settings.CLICKSTREAM_ADMIN_PASSWORD:
        password_file.parent.mkdir(parents=True, exist_ok=True)
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
    return AdminLogin(username, password, created=True)


def keyspace_is_empty() -> bool:
    """Return True if no session has been written yet (management use: a range scan)."""
    return session().execute(prepare(ANY_SESSION)).one() is None


DEMO_PAGES = [
    ("/", "Home · Demo Shop"),
    ("/products", "All products · Demo Shop"),
    ("/products/espresso-machine", "Espresso machine · Demo Shop"),
    ("/products/grinder", "Burr grinder · Demo Shop"),
    ("/products/kettle", "Gooseneck kettle · Demo Shop"),
    ("/cart", "Cart · Demo Shop"),
    ("/checkout", "Checkout · Demo Shop"),
    ("/about", "About us · Demo Shop"),
]
DEMO_ELEMENTS: list[dict[str, Any]] = [
    {
        "tag": "a",
        "text": "Products",
        "selector": "nav > a.products",
        "href": "https://demo.clickstream.local/products",
    },
    {
        "tag": "button",
        "id": "add-to-cart",
        "classes": ["btn", "primary"],
        "text": "Add to cart",
        "selector": "#add-to-cart",
    },
    {
        "tag": "button",
        "id": "checkout",
        "classes": ["btn"],
        "text": "Checkout",
        "selector": "#checkout",
    },
    {
        "tag": "a",
        "text": "About",
        "selector": "footer > a",
        "href": "https://demo.clickstream.local/about",
    },
]
DEMO_AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
]


def _visit_events(
    rng: random.Random,
    *,
    anonymous_id: str,
    user_id: str | None,
    start: datetime,
    origin: str,
    tag: str,
) -> list[dict[str, Any]]:
    """Return one visit's events in /collect format: page views, clicks, maybe a purchase."""
    events: list[dict[str, Any]] = []
    ts = start
    path, title = DEMO_PAGES[0]
    for step in range(rng.randint(2, 14)):
        if step and rng.random() < 0.45:
            kind, element = "click", dict(rng.choice(DEMO_ELEMENTS))
        else:
            kind, element = "pageview", None
            path, title = rng.choice(DEMO_PAGES) if step else DEMO_PAGES[0]
        event: dict[str, Any] = {
            "id": f"{tag}-{step}",
            "type": kind,
            "ts": ts.isoformat(),
            "anonymous_id": anonymous_id,
            "url": origin + path,
            "title": title,
        }
        if element:
            event["element"] = element
        if user_id:
            event["user_id"] = user_id
        events.append(event)
        ts += timedelta(seconds=rng.randint(3, 240))
    if rng.random() < 0.15:
        events.append(
            {
                "id": f"{tag}-buy",
                "type": "custom",
                "name": settings.CONVERSION_EVENT,
                "ts": ts.isoformat(),
                "anonymous_id": anonymous_id,
                "url": origin + "/checkout",
                "props": {"value": rng.choice([19, 49, 129, 399]), "currency": "EUR"},
                **({"user_id": user_id} if user_id else {}),
            }
        )
    return events


def clicks_generate(
    *,
    site: Site,
    users: int,
    days: int,
    now: datetime,
    seed: int = 7,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Send realistic visits for site over the last `days` days through the collector.

    Each visit is one batch arriving a few seconds after its last event, so it
    goes through the same validation, sessionization and write path as the
    tracker. Deterministic for a given seed and now: re-running only produces
    duplicates. Returns the number of events accepted.
    """
    from sessions_app.collector.pipeline import Source, events_record

    rng = random.Random(seed)  # noqa: S311 - demo data, not security
    now = buckets.as_utc(now)
    origin = "https://demo.clickstream.local"
    accepted = 0
    for index in range(users):
        anonymous_id = f"anon-{seed}-{index:05d}"
        user_id = f"user{index:05d}@example.com" if index % 3 == 0 else None
        agent = rng.choice(DEMO_AGENTS)
        ip = f"198.51.100.{rng.randint(1, 254)}"
        starts = sorted(
            now - timedelta(seconds=rng.randint(600, days * 86_400))
            for _ in range(rng.randint(1, 2 * days))
        )
        for number, start in enumerate(starts):
            events = _visit_events(
                rng,
                anonymous_id=anonymous_id,
                user_id=user_id,
                start=start,
                origin=origin,
                tag=f"g{seed}-{index}-{number}",
            )
            last = datetime.fromisoformat(events[-1]["ts"])
            source = Source(
                site=site,
                received_at=min(now, last + timedelta(seconds=2)),
                user_agent=agent,
                ip=ip,
                name="generate_clicks",
            )
            accepted += events_record(source=source, raw_events=events).accepted
        if progress:
            progress(1)
    return accepted


def demo_site_ensure(*, origins: list[str]) -> tuple[Site, bool]:
    """Return the demo site, creating it on first use."""
    site = Site.objects.filter(name="Demo Shop").first()
    if site is not None:
        return site, False
    return site_create(name="Demo Shop", origins=origins), True


# --- bucket states and sealing --------------------------------------------------

UPSERT_AGGREGATE = """
INSERT INTO {ks}.bucket_aggregates
  (site_id, granularity, bucket, events, by_type, by_name, sessions_started, users, bounces,
   conversions, durations, top_pages, top_clicks, rows_read, sealed_at, users_sketch)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?
"""
UPSERT_BUCKET_USERS = """
INSERT INTO {ks}.bucket_users (site_id, granularity, bucket, user_key, counts)
VALUES (?, ?, ?, ?, ?) USING TTL ?
"""
UPSERT_ROLLING_COUNT = """
INSERT INTO {ks}.rolling_counts (site_id, user_key, granularity, period, event_key, bucket, count)
VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ?
"""
_known_open: dict[tuple[object, datetime], int] = {}  # (site, hour) -> shards recorded
# Resolutions and what each is built from: hours from raw events, days from sealed
# hours, months from sealed days (seed 003 multi-resolution).
ROLLUP_CHAIN = ("hour", "day", "month")
CHILD = {"day": "hour", "month": "day"}
EVENT_TYPES = ("pageview", "click", "custom")
# Users (one row and map each) per unlogged batch of a bucket's bucket_users rows.
COUNT_BATCH_USERS = 100


def _ttl(granularity: str) -> int:
    return retention.ttl_seconds(retention.aggregate_key(granularity))


def _metric_points(
    site_id: object, granularity: str, bucket: datetime, result: aggregation.Aggregates
) -> list[tuple[str, datetime, float]]:
    """Return the series points of one bucket (seed 004 keys: metric + sorted tags)."""
    values: dict[str, float] = {
        "events": result.events,
        "sessions_started": result.sessions_started,
        "users": result.users,
        "bounces": result.bounces,
        "conversions": result.conversions,
    }
    for kind in EVENT_TYPES:
        values[f"events:{kind}"] = result.by_type.get(kind, 0)
    tags = {"resolution": granularity, "site": str(site_id)}
    return [
        (
            series.series_key(
                name.split(":")[0],
                {**tags, **({"type": name.split(":")[1]} if ":" in name else {})},
            ),
            bucket,
            value,
        )
        for name, value in values.items()
    ]


def bucket_states_touch(*, site: Site, hours: dict[datetime, tuple[int, int]]) -> None:
    """Record that events arrived for these hour buckets ({hour: (late events, shards)}).

    A new bucket becomes `open` with the shards the batch used; a batch that used
    more shards raises the count (never lowers it). Both are cached per process.
    Late events for a sealed bucket reopen it and are counted, so the sweep reseals it.
    """
    for hour, (late, shards) in hours.items():
        key = (site.id, hour)
        if _known_open.get(key, 0) < shards:
            state, created = BucketState.objects.get_or_create(
                site=site, granularity="hour", bucket=hour, defaults={"shards": shards}
            )
            if not created and state.shards < shards:
                BucketState.objects.filter(pk=state.pk).update(shards=Greatest(F("shards"), shards))
            _known_open[key] = max(shards, state.shards)
        if late:
            # The hour and the day and month built from it all change.
            for granularity in ROLLUP_CHAIN:
                start = buckets.floor(hour, granularity)
                BucketState.objects.filter(site=site, granularity=granularity, bucket=start).update(
                    late_events=F("late_events") + late, version=F("version") + 1
                )
                BucketState.objects.filter(
                    site=site,
                    granularity=granularity,
                    bucket=start,
                    state=BucketState.SEALED,
                ).update(state=BucketState.REOPENED)


def _aggregates_write(
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    result: aggregation.Aggregates,
    now: datetime,
    *,
    counts: bool = True,
) -> None:
    """Overwrite a bucket's aggregate row, series points and (unless `counts` is
    False: written already) its per-user counts, all in one window.

    Every value is computed, never added, so a second or concurrent seal writes
    the same cells.
    """
    ttl = _ttl(granularity)
    work: list[tuple[Any, Any]] = [
        (
            prepare(UPSERT_AGGREGATE, idempotent=True, write=True),
            (
                site_id,
                granularity,
                bucket,
                result.events,
                result.by_type,
                result.by_name,
                result.sessions_started,
                result.users,
                result.bounces,
                result.conversions,
                result.durations,
                json.dumps(result.top_pages),
                json.dumps(result.top_clicks),
                result.rows_read,
                buckets.as_utc(now),
                result.users_sketch,
                ttl,
            ),
        )
    ]
    if counts:
        work.extend(_user_counts_work(site_id, granularity, bucket, result.user_counts, ttl))
    execute_windowed(work)
    series.points_write(_metric_points(site_id, granularity, bucket, result), ttl=ttl)


UserCounts = dict[tuple[str, str], int]  # (user key, event key) -> events


def _user_counts_work(
    site_id: uuid.UUID, granularity: str, bucket: datetime, user_counts: UserCounts, ttl: int
) -> list[tuple[Any, None]]:
    """The writes that overwrite a bucket's per-user counts in both tables.

    bucket_users (site partition, what the parent's rollup reads) and
    rolling_counts (user partition, what the rolling-counter reads use). Binding
    needs no Django database (ttl comes in), so a seal runs it on pool threads.
    """
    return _site_counts_work(site_id, granularity, bucket, user_counts, ttl) + _rolling_counts_work(
        site_id, granularity, bucket, user_counts, ttl
    )


def _site_counts_work(
    site_id: uuid.UUID, granularity: str, bucket: datetime, user_counts: UserCounts, ttl: int
) -> list[tuple[Any, None]]:
    """bucket_users' rows: one partition, a row (and map) per user, overwritten whole;
    COUNT_BATCH_USERS rows an unlogged batch."""
    by_user: dict[str, dict[str, int]] = {}
    for (user, key), n in user_counts.items():
        counts = by_user.get(user)
        if counts is None:
            counts = by_user[user] = {}
        counts[key] = n
    rows = [(site_id, granularity, bucket, user, counts, ttl) for user, counts in by_user.items()]
    return replica_batches(
        prepare(UPSERT_BUCKET_USERS, idempotent=True, write=True),
        (
            rows[offset : offset + COUNT_BATCH_USERS]
            for offset in range(0, len(rows), COUNT_BATCH_USERS)
        ),
        partitions_per_batch=1,
        rows_per_batch=COUNT_BATCH_USERS,
    )


def _rolling_counts_work(
    site_id: uuid.UUID, granularity: str, bucket: datetime, user_counts: UserCounts, ttl: int
) -> list[tuple[Any, None]]:
    """rolling_counts' rows: a partition per user, up to 10 that share their replicas a
    batch (cassandra.replica_batches)."""
    period = buckets.rolling_period(granularity, bucket)
    by_user: dict[str, list[tuple[Any, ...]]] = {}
    for (user, key), n in user_counts.items():
        by_user.setdefault(user, []).append(
            (site_id, user, granularity, period, key, bucket, n, ttl)
        )
    return replica_batches(
        prepare(UPSERT_ROLLING_COUNT, idempotent=True, write=True), by_user.values()
    )


def bucket_seal(*, site_id: uuid.UUID | str, hour: datetime, now: datetime) -> bool:
    """Compute and overwrite one hour's aggregates, then mark it sealed; idempotent.

    Merges the tallies the applier wrote beside each batch of the hour (one row per
    batch instead of one per event), or, when the hour is not covered by tallies
    (BucketState.partials off, or none written), streams the hour's raw rows from
    every shard. Then it reads the summaries of the sessions that started in the
    hour, writes everything, then flips the state only if no late event (or
    erasure) bumped its version meanwhile. Returns False in that case (the bucket
    stays reopened and the next sweep seals it again).
    """
    hour = buckets.floor(hour, buckets.Width.HOUR)
    state = BucketState.objects.select_related("site").get(
        site_id=site_id, granularity="hour", bucket=hour
    )
    version = state.version
    site = state.site
    end = buckets.next_start(hour, buckets.Width.HOUR)
    # Every shard the hour was ever written with, whatever the site uses now.
    counted = (
        selectors.bucket_partials(site_id=site.id, hour=hour, shards=state.shards)
        if state.partials
        else None
    )
    if counted is None:  # no tallies cover the hour: its raw rows do
        rows = selectors.site_bucket_rows(site_id=site.id, hour=hour, shards=state.shards)
        counted = aggregation.tally(rows)
    result, spans = aggregation.finish(counted, conversion_event=settings.CONVERSION_EVENT)

    # The per-user counts need no session summaries. Each table's are bound and
    # written on a thread of their own meanwhile, so the node has the first batches
    # and the summary reads to serve while the rest are bound. The threads touch
    # Cassandra only: the TTL (a retention policy, in SQL) is read here.
    ttl = _ttl("hour")

    def counts_write(work: Callable[..., list[tuple[Any, None]]]) -> None:
        execute_windowed(work(site.id, "hour", hour, result.user_counts, ttl))

    with ThreadPoolExecutor(2, thread_name_prefix="seal-counts") as pool:
        counts = [pool.submit(counts_write, w) for w in (_site_counts_work, _rolling_counts_work)]
        sessions = selectors.session_summaries(site_id=site.id, start=hour, end=end, spans=spans)
        aggregation.count_sessions(result, sessions, start=hour, end=end)
        # Nothing reads a bucket's rows as sealed before its state says so (below).
        _aggregates_write(site.id, "hour", hour, result, now, counts=False)
        user_widths_adapt(site=site, hour_counts=result.user_counts, now=now)
        for written in counts:
            written.result()
    BucketState.objects.get_or_create(
        site=site, granularity="day", bucket=buckets.floor(hour, "day")
    )
    updated = BucketState.objects.filter(pk=state.pk, version=version).update(
        state=BucketState.SEALED, seals=F("seals") + 1, sealed_at=now
    )
    return bool(updated)


def bucket_rollup(
    *, site_id: uuid.UUID | str, granularity: str, bucket: datetime, now: datetime
) -> bool:
    """Seal a day from its sealed hours (or a month from its sealed days); idempotent.

    Reads the children's aggregate rows and per-user counts, merges them
    (counts add up, unique users from the merged sketches) and overwrites the
    parent's. Returns False if a late event arrived meanwhile.
    """
    start = buckets.floor(bucket, granularity)
    state = BucketState.objects.select_related("site").get(
        site_id=site_id, granularity=granularity, bucket=start
    )
    version, site = state.version, state.site
    end = buckets.next_start(start, granularity)
    child = CHILD[granularity]
    parts = selectors.aggregates_range(site_id=site.id, granularity=child, start=start, end=end)
    children = [b for b, _ in parts]
    result = (
        aggregation.aggregates_merge([a for _, a in parts]) if parts else aggregation.Aggregates()
    )
    result.user_counts = selectors.bucket_user_counts(
        site_id=site.id, granularity=child, bucket_starts=children
    )
    _aggregates_write(site.id, granularity, start, result, now)
    if granularity == "day":
        BucketState.objects.get_or_create(
            site=site, granularity="month", bucket=buckets.floor(start, "month")
        )
    updated = BucketState.objects.filter(pk=state.pk, version=version).update(
        state=BucketState.SEALED, seals=F("seals") + 1, sealed_at=now
    )
    return bool(updated)


def buckets_due(*, now: datetime, limit: int = 500) -> list[tuple[uuid.UUID, str, datetime]]:
    """Return (site id, granularity, bucket) of buckets ready to seal.

    An hour is due once its end + ALLOWED_LATENESS has passed; a day or month once
    it has ended the same way and none of its children is still unsealed.
    """
    now = buckets.as_utc(now)
    unsealed = [BucketState.OPEN, BucketState.REOPENED]
    due: list[tuple[uuid.UUID, str, datetime]] = []
    for granularity in ROLLUP_CHAIN:
        candidates = (
            BucketState.objects.filter(
                granularity=granularity,
                state__in=unsealed,
                bucket__lte=now - settings.ALLOWED_LATENESS - timedelta(hours=1),
            )
            .order_by("bucket")
            .values_list("site_id", "bucket")[:limit]
        )
        for site_id, start in candidates:
            end = buckets.next_start(start, granularity)
            if end + settings.ALLOWED_LATENESS > now:
                continue
            if (
                granularity != "hour"
                and BucketState.objects.filter(
                    site_id=site_id,
                    granularity=CHILD[granularity],
                    state__in=unsealed,
                    bucket__gte=start,
                    bucket__lt=end,
                ).exists()
            ):
                continue
            due.append((site_id, granularity, start))
    return due[:limit]


# --- audit log, sites and retention (admin actions) -------------------------------


def admin_action_record(
    *, actor: Any, action: str, target: str, details: dict[str, Any] | None = None
) -> AdminAction:
    """Append one entry to the audit log: who did what to which target, and when."""
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    return AdminAction.objects.create(
        actor=user,
        actor_name=user.get_username() if user is not None else "system",
        action=action,
        target=target[:200],
        details=details or {},
    )


def _site_target(site: Site) -> str:
    return f"site {site.name} ({site.id})"


def site_saved_record(*, site: Site, actor: Any, created: bool, changed: list[str]) -> None:
    """Audit a site created or edited in the admin (the form saved it)."""
    admin_action_record(
        actor=actor,
        action="site.create" if created else "site.change",
        target=_site_target(site),
        details={
            "changed": changed,
            "allowed_origins": list(site.allowed_origins),
            "enabled": site.enabled,
            "event_shards": site.event_shards,
        },
    )


def _forget_site_key(key: str) -> None:
    # This process's collector cache; other processes forget within SITE_CACHE_SECONDS.
    cache.delete(f"site-key:{key}")


def site_key_rotate(*, site: Site, actor: Any) -> str:
    """Give a site a fresh tracker key; the old one stops working (after ≤ 30 s of caches)."""
    old = site.key
    site.key = new_site_key()
    site.save(update_fields=["key"])
    _forget_site_key(old)
    admin_action_record(
        actor=actor,
        action="site.rotate_key",
        target=_site_target(site),
        details={"old_key": old, "new_key": site.key},
    )
    return site.key


def site_disable(*, site: Site, actor: Any) -> None:
    """Stop accepting events for a site (its key answers 401); stored data is kept."""
    site.enabled = False
    site.save(update_fields=["enabled"])
    _forget_site_key(site.key)
    admin_action_record(actor=actor, action="site.disable", target=_site_target(site))


def retention_set(*, key: str, days: int, actor: Any) -> RetentionPolicy:
    """Set a retention policy; new writes use it, rows already written keep their TTL.

    Raises retention.RetentionError (with the bound and the reason) for a value
    outside the policy's bounds.
    """
    retention.validate_days(key, days)
    with transaction.atomic():
        current = RetentionPolicy.objects.select_for_update().filter(key=key).first()
        previous = current.days if current else retention.SPECS[key].default_days()
        policy, _ = RetentionPolicy.objects.update_or_create(
            key=key, defaults={"days": days, "updated_by": actor}
        )
        admin_action_record(
            actor=actor,
            action="retention.set",
            target=f"retention {key}",
            details={"days": days, "previous": previous},
        )
    retention.invalidate()
    return policy


# --- purge of expired bucket partitions (seed 001: drop whole partitions) ---------

PROBE_SITE_EVENTS = """
SELECT event_id FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?
LIMIT 1
"""
DELETE_SITE_EVENTS = """
DELETE FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?
"""
PROBE_PARTIALS = """
SELECT batch_id FROM {ks}.bucket_partials WHERE site_id = ? AND bucket = ? AND shard = ? LIMIT 1
"""
DELETE_PARTIALS = "DELETE FROM {ks}.bucket_partials WHERE site_id = ? AND bucket = ? AND shard = ?"
PROBE_LOG = """
SELECT batch_id FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ? LIMIT 1
"""
DELETE_LOG = "DELETE FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ?"
PROBE_FAILED = "SELECT failed_id FROM {ks}.failed_events WHERE site_id = ? AND day = ? LIMIT 1"
DELETE_FAILED = "DELETE FROM {ks}.failed_events WHERE site_id = ? AND day = ?"
PROBE_BUCKET_USERS = """
SELECT user_key FROM {ks}.bucket_users WHERE site_id = ? AND granularity = ? AND bucket = ?
LIMIT 1
"""
DELETE_BUCKET_USERS = """
DELETE FROM {ks}.bucket_users WHERE site_id = ? AND granularity = ? AND bucket = ?
"""
# The legacy per-(user, key) rows of buckets sealed before bucket_users.
PROBE_USER_COUNTS = """
SELECT user_key FROM {ks}.bucket_user_counts WHERE site_id = ? AND granularity = ? AND bucket = ?
LIMIT 1
"""
DELETE_USER_COUNTS = """
DELETE FROM {ks}.bucket_user_counts WHERE site_id = ? AND granularity = ? AND bucket = ?
"""
PURGE_CONCURRENCY = 64


@dataclass(frozen=True)
class PurgeTarget:
    """A table whose partitions are (site, bucket[, shard]): their keys can be named."""

    name: str  # the watermark's table name
    policy: str
    width: buckets.Width
    probe: str
    delete: str
    keys: Callable[[Site, datetime], list[tuple[Any, ...]]]
    # Bucketed by receipt time (never before the site existed), not by event time.
    by_receipt: bool = False


def _shards_of(site: Site, hour: datetime) -> int:
    """Every shard an hour of site events may use: what it recorded, or the site's now."""
    recorded = selectors.hour_shards(site_id=site.id, hours=[hour]).get(hour, 1)
    return max(site.event_shards, recorded)


def _count_keys(granularity: str) -> Callable[[Site, datetime], list[tuple[Any, ...]]]:
    return lambda site, bucket: [(site.id, granularity, bucket)]


PURGE_TARGETS = (
    PurgeTarget(
        "site_events_by_bucket",
        retention.RAW_EVENTS,
        buckets.Width.HOUR,
        PROBE_SITE_EVENTS,
        DELETE_SITE_EVENTS,
        lambda site, bucket: [
            (site.id, bucket, shard) for shard in range(_shards_of(site, bucket))
        ],
    ),
    PurgeTarget(
        "bucket_partials",
        retention.RAW_EVENTS,
        buckets.Width.HOUR,
        PROBE_PARTIALS,
        DELETE_PARTIALS,
        lambda site, bucket: [
            (site.id, bucket, shard) for shard in range(_shards_of(site, bucket))
        ],
    ),
    PurgeTarget(
        "transaction_log",
        retention.TRANSACTION_LOG,
        buckets.Width.TEN_MINUTES,
        PROBE_LOG,
        DELETE_LOG,
        lambda site, bucket: [(site.id, bucket, shard) for shard in range(settings.TXLOG_SHARDS)],
        by_receipt=True,
    ),
    PurgeTarget(
        "failed_events",
        retention.FAILED_EVENTS,
        buckets.Width.DAY,
        PROBE_FAILED,
        DELETE_FAILED,
        lambda site, bucket: [(site.id, bucket)],
        by_receipt=True,
    ),
    *(
        PurgeTarget(
            f"{table}:{granularity}",
            retention.aggregate_key(granularity),
            buckets.Width(granularity),
            probe,
            delete,
            _count_keys(granularity),
        )
        for table, probe, delete in (
            ("bucket_users", PROBE_BUCKET_USERS, DELETE_BUCKET_USERS),
            ("bucket_user_counts", PROBE_USER_COUNTS, DELETE_USER_COUNTS),
        )
        for granularity in ROLLUP_CHAIN
    ),
)


def _purge_start(site: Site, target: PurgeTarget) -> datetime:
    mark = PurgeWatermark.objects.filter(site=site, table=target.name).first()
    if mark is not None:
        return buckets.as_utc(mark.purged_through)
    # Nothing of a site is older than its creation (minus the oldest event accepted,
    # for tables bucketed by event time).
    earliest = buckets.as_utc(site.created_at)
    if not target.by_receipt:
        earliest -= settings.MAX_EVENT_AGE + timedelta(days=1)
    return buckets.floor(earliest, target.width)


def _purge_target(
    site: Site, target: PurgeTarget, *, now: datetime, keep: timedelta, budget: int
) -> tuple[int, int, bool]:
    """Delete a site's partitions of target wholly older than keep; return (probed, deleted, done).

    Only buckets that ended at or before now - keep are named, so a partition
    holding anything younger than the policy is never touched. Each key is probed
    first (LIMIT 1): a partition already emptied by its TTL gets no tombstone.
    """
    start = _purge_start(site, target)
    cutoff = buckets.fully_expired_before(now, keep, target.width)
    if start >= cutoff:
        return 0, 0, True
    keys: list[tuple[Any, ...]] = []
    through, done = start, True
    for bucket in buckets.iter_buckets(start, cutoff, target.width):
        named = target.keys(site, bucket)
        if keys and len(keys) + len(named) > budget:
            done = False
            break
        keys.extend(named)
        through = buckets.next_start(bucket, target.width)
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
    current = session()
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


# Per-user partitions of user_events_by_bucket cannot be listed without a scan, but
# the sealed per-user counts of the same time (bucket_users, site-partitioned; the
# legacy bucket_user_counts for buckets sealed before it) name every user who had
# events in it: those are the keys to delete.
USER_BUCKETS = "user_events_by_bucket"
SELECT_BUCKET_USERS = """
SELECT user_key FROM {ks}.bucket_users
WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key > ?
"""
SELECT_LEGACY_BUCKET_USERS = """
SELECT user_key FROM {ks}.bucket_user_counts
WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key > ?
"""
BUCKET_USER_SOURCES = (SELECT_BUCKET_USERS, SELECT_LEGACY_BUCKET_USERS)
PROBE_USER_EVENTS = """
SELECT event_id FROM {ks}.user_events_by_bucket WHERE site_id = ? AND user_key = ? AND bucket = ?
LIMIT 1
"""
DELETE_USER_EVENTS = """
DELETE FROM {ks}.user_events_by_bucket WHERE site_id = ? AND user_key = ? AND bucket = ?
"""


def _bucket_users(site: Site, bucket: datetime, width: buckets.Width, after: str) -> Iterator[str]:
    """Yield each user with events in a user bucket once, in key order, after `after`."""
    streams = [
        (row["user_key"] for row in session().execute(prepare(cql), (site.id, g.value, b, after)))
        for g, b in buckets.count_buckets(bucket, width)
        for cql in BUCKET_USER_SOURCES
    ]
    previous = None
    # Users repeat across the buckets and tables (and legacy rows are per event key).
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
    width = buckets.parse_width(settings.USER_EVENTS_BUCKET)
    mark = PurgeWatermark.objects.filter(site=site, table=USER_BUCKETS).first()
    if mark is not None:
        start, after = buckets.as_utc(mark.purged_through), mark.cursor
    else:
        earliest = buckets.as_utc(site.created_at) - settings.MAX_EVENT_AGE - timedelta(days=1)
        start, after = buckets.floor(earliest, width), ""
    cutoff = buckets.fully_expired_before(now, keep, width)
    if start >= cutoff:
        return 0, 0, True
    keys: list[tuple[Any, ...]] = []
    through, cursor, reads, done = start, after, 0, True
    for bucket in buckets.iter_buckets(start, cutoff, width):
        sources = buckets.count_buckets(bucket, width)
        if _counts_unsealed(site, sources):
            break  # its users are not final yet: wait for the seal
        partitions = len(sources) * len(BUCKET_USER_SOURCES)
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
        through, cursor = buckets.next_start(bucket, width), ""
        if reads + len(keys) >= budget:
            done = through >= cutoff
            break
    deleted = _probe_and_delete(PROBE_USER_EVENTS, DELETE_USER_EVENTS, keys)
    if (through, cursor) != (start, after):
        _watermark_advance(site, USER_BUCKETS, through, cursor)
    return reads + len(keys), deleted, done


def _counts_unsealed(site: Site, sources: list[tuple[buckets.Width, datetime]]) -> bool:
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
    now = buckets.as_utc(now)
    budget = settings.PURGE_MAX_PARTITIONS if limit is None else limit
    run = PurgeRun.objects.create(trigger=trigger, requested_by=requested_by)
    days = retention.policy_days()
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
                    site, now=now, keep=timedelta(days=days[retention.RAW_EVENTS]), budget=budget
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


# --- hot partitions: shard counts from the observed rate (seed 000, seed 003) --------

SHARD_HEADROOM = 2.0  # size for twice the busiest recent hour


def event_shards_adjust(*, now: datetime, hours: int = 24) -> dict[str, tuple[int, int]]:
    """Set each site's site_events_by_bucket shard count from its busiest recent hour.

    Rate = accepted events of the busiest of the last `hours` hours (ingest_stats)
    times SHARD_HEADROOM; shards = buckets.shards_for(rate, SITE_EVENT_ROW_BYTES, hour)
    against the 100 MB budget. Every hour records the shards it was written with
    (BucketState.shards), so changing the count never loses or doubles a read.
    Returns {site id: (old, new)} for the sites that changed; each change is audited.
    """
    now = buckets.as_utc(now)
    changed: dict[str, tuple[int, int]] = {}
    recent = buckets.buckets_between(now - timedelta(hours=hours), now, buckets.Width.HOUR)
    for site in Site.objects.filter(enabled=True):
        peak = max(
            (selectors.ingest_counts(site_id=site.id, hour=h)["accepted"] for h in recent),
            default=0,
        )
        if not peak:
            continue
        wanted = buckets.shards_for(
            writes_per_second=peak / 3600 * SHARD_HEADROOM,
            row_bytes=settings.SITE_EVENT_ROW_BYTES,
            width=buckets.Width.HOUR,
        )
        if wanted != site.event_shards:
            changed[str(site.id)] = (site.event_shards, wanted)
            Site.objects.filter(pk=site.pk).update(event_shards=wanted)
            admin_action_record(
                actor=None,
                action="site.shards",
                target=_site_target(site),
                details={"from": site.event_shards, "to": wanted, "peak_hour_events": peak},
            )
    return changed


# --- adaptive user bucket widths (seed 003 dynamic sizing) ---------------------------


def user_widths_adapt(
    *, site: Site, hour_counts: dict[tuple[str, str], int], now: datetime
) -> list[str]:
    """Give users whose partitions would outgrow the budget hour buckets from their next bucket.

    A user's events in this hour, kept up for a whole bucket of their current
    width, times USER_EVENT_ROW_BYTES (seed 003: writes x duration x row size) is
    compared with USER_PARTITION_BUDGET_BYTES. The change takes effect at the next
    bucket boundary at least an hour away, so every process's cached history has it
    before the first write it affects. Returns the users moved.
    """
    now = buckets.as_utc(now)
    per_user: dict[str, int] = {}
    for (user, _), n in hour_counts.items():
        per_user[user] = per_user.get(user, 0) + n
    histories = selectors.user_widths(site.id)
    moved = []
    for user, events in per_user.items():
        later = now + timedelta(hours=1)
        width = buckets.width_at(later, settings.USER_EVENTS_BUCKET, histories.get(user, []))
        if width is buckets.Width.HOUR or width is buckets.Width.TEN_MINUTES:
            continue  # already as fine as user buckets go
        size = buckets.partition_bytes(
            writes_per_second=events / 3600, row_bytes=settings.USER_EVENT_ROW_BYTES, width=width
        )
        if size <= settings.USER_PARTITION_BUDGET_BYTES:
            continue
        effective = buckets.next_start(later, width)
        _, created = UserBucketWidth.objects.get_or_create(
            site=site,
            user_key=user,
            effective_from=effective,
            defaults={
                "width": buckets.Width.HOUR.value,
                "reason": f"{events} events in an hour: ~{size / 1e6:.0f} MB per {width.value}",
            },
        )
        if created:
            moved.append(user)
    if moved:
        selectors.user_widths_forget(site.id)
    return moved

"""Adaptive per-user bucket widths: the history of each busy user's width and choosing the next."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings

from sessions_app.core import timebuckets
from sessions_app.core.timebuckets import (
    BucketRangeError,
    Width,
    as_utc,
    floor,
    iter_buckets,
    parse_width,
)
from sessions_app.models import (
    Site,
    UserBucketWidth,
)
from sessions_app.partitions import sizing


def width_at(
    ts: datetime, default: Width | str, changes: Sequence[tuple[datetime, Width]]
) -> Width:
    """Return the width in force at ts: the last change effective at or before it."""
    width = parse_width(default)
    ts = as_utc(ts)
    for effective_from, changed in changes:  # sorted by effective_from
        if as_utc(effective_from) <= ts:
            width = parse_width(changed)
    return width


def bucket_of(
    ts: datetime, default: Width | str, changes: Sequence[tuple[datetime, Width]]
) -> datetime:
    """Return the start of ts's bucket under a width history."""
    return floor(ts, width_at(ts, default, changes))


def buckets_with_history(
    start: datetime,
    end: datetime,
    default: Width | str,
    changes: Sequence[tuple[datetime, Width]],
    *,
    limit: int | None = None,
) -> list[datetime]:
    """Return the bucket starts covering [start, end) when the width changed over time.

    Each change applies from its effective time (a bucket boundary of the width
    before it, so old and new buckets never overlap); the range is split there and
    each part enumerated at its own width. The limit applies to the total.
    """
    start, end = as_utc(start), as_utc(end)
    cuts = [as_utc(t) for t, _ in changes if start < as_utc(t) < end]
    edges = [start, *cuts, end]
    result: list[datetime] = []
    for low, high in itertools.pairwise(edges):
        width = width_at(low, default, changes)
        for bucket in iter_buckets(low, high, width):
            if result and bucket <= result[-1]:
                continue  # the first bucket of a part may start before the cut
            if limit is not None and len(result) >= limit:
                raise BucketRangeError(
                    f"range {start.isoformat()}..{end.isoformat()} spans more than {limit} buckets"
                )
            result.append(bucket)
    return result


WIDTH_CACHE_SECONDS = 10.0


_width_cache: dict[
    uuid.UUID, tuple[float, dict[str, list[tuple[datetime, timebuckets.Width]]]]
] = {}


def user_widths(site_id: uuid.UUID) -> dict[str, list[tuple[datetime, timebuckets.Width]]]:
    """Return the width histories of a site's super-active users, cached per process.

    Changes take effect at least an hour after they are made, far longer than the
    cache lives, so every process writes and reads with the same history.
    """
    from sessions_app.models import UserBucketWidth

    cached = _width_cache.get(site_id)
    if cached is not None and time.monotonic() - cached[0] < WIDTH_CACHE_SECONDS:
        return cached[1]
    found: dict[str, list[tuple[datetime, timebuckets.Width]]] = {}
    rows = UserBucketWidth.objects.filter(site_id=site_id).order_by("effective_from")
    for user_key, width, effective_from in rows.values_list("user_key", "width", "effective_from"):
        found.setdefault(user_key, []).append(
            (timebuckets.as_utc(effective_from), timebuckets.parse_width(width))
        )
    _width_cache[site_id] = (time.monotonic(), found)
    return found


def user_widths_forget(site_id: uuid.UUID) -> None:
    _width_cache.pop(site_id, None)


def user_partitions(
    *, site_id: uuid.UUID, user_key: str, start: datetime, end: datetime, limit: int | None = None
) -> list[datetime]:
    """Return the user_events_by_bucket partitions (bucket starts) holding [start, end)."""
    return buckets_with_history(
        start,
        end,
        settings.USER_EVENTS_BUCKET,
        user_widths(site_id).get(user_key, []),
        limit=limit,
    )


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
    now = timebuckets.as_utc(now)
    per_user: dict[str, int] = {}
    for (user, _), n in hour_counts.items():
        per_user[user] = per_user.get(user, 0) + n
    histories = user_widths(site.id)
    moved = []
    for user, events in per_user.items():
        later = now + timedelta(hours=1)
        width = width_at(later, settings.USER_EVENTS_BUCKET, histories.get(user, []))
        if width is timebuckets.Width.HOUR or width is timebuckets.Width.TEN_MINUTES:
            continue  # already as fine as user buckets go
        size = sizing.partition_bytes(
            writes_per_second=events / 3600, row_bytes=settings.USER_EVENT_ROW_BYTES, width=width
        )
        if size <= settings.USER_PARTITION_BUDGET_BYTES:
            continue
        effective = timebuckets.next_start(later, width)
        _, created = UserBucketWidth.objects.get_or_create(
            site=site,
            user_key=user,
            effective_from=effective,
            defaults={
                "width": timebuckets.Width.HOUR.value,
                "reason": f"{events} events in an hour: ~{size / 1e6:.0f} MB per {width.value}",
            },
        )
        if created:
            moved.append(user)
    if moved:
        user_widths_forget(site.id)
    return moved

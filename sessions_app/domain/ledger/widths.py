"""Adaptive per-user bucket widths: the history of each busy user's width and choosing the next."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta

from django.conf import settings

from sessions_app.domain.ledger import sizing
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import (
    Site,
    UserBucketWidth,
)

WIDTH_CACHE_SECONDS = 10.0

_width_cache: dict[
    uuid.UUID, tuple[float, dict[str, list[tuple[datetime, timebuckets.Width]]]]
] = {}


def user_widths(site_id: uuid.UUID) -> dict[str, list[tuple[datetime, timebuckets.Width]]]:
    """Return the width histories of a site's super-active users, cached per process.

    Changes take effect at least an hour after they are made, far longer than the
    cache lives, so every process writes and reads with the same history.
    """
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
    return timebuckets.buckets_with_history(
        start,
        end,
        settings.USER_EVENTS_BUCKET,
        user_widths(site_id).get(user_key, []),
        limit=limit,
    )


def user_widths_adapt(
    *, site: Site, hour_counts: dict[str, dict[str, int]], now: datetime
) -> list[str]:
    """Give users whose partitions would outgrow the budget hour buckets from their next bucket.

    A user's events in this hour, kept up for a whole bucket of their current
    width, times USER_EVENT_ROW_BYTES (the sizing formula: writes x duration x row size) is
    compared with USER_PARTITION_BUDGET_BYTES. The change takes effect at the next
    bucket boundary at least an hour away, so every process's cached history has it
    before the first write it affects. Returns the users moved.
    """
    now = timebuckets.as_utc(now)
    per_user = {user: sum(counts.values()) for user, counts in hour_counts.items()}
    histories = user_widths(site.id)
    moved = []
    later = now + timedelta(hours=1)
    usual = timebuckets.width_at(later, settings.USER_EVENTS_BUCKET, [])
    row_bytes, budget = settings.USER_EVENT_ROW_BYTES, settings.USER_PARTITION_BUDGET_BYTES
    sizes: dict[tuple[int, timebuckets.Width], float] = {}  # users share their event counts
    for user, events in per_user.items():
        history = histories.get(user)
        width = timebuckets.width_at(later, usual, history) if history else usual
        if width is timebuckets.Width.HOUR or width is timebuckets.Width.TEN_MINUTES:
            continue  # already as fine as user buckets go
        size = sizes.get((events, width))
        if size is None:
            size = sizes[events, width] = sizing.partition_bytes(
                writes_per_second=events / 3600, row_bytes=row_bytes, width=width
            )
        if size <= budget:
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

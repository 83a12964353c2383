"""Shards against hot partitions: how many a site's hour uses, adjusted from the observed rate."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings

from sessions_app.domain.ledger import quality, sizing
from sessions_app.domain.ledger.sites import admin_action_record, site_target
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import (
    BucketState,
    Site,
)


def hour_shards(*, site_id: uuid.UUID, hours: list[datetime]) -> dict[datetime, int]:
    """Return how many shards each of a site's hours was written with (BucketState)."""

    found: dict[datetime, int] = {}
    for start in range(0, len(hours), 500):
        rows = BucketState.objects.filter(
            site_id=site_id, granularity="hour", bucket__in=hours[start : start + 500]
        ).values_list("bucket", "shards")
        found.update((timebuckets.as_utc(b), n) for b, n in rows)
    return found


SHARD_HEADROOM = 2.0  # size for twice the busiest recent hour


def event_shards_adjust(*, now: datetime, hours: int = 24) -> dict[str, tuple[int, int]]:
    """Set each site's site_events_by_bucket shard count from its busiest recent hour.

    Rate = accepted events of the busiest of the last `hours` hours (ingest_stats)
    times SHARD_HEADROOM; shards = sizing.shards_for(rate, SITE_EVENT_ROW_BYTES, hour)
    against the 100 MB budget. Every hour records the shards it was written with
    (BucketState.shards), so changing the count never loses or doubles a read.
    Returns {site id: (old, new)} for the sites that changed; each change is audited.
    """
    now = timebuckets.as_utc(now)
    changed: dict[str, tuple[int, int]] = {}
    recent = timebuckets.buckets_between(now - timedelta(hours=hours), now, timebuckets.Width.HOUR)
    for site in Site.objects.filter(enabled=True):
        peak = max(
            (quality.ingest_counts(site_id=site.id, hour=h)["accepted"] for h in recent),
            default=0,
        )
        if not peak:
            continue
        wanted = sizing.shards_for(
            writes_per_second=peak / 3600 * SHARD_HEADROOM,
            row_bytes=settings.SITE_EVENT_ROW_BYTES,
            width=timebuckets.Width.HOUR,
        )
        if wanted != site.event_shards:
            changed[str(site.id)] = (site.event_shards, wanted)
            Site.objects.filter(pk=site.pk).update(event_shards=wanted)
            admin_action_record(
                actor=None,
                action="site.shards",
                target=site_target(site),
                details={"from": site.event_shards, "to": wanted, "peak_hour_events": peak},
            )
    return changed

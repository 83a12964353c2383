"""Roll sealed children up into a day or month bucket (aggregates, per-user counts, series)."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db.models import F

from sessions_app.aggregates import breakdowns, heatmap_rows, heatmaps, paths, stored, tally
from sessions_app.aggregates.seal import CHILD, aggregate_ttl, aggregates_write
from sessions_app.core import timebuckets
from sessions_app.core.cql import cassandra_session, prepare
from sessions_app.models import (
    BucketState,
)
from sessions_app.tables import funnel_days


def bucket_rollup(
    *, site_id: uuid.UUID | str, granularity: str, bucket: datetime, now: datetime
) -> bool:
    """Seal a day from its sealed hours (or a month from its sealed days); idempotent.

    Reads the children's aggregate rows and per-user counts, merges them
    (counts add up, unique users from the merged sketches) and overwrites the
    parent's. Returns False if a late event arrived meanwhile.
    """
    start = timebuckets.floor(bucket, granularity)
    state = BucketState.objects.select_related("site").get(
        site_id=site_id, granularity=granularity, bucket=start
    )
    version, site = state.version, state.site
    end = timebuckets.next_start(start, granularity)
    child = CHILD[granularity]
    parts = stored.aggregates_range(site_id=site.id, granularity=child, start=start, end=end)
    children = [b for b, _ in parts]
    result = tally.aggregates_merge([a for _, a in parts]) if parts else tally.Aggregates()
    result.user_counts = stored.bucket_user_counts(
        site_id=site.id, granularity=child, bucket_starts=children
    )
    aggregates_write(site.id, granularity, start, result, now)
    found = breakdowns.breakdowns_read(site_id=site.id, buckets=[(child, b) for b in children])
    breakdowns.breakdown_write(
        site_id=site.id,
        granularity=granularity,
        bucket=start,
        breakdown=breakdowns.breakdown_merge(list(found.values())) if found else {},
        ttl=aggregate_ttl(granularity),
        now=now,
    )
    found_paths = paths.buckets_read(site_id=site.id, buckets=[(child, b) for b in children])
    paths.paths_write(
        site_id=site.id,
        granularity=granularity,
        bucket=start,
        stored=paths.paths_merge(found_paths, begun_before=start) if found_paths else {},
        ttl=aggregate_ttl(granularity),
        now=now,
    )
    found_heat = heatmap_rows.buckets_read(site_id=site.id, buckets=[(child, b) for b in children])
    heatmap_rows.heat_write(
        site_id=site.id,
        granularity=granularity,
        bucket=start,
        stored=heatmaps.heat_merge(found_heat),
        ttl=aggregate_ttl(granularity),
        now=now,
    )
    if granularity == "day":  # funnels' parts of the day were scanned from older rows
        cassandra_session().execute(
            prepare(funnel_days.DELETE_DAY, idempotent=True, write=True), (site.id, start)
        )
        BucketState.objects.get_or_create(
            site=site, granularity="month", bucket=timebuckets.floor(start, "month")
        )
    updated = BucketState.objects.filter(pk=state.pk, version=version).update(
        state=BucketState.SEALED, seals=F("seals") + 1, sealed_at=now
    )
    return bool(updated)

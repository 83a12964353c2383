"""Sealing as the sweep would, for one site: every due hour then its days and months
(`seal_everything` at a given instant, `seal_due` until nothing is due), and one hour
sealed from its tallies or its raw rows."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.utils import timezone

from sessions_app.domain.aggregates import seal, states
from sessions_app.domain.aggregates.stored import aggregate_of, bucket_user_counts
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import BucketState, Site
from sessions_app.foundation.tables import bucket_aggregates


def seal_everything(site, now) -> None:
    for _ in range(3):  # hours, then their days, then months
        for site_id, granularity, start in states.buckets_due(now=now, limit=100_000):
            if site_id != site.id:
                continue
            if granularity == "hour":
                seal.bucket_seal(site_id=site.id, hour=start, now=now)
            else:
                seal.bucket_rollup(site_id=site.id, granularity=granularity, bucket=start, now=now)


def seal_due(site) -> None:
    """Seal every due hour of the site, then its days and months, as the sweep would."""
    for _ in range(6):
        due = [d for d in states.buckets_due(now=timezone.now()) if d[0] == site.id]
        if not due:
            return
        for site_id, granularity, bucket in due:
            if granularity == "hour":
                seal.bucket_seal(site_id=site_id, hour=bucket, now=timezone.now())
            else:
                seal.bucket_rollup(
                    site_id=site_id, granularity=granularity, bucket=bucket, now=timezone.now()
                )


def sealed(site: Site, hour: datetime, *, from_tallies: bool) -> tuple[dict, dict]:
    BucketState.objects.filter(site=site, granularity="hour", bucket=hour).update(
        partials=from_tallies
    )
    assert seal.bucket_seal(site_id=site.id, hour=hour, now=timezone.now())
    agg = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert agg is not None
    del agg["sealed_at"]
    counts = bucket_user_counts(site_id=site.id, granularity="hour", bucket_starts=[hour])
    return agg, counts


def bucket_aggregate(
    *, site_id: uuid.UUID, granularity: str, bucket: datetime
) -> dict[str, Any] | None:
    """Return the sealed aggregates of one bucket, or None if it was never sealed."""
    row = (
        cassandra_session()
        .execute(prepare(bucket_aggregates.SELECT_BUCKET), (site_id, granularity, bucket))
        .one()
    )
    if row is None:
        return None
    result = aggregate_of(row)
    return {
        **{k: v for k, v in vars(result).items() if k not in ("users_sketch", "user_counts")},
        "bucket": timebuckets.from_driver(row["bucket"]),
        "sealed_at": timebuckets.from_driver(row["sealed_at"]),
    }

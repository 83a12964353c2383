"""The one driver of the aggregate products (domain/aggregates/products.py): seal an hour, roll up
a day or a month, count a live hour; one version-checked commit marks a bucket sealed."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from django.db.models import F

from sessions_app.domain.aggregates import products as catalogue
from sessions_app.domain.aggregates.product import Product
from sessions_app.domain.aggregates.sources import Hour
from sessions_app.domain.goals.defs import site_goals
from sessions_app.domain.ledger import policies
from sessions_app.domain.ledger.widths import user_widths_adapt
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.garbage import collector_paused
from sessions_app.foundation.models import BucketState
from sessions_app.foundation.tables import funnel_days, retention_specs

# Resolutions and what each is built from: hours from raw events, days from sealed
# hours, months from sealed days (multi-resolution buckets).
ROLLUP_CHAIN = ("hour", "day", "month")
CHILD = {"day": "hour", "month": "day"}


def aggregate_ttl(granularity: str) -> int:
    return policies.ttl_seconds(retention_specs.aggregate_key(granularity))


def hour_count(source: Hour, products: tuple[Product[Any], ...] | None = None) -> dict[str, Any]:
    """Count one hour for each of `products` (None: every product) as {name: value},
    nothing written."""
    chosen = catalogue.PRODUCTS if products is None else products
    return {product.name: product.hour(source) for product in chosen}


def hour_live(
    *,
    site_id: uuid.UUID,
    hour: datetime,
    shards: int,
    products: tuple[Product[Any], ...] | None = None,
) -> dict[str, Any]:
    """Count an unsealed hour from its raw rows as its seal would, without storing it."""
    start = timebuckets.floor(hour, timebuckets.Width.HOUR)
    return hour_count(Hour(site_id=site_id, start=start, shards=shards), products)


def bucket_seal(*, site_id: uuid.UUID | str, hour: datetime, now: datetime) -> bool:
    """Count one hour for every product and overwrite its rows, then mark it sealed;
    idempotent.

    Folds the tallies the applier wrote beside each batch of the hour, or, when they do
    not cover it (BucketState.partials off, none written, an event in two), tallies the
    hour's raw rows from every shard it was written with. Returns False if a late event
    (or an erasure) moved the bucket's version meanwhile: it stays reopened and the next
    sweep seals it again.
    """
    with collector_paused():  # its heap is freed (by reference counting) when _hour_seal returns
        return _hour_seal(site_id=site_id, hour=hour, now=now)


def _hour_seal(*, site_id: uuid.UUID | str, hour: datetime, now: datetime) -> bool:
    hour = timebuckets.floor(hour, timebuckets.Width.HOUR)
    state = BucketState.objects.select_related("site").get(
        site_id=site_id, granularity="hour", bucket=hour
    )
    version, site = state.version, state.site
    source = Hour(
        site_id=site.id,
        start=hour,
        shards=state.shards,
        partials=state.partials,
        goals=site_goals(site.id),
    )
    values = _counted_and_written(source, granularity="hour", bucket=hour, now=now)
    user_widths_adapt(site=site, hour_counts=values[catalogue.USER_COUNTS.name], now=now)
    BucketState.objects.get_or_create(
        site=site, granularity="day", bucket=timebuckets.floor(hour, "day")
    )
    return bucket_commit(state, version=version, now=now)


def _counted_and_written(
    source: Hour, *, granularity: str, bucket: datetime, now: datetime
) -> dict[str, Any]:
    """Count every product of an hour and write each in turn, on this thread (the TTL, a
    policy in SQL, is read here); the hour's started sessions are read on another
    meanwhile, mostly waiting on the node. Writes are not put on pool threads: counting
    and binding hold the GIL, and threads that take turns at it made the seal slower
    (measured in docs/seal.md). Nothing reads a bucket's rows as sealed before its state
    says so."""
    ttl = aggregate_ttl(granularity)
    values: dict[str, Any] = {}
    with ThreadPoolExecutor(1, thread_name_prefix="seal-read") as pool:
        started = pool.submit(getattr, source, "started")
        for product in catalogue.PRODUCTS:
            value = values[product.name] = product.hour(source)
            product.write(
                site_id=source.site_id,
                granularity=granularity,
                bucket=bucket,
                value=value,
                ttl=ttl,
                now=now,
            )
        started.result()
    return values


def bucket_rollup(
    *, site_id: uuid.UUID | str, granularity: str, bucket: datetime, now: datetime
) -> bool:
    """Seal a day from its sealed hours (or a month from its sealed days); idempotent.

    Each product reads its children's stored values, merges them and overwrites the
    parent's. Returns False if a late event arrived meanwhile.
    """
    start = timebuckets.floor(bucket, granularity)
    state = BucketState.objects.select_related("site").get(
        site_id=site_id, granularity=granularity, bucket=start
    )
    version, site = state.version, state.site
    children = timebuckets.buckets_between(
        start, timebuckets.next_start(start, granularity), CHILD[granularity]
    )
    ttl = aggregate_ttl(granularity)
    for product in catalogue.PRODUCTS:
        found = product.read(site_id=site.id, granularity=CHILD[granularity], buckets=children)
        product.write(
            site_id=site.id,
            granularity=granularity,
            bucket=start,
            value=product.merge(found, start=start),
            ttl=ttl,
            now=now,
        )
    if granularity == "day":  # funnels' parts of the day were scanned from older rows
        cassandra_session().execute(
            prepare(funnel_days.DELETE_DAY, idempotent=True, write=True), (site.id, start)
        )
        BucketState.objects.get_or_create(
            site=site, granularity="month", bucket=timebuckets.floor(start, "month")
        )
    return bucket_commit(state, version=version, now=now)


def bucket_commit(state: BucketState, *, version: int, now: datetime) -> bool:
    """Mark a bucket sealed unless its version moved since the seal read it (a late event
    or an erasure reopened it: the next sweep seals it again)."""
    updated = BucketState.objects.filter(pk=state.pk, version=version).update(
        state=BucketState.SEALED, seals=F("seals") + 1, sealed_at=now
    )
    return bool(updated)

"""bucket_heatmaps' rows: a bucket's heatmap counts written whole, and read back."""

from __future__ import annotations

import uuid
from datetime import datetime

import orjson

from sessions_app.aggregates.heatmaps import Heat, Key, heat_json, heat_of
from sessions_app.aggregates.stored import bucket_overwrite
from sessions_app.core.cql import cassandra_session, prepare
from sessions_app.tables import bucket_heatmaps


def heat_write(
    *, site_id: uuid.UUID, granularity: str, bucket: datetime, stored: dict[Key, Heat],
    ttl: int, now: datetime,
) -> None:  # fmt: skip
    """Overwrite a bucket's rows (a reseal's rows replace the earlier ones whole)."""
    bucket_overwrite(
        delete=bucket_heatmaps.DELETE_BUCKET,
        key=(site_id, granularity, bucket),
        insert=bucket_heatmaps.UPSERT,
        rows=(
            (site_id, granularity, bucket, page, vp, orjson.dumps(heat_json(heat)).decode())
            for (page, vp), heat in stored.items()
        ),
        now=now,
        ttl=ttl,
    )


def buckets_read(
    *, site_id: uuid.UUID, buckets: list[tuple[str, datetime]]
) -> list[dict[Key, Heat]]:
    """Every row of each of these (granularity, bucket)s."""
    statement = prepare(bucket_heatmaps.SELECT_BUCKET)
    db = cassandra_session()
    futures = [db.execute_async(statement, (site_id, g, b)) for g, b in buckets]
    return [
        {(r["page"], r["vp"]): heat_of(orjson.loads(r["counts"])) for r in f.result()}
        for f in futures
    ]


def page_read(
    *, site_id: uuid.UUID, buckets: list[tuple[str, datetime]], page: str
) -> list[dict[Key, Heat]]:
    """One page's rows, every layout, of each of these (granularity, bucket)s."""
    statement = prepare(bucket_heatmaps.SELECT_PAGE)
    db = cassandra_session()
    futures = [db.execute_async(statement, (site_id, g, b, page)) for g, b in buckets]
    return [
        {(page, r["vp"]): heat_of(orjson.loads(r["counts"])) for r in f.result()} for f in futures
    ]

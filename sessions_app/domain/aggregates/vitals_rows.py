"""bucket_vitals' rows: a bucket's web vitals written whole, and read back by level."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import orjson
from cassandra.cluster import ResponseFuture

from sessions_app.domain.aggregates.sources import site_bucket_rows
from sessions_app.domain.aggregates.stored import bucket_overwrite
from sessions_app.domain.aggregates.vitals import (
    Cell,
    Key,
    Stored,
    sketch_pack,
    sketch_unpack,
    stored_of,
    vitals_count,
)
from sessions_app.domain.aggregates.vitals_packed import Measured, packed_unpack
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import bucket_vitals


def vitals_write(
    *,
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    value: Stored,
    ttl: int,
    now: datetime,
) -> None:
    """Overwrite a bucket's rows (a reseal's rows replace the earlier ones whole)."""
    bucket_overwrite(
        delete=bucket_vitals.DELETE_BUCKET,
        key=(site_id, granularity, bucket),
        insert=bucket_vitals.UPSERT,
        rows=(
            (
                site_id,
                granularity,
                bucket,
                level,
                *key,
                {name: sketch_pack(s) for name, s in cell.sketches.items()},
                orjson.dumps(cell.ratings).decode(),
                orjson.dumps(cell.elements).decode(),
            )
            for (level, key), cell in value.items()
        ),
        now=now,
        ttl=ttl,
    )


def _cell(row: dict[str, Any]) -> Cell:
    return Cell(
        sketches={n: sketch_unpack(b) for n, b in (row["sketches"] or {}).items()},
        ratings=orjson.loads(row["ratings"] or "{}"),
        elements=orjson.loads(row["elements"] or "{}"),
    )


def _key(row: dict[str, Any]) -> Key:
    return row["page"], row["device"], row["country"], row["browser"]


def buckets_read(*, site_id: uuid.UUID, buckets: list[tuple[str, datetime]]) -> list[Stored]:
    """Every row of each of these (granularity, bucket)s (the ones that have rows)."""
    statement = prepare(bucket_vitals.SELECT_BUCKET)
    db = cassandra_session()
    futures = [db.execute_async(statement, (site_id, g, b)) for g, b in buckets]
    found = [{(r["level"], _key(r)): _cell(r) for r in f.result()} for f in futures]
    return [rows for rows in found if rows]


def level_futures(
    *,
    site_id: uuid.UUID,
    buckets: list[tuple[str, datetime]],
    level: int,
    page: str | None = None,
) -> list[ResponseFuture]:
    """The reads of one level (of one page, if given) of each of these buckets, all in
    flight at once (one query a partition); `level_rows` decodes each."""
    db = cassandra_session()
    if page is None:
        statement = prepare(bucket_vitals.SELECT_LEVEL)
        return [db.execute_async(statement, (site_id, g, b, level)) for g, b in buckets]
    statement = prepare(bucket_vitals.SELECT_PAGE)
    return [db.execute_async(statement, (site_id, g, b, level, page)) for g, b in buckets]


def level_rows(future: ResponseFuture) -> list[tuple[Key, Measured]]:
    """A level read's rows, their sketches left packed (vitals_packed)."""
    return [
        (
            (r["page"], r["device"], r["country"], r["browser"]),
            Measured(
                {n: packed_unpack(b) for n, b in (r["sketches"] or {}).items()},
                orjson.loads(r["ratings"] or "{}"),
                orjson.loads(r["elements"] or "{}"),
            ),
        )
        for r in future.result()
    ]


def live_counted(*, site_id: uuid.UUID, hour: datetime, shards: int) -> Stored:
    """An unsealed hour's rows as its seal would store them, from its raw rows (only the
    `$vitals` events are counted: the other products are not needed on this read)."""
    return stored_of(vitals_count(site_bucket_rows(site_id=site_id, hour=hour, shards=shards)))

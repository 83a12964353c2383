"""bucket_vitals' rows: a bucket's web vitals written whole, and read back by level."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import orjson

from sessions_app.aggregates.stored import bucket_overwrite
from sessions_app.aggregates.vitals import Cell, Key, Stored, sketch_pack, sketch_unpack
from sessions_app.core.cql import cassandra_session, prepare
from sessions_app.tables import bucket_vitals


def vitals_write(
    *, site_id: uuid.UUID, granularity: str, bucket: datetime, stored: Stored, ttl: int,
    now: datetime,
) -> None:  # fmt: skip
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
            for (level, key), cell in stored.items()
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


def level_read(
    *, site_id: uuid.UUID, buckets: list[tuple[str, datetime]], level: int,
    page: str | None = None,
) -> list[list[tuple[Key, Cell]]]:  # fmt: skip
    """The rows of one level (of one page, if given) of each of these buckets, a list a
    bucket (every bucket's query in flight together)."""
    db = cassandra_session()
    if page is None:
        statement = prepare(bucket_vitals.SELECT_LEVEL)
        futures = [db.execute_async(statement, (site_id, g, b, level)) for g, b in buckets]
    else:
        statement = prepare(bucket_vitals.SELECT_PAGE)
        futures = [db.execute_async(statement, (site_id, g, b, level, page)) for g, b in buckets]
    return [[(_key(r), _cell(r)) for r in f.result()] for f in futures]

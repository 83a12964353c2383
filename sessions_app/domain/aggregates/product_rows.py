"""The generic store of sealed products: a product declared here needs no table, writer or
reader of its own.

`declare` takes what only the product knows (how it counts an hour, how parts merge,
how a value splits into JSON parts and is built back from them) and returns a `Product`
whose write and read go through bucket_products (foundation/tables/bucket_products.py):
one partition per bucket and product, a row per part, overwritten whole by each seal
with the resolution's aggregate TTL, and resealed (not deleted from) by an erasure, as
every product's rows are. A value has at most MAX_PARTS parts: the product keeps its
own top-N, as the others do; a larger value fails its seal instead of being cut.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar

import orjson

from sessions_app.domain.aggregates.product import Product
from sessions_app.domain.aggregates.sources import Hour
from sessions_app.domain.aggregates.stored import bucket_overwrite
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import prepare, read_begin
from sessions_app.foundation.tables import bucket_products

V = TypeVar("V")
MAX_PARTS = 10_000


class TooManyParts(ValueError):
    """A product's value has more parts than a bucket's read takes."""


def declare(
    *,
    name: str,
    hour: Callable[[Hour], V],
    merge: Callable[..., V],
    parts: Callable[[V], Iterable[tuple[str, Any]]],
    whole: Callable[[list[tuple[str, Any]]], V],
) -> Product[V]:
    """A product on the generic store: `parts(value)` gives (part, JSON-able) pairs, each a
    row; `whole(pairs)` builds the value back from a bucket's rows, in part order."""

    def write(
        *,
        site_id: uuid.UUID,
        granularity: str,
        bucket: datetime,
        value: V,
        ttl: int,
        now: datetime,
    ) -> None:
        rows = [
            (site_id, granularity, bucket, name, str(part), orjson.dumps(held))
            for part, held in parts(value)
        ]
        if len(rows) > MAX_PARTS:
            raise TooManyParts(f"{name}: {len(rows):,} parts in a bucket, at most {MAX_PARTS:,}")
        bucket_overwrite(
            delete=bucket_products.DELETE_BUCKET,
            key=(site_id, granularity, bucket, name),
            insert=bucket_products.UPSERT,
            rows=rows,
            now=now,
            ttl=ttl,
        )

    def read(*, site_id: uuid.UUID, granularity: str, buckets: list[datetime]) -> list[V]:
        params = [(site_id, granularity, timebuckets.as_utc(b), name, MAX_PARTS) for b in buckets]
        found = read_begin(prepare(bucket_products.SELECT_BUCKET), params)()
        return [
            whole([(row["part"], orjson.loads(row["value"])) for row in rows])
            for rows in found
            if rows
        ]

    return Product(name=name, hour=hour, merge=merge, write=write, read=read)

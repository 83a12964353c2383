"""What the report starts from: ingest per hour and Cassandra's own size estimates."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sessions_app.domain.ledger import sizing
from sessions_app.domain.ledger.sizing import Verdict
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, keyspace, prepare
from sessions_app.foundation.core.timebuckets import Width
from sessions_app.foundation.tables import ingest_stats

ESTIMATE_ROWS_LIMIT = 10_000  # size_estimates rows read (tables x token ranges)

SELECT_SIZE_ESTIMATES = """
SELECT table_name, mean_partition_size, partitions_count FROM system.size_estimates
WHERE keyspace_name = ? LIMIT ?
"""


@dataclass(frozen=True)
class HourIngest:
    """What ingest_stats recorded for one hour of a site."""

    hour: datetime
    requests: int
    accepted: int
    rejected: int


@dataclass(frozen=True)
class TableEstimate:
    """system.size_estimates for one table: partitions and their mean size."""

    partitions: int
    mean_bytes: int

    @property
    def verdict(self) -> Verdict:
        return sizing.verdict(self.mean_bytes)


def ingest_hours(*, site_id: uuid.UUID, start: datetime, end: datetime) -> list[HourIngest]:
    """Return requests, accepted and rejected events per hour of [start, end), in order.

    Summed by Cassandra within each hour's partition (one row per request), one
    query per hour, in parallel.
    """
    hours = timebuckets.buckets_between(start, end, Width.HOUR, limit=MAX_WINDOW_HOURS)
    statement = prepare(ingest_stats.SELECT_TOTALS)
    futures = [(h, cassandra_session().execute_async(statement, (site_id, h))) for h in hours]
    result = []
    for hour, future in futures:
        row = future.result().one() or {}
        received, accepted = row.get("received") or 0, row.get("accepted") or 0
        result.append(
            HourIngest(
                hour=hour,
                requests=row.get("requests") or 0,
                accepted=accepted,
                rejected=received - accepted - (row.get("duplicates") or 0),
            )
        )
    return result


def estimates_combine(rows: Iterable[Mapping[str, Any]]) -> dict[str, TableEstimate]:
    """Combine size_estimates rows (one per token range) into one figure per table.

    Partition counts add up; the mean size is weighted by each range's count.
    """
    totals: dict[str, list[int]] = {}
    for row in rows:
        count = max(0, row["partitions_count"] or 0)
        mean = max(0, row["mean_partition_size"] or 0)
        entry = totals.setdefault(row["table_name"], [0, 0])
        entry[0] += count
        entry[1] += count * mean
    return {
        table: TableEstimate(partitions=count, mean_bytes=(total // count) if count else 0)
        for table, (count, total) in totals.items()
    }


def size_estimates() -> dict[str, TableEstimate]:
    """Return system.size_estimates of the active keyspace, per table (empty until flushed)."""
    rows = cassandra_session().execute(
        prepare(SELECT_SIZE_ESTIMATES), (keyspace(), ESTIMATE_ROWS_LIMIT)
    )
    return estimates_combine(rows)


def value_bytes(value: Any) -> int:
    """Return the bytes a column value takes as data (UTF-8 text, 16 B UUIDs, 8 B timestamps).

    Cassandra adds a few bytes of per-cell overhead and compresses on disk;
    this is the logical size the formula's "bytes per row" means.
    """
    if value is None:
        return 0
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return 4
    if isinstance(value, float | datetime):
        return 8
    if isinstance(value, date):
        return 4
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    if isinstance(value, uuid.UUID):
        return 16
    if isinstance(value, Mapping):
        return sum(value_bytes(k) + value_bytes(v) for k, v in value.items())
    if isinstance(value, Iterable):
        return sum(value_bytes(v) for v in value)
    raise TypeError(f"no size for a column value of type {type(value).__name__}")


def mean_row_bytes(rows: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """Return (mean bytes per row, rows measured); (0, 0) when there are none."""
    sizes = [sum(value_bytes(v) for v in row.values()) for row in rows]
    return (round(sum(sizes) / len(sizes)), len(sizes)) if sizes else (0, 0)


MAX_WINDOW_HOURS = 168

"""rolling_counts: a user's counts per sealed bucket, for rolling-window counters.

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import AGGREGATES as _AGGREGATES
from sessions_app.foundation.tables.spec import TableSpec

# The event key of a bucket's one row a user: `counts` maps each event key to its events,
# `count` is their total. Older rows hold one key each (`count`); a reader takes a
# bucket's ALL row over them (`read_count`). No event is named "": the
# collector refuses an empty name.
ALL = ""

# A user's rows of one key over a period's buckets: the ALL rows, and a key's own rows
# from before them.
SELECT_PERIODS = """
SELECT event_key, bucket, count, counts FROM {ks}.rolling_counts
WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ? AND event_key IN ('', ?)
  AND bucket >= ? AND bucket <= ?
"""

UPSERT = """
INSERT INTO {ks}.rolling_counts
  (site_id, user_key, granularity, period, event_key, bucket, count, counts)
VALUES (?, ?, ?, ?, '', ?, ?, ?) USING TTL ?
"""

SELECT_KEYS = """
SELECT event_key FROM {ks}.rolling_counts
WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ?
"""

SELECT_BUCKETS = """
SELECT bucket FROM {ks}.rolling_counts
WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ?
"""

DELETE_PARTITION = """
DELETE FROM {ks}.rolling_counts
WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ?
"""

POLICIES = _AGGREGATES


class RollingCount(Model):
    """A user's event counts per sealed bucket (rolling-window counters).

    Partition = (site, user, granularity, period): period is the month for hour
    rows, the year for day rows and 0 (epoch) for month rows, so no partition
    grows without bound; clustering (event key, bucket) makes "this key over
    these buckets" one slice. Written by the seal that owns the bucket.
    """

    __table_name__ = "rolling_counts"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    user_key = columns.Text(partition_key=True)
    granularity = columns.Text(partition_key=True)
    period = columns.DateTime(partition_key=True)
    event_key = columns.Text(primary_key=True)
    bucket = columns.DateTime(primary_key=True, clustering_order="ASC")
    count = columns.BigInt(required=True)
    # The ALL row's: event key -> events, one frozen map (a single cell, overwritten whole
    # without a tombstone, as bucket_users')
    counts = columns.Map(columns.Text, columns.BigInt, frozen=True)


def upsert_params(
    *,
    site_id: Any,
    user_key: str,
    granularity: str,
    period: Any,
    bucket: Any,
    counts: dict[str, int],
    ttl: int,
) -> tuple[Any, ...]:
    """UPSERT's parameters: a user's counts of every event key in one sealed bucket."""
    return (site_id, user_key, granularity, period, bucket, sum(counts.values()), counts, ttl)


def read_count(rows: Iterable[dict[str, Any]], event_key: str) -> dict[Any, int]:
    """{bucket: events of the key} from SELECT_PERIODS' rows: a bucket's ALL row decides
    (its map), a row of the key alone only where the bucket has no ALL row."""
    found: dict[Any, int] = {}
    whole: set[Any] = set()
    for row in rows:
        bucket = row["bucket"]
        if row["event_key"] == ALL:
            found[bucket] = (row["counts"] or {}).get(event_key, 0)
            whole.add(bucket)
        elif bucket not in whole:
            found[bucket] = row["count"]
    return found


SPEC = TableSpec(
    policies=POLICIES,
    model=RollingCount,
    purge=None,
    erasure="_delete_counts",
    sizing=None,
)

"""rolling_counts: a user's counts per sealed bucket, for rolling-window counters.

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (tables/registry.py).
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.tables.retention_specs import table_options
from sessions_app.tables.spec import AGGREGATES as _AGGREGATES
from sessions_app.tables.spec import TableSpec

SELECT_PERIODS = """
SELECT bucket, count FROM {ks}.rolling_counts
WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ? AND event_key = ?
  AND bucket >= ? AND bucket <= ?
"""

UPSERT = """
INSERT INTO {ks}.rolling_counts (site_id, user_key, granularity, period, event_key, bucket, count)
VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ?
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


SPEC = TableSpec(
    policies=POLICIES,
    model=RollingCount,
    purge=None,
    erasure="_delete_counts",
    sizing=None,
)

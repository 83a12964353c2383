"""bucket_aggregates: the aggregates of each sealed bucket of a site (hour, day, month).

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import AGGREGATES as _AGGREGATES
from sessions_app.foundation.tables.spec import RESEAL, TableSpec

UPSERT = """
INSERT INTO {ks}.bucket_aggregates
  (site_id, granularity, bucket, events, by_type, by_name, sessions_started, users, bounces,
   conversions, durations, top_pages, top_clicks, rows_read, sealed_at, users_sketch, visits,
   one_page_visits, converted_visits, duration_sum, duration_slots)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?
"""

SELECT_BUCKET = """
SELECT bucket, events, by_type, by_name, sessions_started, users, bounces, conversions,
       durations, top_pages, top_clicks, rows_read, sealed_at, users_sketch, visits,
       one_page_visits, converted_visits, duration_sum, duration_slots
FROM {ks}.bucket_aggregates WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

SELECT_RANGE = """
SELECT bucket, events, by_type, by_name, sessions_started, users, bounces, conversions,
       durations, top_pages, top_clicks, rows_read, sealed_at, users_sketch, visits,
       one_page_visits, converted_visits, duration_sum, duration_slots
FROM {ks}.bucket_aggregates
WHERE site_id = ? AND granularity = ? AND bucket >= ? AND bucket < ? LIMIT ?
"""

POLICIES = _AGGREGATES


class BucketAggregate(Model):
    """Aggregates of one sealed bucket of a site, overwritten whole by each seal."""

    __table_name__ = "bucket_aggregates"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    granularity = columns.Text(partition_key=True)
    bucket = columns.DateTime(primary_key=True, clustering_order="ASC")
    events = columns.Integer()
    by_type = columns.Map(columns.Text, columns.Integer)
    by_name = columns.Map(columns.Text, columns.Integer)
    sessions_started = columns.Integer()
    users = columns.Integer()
    bounces = columns.Integer()
    conversions = columns.Integer()
    durations = columns.Map(columns.Text, columns.Integer)  # histogram bin -> sessions
    top_pages = columns.Text()  # JSON [[path, count], ...]
    top_clicks = columns.Text()  # JSON [[element, count], ...]
    rows_read = columns.Integer()
    sealed_at = columns.DateTime()
    # HyperLogLog registers of the bucket's user keys (domain/aggregates/sketch.py):
    # unique users of a day or month are the merged sketches of its children.
    users_sketch = columns.Blob()
    # The KPIs' visit counters (aggregates/totals.count_started): sessions started in the
    # bucket, those with at most one page view, converted ones, their durations' sum
    # (seconds) and sketch (aggregates/kpis.duration_slot -> visits).
    visits = columns.Integer()
    one_page_visits = columns.Integer()
    converted_visits = columns.Integer()
    duration_sum = columns.BigInt()
    duration_slots = columns.Map(columns.Integer, columns.Integer)


SPEC = TableSpec(
    policies=POLICIES,
    model=BucketAggregate,
    purge=None,
    erasure=RESEAL,
    sizing=None,
)

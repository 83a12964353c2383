"""bucket_breakdowns: each sealed bucket's sessions, users and conversions per dimension value.

One partition per (site, resolution, bucket), a row per dimension (source, medium,
campaign, country, device, browser, os, entry, exit) holding its top values as JSON
and a HyperLogLog sketch of each value's users, so a day merges its hours and a
month its days exactly like bucket_aggregates. Overwritten whole by every seal.

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
INSERT INTO {ks}.bucket_breakdowns (site_id, granularity, bucket, dimension, counts, sketches)
VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?
"""

# A reseal that finds no sessions any more for a dimension clears its older row.
DELETE_BUCKET = """
DELETE FROM {ks}.bucket_breakdowns USING TIMESTAMP ?
WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

SELECT_BUCKET = """
SELECT dimension, counts, sketches FROM {ks}.bucket_breakdowns
WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

SELECT_DIMENSION = """
SELECT counts, sketches FROM {ks}.bucket_breakdowns
WHERE site_id = ? AND granularity = ? AND bucket = ? AND dimension = ?
"""

POLICIES = _AGGREGATES


class BucketBreakdown(Model):
    """One dimension's breakdown of one sealed bucket of a site."""

    __table_name__ = "bucket_breakdowns"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    granularity = columns.Text(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    dimension = columns.Text(primary_key=True)
    # JSON [[value, sessions, users, conversions, pageviews, one-page visits, duration sum,
    # {duration slot: visits}], ...], "(other)" last (aggregates/breakdowns._stored)
    counts = columns.Text()
    sketches = columns.Map(
        columns.Text, columns.Blob
    )  # value -> users sketch (domain/aggregates/sketch.py)


SPEC = TableSpec(
    policies=POLICIES,
    model=BucketBreakdown,
    purge=None,
    erasure=RESEAL,
    sizing=None,
)

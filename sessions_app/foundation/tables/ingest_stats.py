"""ingest_stats: per-request counts of a site hour (accepted, rejected, duplicate, late).

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import NamedTuple

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import TableSpec

SELECT_BUCKET = """
SELECT received, accepted, duplicates, late, clamped, rejected FROM {ks}.ingest_stats
WHERE site_id = ? AND bucket = ?
"""

INSERT = """
INSERT INTO {ks}.ingest_stats
  (site_id, bucket, batch_id, received, accepted, duplicates, late, clamped, rejected)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


class Row(NamedTuple):
    """The parameters of INSERT, in its order (rejected: counts by field)."""

    site_id: uuid.UUID
    bucket: datetime
    batch_id: uuid.UUID
    received: int
    accepted: int
    duplicates: int
    late: int
    clamped: int
    rejected: dict[str, int]


SELECT_TOTALS = """
SELECT count(*) AS requests, sum(CAST(accepted AS bigint)) AS accepted,
       sum(CAST(received AS bigint)) AS received, sum(CAST(duplicates AS bigint)) AS duplicates
FROM {ks}.ingest_stats WHERE site_id = ? AND bucket = ?
"""

COUNT = "SELECT batch_id FROM {ks}.ingest_stats WHERE site_id = ? AND bucket = ? LIMIT ?"

SAMPLE = """
SELECT batch_id, received, accepted, duplicates, late, clamped, rejected
FROM {ks}.ingest_stats WHERE site_id = ? AND bucket = ? LIMIT ?
"""


class IngestStats(Model):
    """Data-quality counts of one request, per site and hour bucket.

    One row per request (keyed by its batch id) rather than counters, so a retried
    write never counts twice; per-bucket totals are the sum of the partition.
    """

    __table_name__ = "ingest_stats"
    __options__ = table_options(ttl_days=90, window="hour")  # fixed 90 days, no policy

    site_id = columns.UUID(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    batch_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    received = columns.Integer(required=True)
    accepted = columns.Integer(required=True)
    duplicates = columns.Integer(required=True)
    late = columns.Integer(required=True)
    clamped = columns.Integer(required=True)
    rejected = columns.Map(columns.Text, columns.Integer)


SPEC = TableSpec(
    policies=(),
    model=IngestStats,
    purge=None,
    erasure=None,
    sizing="probe_ingest_stats",
)

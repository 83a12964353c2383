"""pipeline_heartbeats: the last beat of each worker (beat -> broker -> worker -> Cassandra).

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import TableSpec

SELECT_ALL = "SELECT worker, beat_at, written_at FROM {ks}.pipeline_heartbeats LIMIT 100"

UPSERT = """
INSERT INTO {ks}.pipeline_heartbeats (worker, beat_at, written_at) VALUES (?, ?, ?)
"""


class PipelineHeartbeat(Model):
    """Last beat → broker → worker → Cassandra round trip, one row per worker host."""

    __table_name__ = "pipeline_heartbeats"
    __options__ = table_options(ttl_days=1)

    worker = columns.Text(partition_key=True)
    beat_at = columns.DateTime(required=True)
    written_at = columns.DateTime(required=True)


SPEC = TableSpec(
    policies=(),
    model=PipelineHeartbeat,
    purge=None,
    erasure=None,
    sizing=None,
)

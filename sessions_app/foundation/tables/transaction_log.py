"""transaction_log: accepted batches, durable before the 200 (an eventually atomic log).

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import NamedTuple

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.core.timebuckets import Width
from sessions_app.foundation.tables import retention_specs
from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import Keys, Purge, TableSpec

# Many partitions a read (the erasure's scan of a site's log): MINUTES_PER_READ minutes,
# every shard; a partition at a time was ~50,000 round trips over the log's TTL.
SELECT_MINUTES = """
SELECT minute, shard, batch_id, received_at, payload FROM {ks}.transaction_log
WHERE site_id = ? AND minute IN ? AND shard IN ?
"""
MINUTES_PER_READ = 60

DELETE_ENTRY = """
DELETE FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ? AND batch_id = ?
"""

REWRITE_ENTRY = """
UPDATE {ks}.transaction_log USING TTL ? SET payload = ?, event_count = ?
WHERE site_id = ? AND minute = ? AND shard = ? AND batch_id = ?
"""

SELECT_STATE = """
SELECT batch_id, received_at, applied FROM {ks}.transaction_log
WHERE site_id = ? AND minute = ? AND shard = ?
"""

SELECT_ENTRY = """
SELECT received_at, applied, payload FROM {ks}.transaction_log
WHERE site_id = ? AND minute = ? AND shard = ? AND batch_id = ?
"""

INSERT = """
INSERT INTO {ks}.transaction_log
  (site_id, minute, shard, batch_id, received_at, event_count, payload, applied)
VALUES (?, ?, ?, ?, ?, ?, ?, false)
USING TTL ?
"""

MARK_APPLIED = """
UPDATE {ks}.transaction_log USING TTL ? SET applied = true
WHERE site_id = ? AND minute = ? AND shard = ? AND batch_id = ?
"""


class Row(NamedTuple):
    """The parameters of INSERT, in its order."""

    site_id: uuid.UUID
    minute: datetime
    shard: int
    batch_id: uuid.UUID
    received_at: datetime
    event_count: int
    payload: bytes
    ttl: int


class Mark(NamedTuple):
    """The parameters of MARK_APPLIED, in its order."""

    ttl: int
    site_id: uuid.UUID
    minute: datetime
    shard: int
    batch_id: uuid.UUID


COUNT = """
SELECT batch_id FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ? LIMIT ?
"""

SAMPLE = """
SELECT batch_id, received_at, event_count, payload, applied
FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ? LIMIT ?
"""

PROBE_PARTITION = """
SELECT batch_id FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ? LIMIT 1
"""

DELETE_PARTITION = "DELETE FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ?"
POLICIES = (retention_specs.TRANSACTION_LOG,)


class TransactionLog(Model):
    """Accepted batches, durable before the collector answers (eventually atomic).

    The apply step writes the batch into every table and then sets `applied`; a
    beat task replays entries still unapplied after a grace period.
    """

    __table_name__ = "transaction_log"
    __options__ = table_options(policies=POLICIES, window="10m")

    site_id = columns.UUID(partition_key=True)
    minute = columns.DateTime(partition_key=True)
    shard = columns.SmallInt(partition_key=True)
    batch_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    received_at = columns.DateTime(required=True)
    event_count = columns.Integer(required=True)
    payload = columns.Blob(required=True)
    applied = columns.Boolean(default=False)


SPEC = TableSpec(
    policies=POLICIES,
    model=TransactionLog,
    purge=Purge(
        PROBE_PARTITION, DELETE_PARTITION, Width.TEN_MINUTES, Keys.LOG_SHARDS, by_receipt=True
    ),
    erasure="_rewrite_log",
    sizing="probe_transaction_log",
)

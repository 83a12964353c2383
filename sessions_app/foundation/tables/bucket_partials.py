"""bucket_partials: per-batch tallies of a site hour and shard, merged when the hour seals.

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

SELECT_TALLIES = """
SELECT tally, ids FROM {ks}.bucket_partials WHERE site_id = ? AND bucket = ? AND shard = ?
"""

DELETE_PARTITION = "DELETE FROM {ks}.bucket_partials WHERE site_id = ? AND bucket = ? AND shard = ?"

INSERT = """
INSERT INTO {ks}.bucket_partials (site_id, bucket, shard, batch_id, events, tally, ids)
VALUES (?, ?, ?, ?, ?, ?, ?)
USING TTL ?
"""


class Row(NamedTuple):
    """The parameters of INSERT, in its order."""

    site_id: uuid.UUID
    bucket: datetime
    shard: int
    batch_id: uuid.UUID
    events: int
    tally: bytes
    ids: bytes
    ttl: int


PROBE_PARTITION = """
SELECT batch_id FROM {ks}.bucket_partials WHERE site_id = ? AND bucket = ? AND shard = ? LIMIT 1
"""

POLICIES = (retention_specs.RAW_EVENTS,)


class BucketPartial(Model):
    """One batch's tally of its events in one site hour and shard (aggregates.tally.Tally).

    Written by the applier beside the batch's raw rows, in the same partitions'
    shape: (site, hour, shard), one row per batch (shard = the batch id's hash
    modulo the site's shards when the batch was planned). A seal merges these
    instead of scanning the raw rows (BucketState.partials says whether it may).
    About a tenth of the raw rows' bytes: a 30-event beacon is one ~1 KB row.
    """

    __table_name__ = "bucket_partials"
    __options__ = table_options(policies=POLICIES, window="hour")

    site_id = columns.UUID(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    shard = columns.SmallInt(partition_key=True)
    batch_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    events = columns.Integer(required=True)
    tally = columns.Blob(required=True)
    # 8 bytes per event of the tally (ids_digest): a seal that finds one event in two
    # batches' tallies (a resend logged twice) counts the raw rows instead.
    ids = columns.Blob()


SPEC = TableSpec(
    policies=POLICIES,
    model=BucketPartial,
    purge=Purge(PROBE_PARTITION, DELETE_PARTITION, Width.HOUR, Keys.HOUR_SHARDS),
    erasure="_delete_tallies",
    sizing=None,
)

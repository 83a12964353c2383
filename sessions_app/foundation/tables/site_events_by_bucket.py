"""site_events_by_bucket: every event of a site per hour and shard (what a seal reads).

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

SELECT_SHARD = """
SELECT event_id, session_id, user_key, type, name, ts, url, element, is_bot, late
FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?
"""

SELECT_SEAL_ROWS = """
SELECT session_id, event_id, user_key, type, name, ts, url, element, props, layout, is_bot
FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?
"""

# Who did what (an hour's user sets with no tally to share: sources.Hour.user_rows).
SELECT_USER_ROWS = """
SELECT user_key, type, name, is_bot
FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?
"""

# What a funnel's day reads (features/funnels/results.py): every event of one hour and shard.
SELECT_FUNNEL_ROWS = """
SELECT session_id, event_id, user_key, type, name, ts, url, element, props, is_bot
FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?
"""

DELETE_ROW = """
DELETE FROM {ks}.site_events_by_bucket
WHERE site_id = ? AND bucket = ? AND shard = ? AND event_id = ?
"""

INSERT = """
INSERT INTO {ks}.site_events_by_bucket
  (site_id, bucket, shard, event_id, session_id, user_key, type, name, ts, url, element,
   props, layout, is_bot, late)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
USING TTL ?
"""


class Row(NamedTuple):
    """The parameters of INSERT, in its order (element, props, layout: JSON text)."""

    site_id: uuid.UUID
    bucket: datetime
    shard: int
    event_id: uuid.UUID
    session_id: uuid.UUID
    user_key: str
    type: str
    name: str | None
    ts: datetime
    url: str | None
    element: str | None
    props: str | None
    layout: str | None
    is_bot: bool
    late: bool
    ttl: int


# Counting reads the first clustering column only (site events: the keys to tally).
COUNT = """
SELECT user_key, session_id FROM {ks}.site_events_by_bucket
WHERE site_id = ? AND bucket = ? AND shard = ? LIMIT ?
"""

# Sampling reads every column stored per row: clustering and regular columns, not
# the partition key, which Cassandra stores once per partition.
SAMPLE = """
SELECT event_id, session_id, user_key, type, name, ts, url, element, is_bot, late
FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ? LIMIT ?
"""

PROBE_PARTITION = """
SELECT event_id FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?
LIMIT 1
"""

DELETE_PARTITION = """
DELETE FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?
"""

POLICIES = (retention_specs.RAW_EVENTS,)


class SiteEventByBucket(Model):
    """Every event of a site per hour bucket and shard: the aggregation source.

    The shard suffix (against hot partitions) splits a busy site's hour into
    partitions that stay inside the partition budget.
    """

    __table_name__ = "site_events_by_bucket"
    __options__ = table_options(policies=POLICIES, window="hour")

    site_id = columns.UUID(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    shard = columns.SmallInt(partition_key=True)
    event_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    session_id = columns.TimeUUID(required=True)
    user_key = columns.Text(required=True)
    type = columns.Text(required=True)
    name = columns.Text()
    ts = columns.DateTime(required=True)
    url = columns.Text()
    element = columns.Text()
    props = columns.Text()  # JSON, as the other event tables keep it (funnel step conditions)
    layout = columns.Text()  # JSON: viewport class; a click's position and flags (heatmaps)
    is_bot = columns.Boolean(default=False)
    late = columns.Boolean(default=False)


SPEC = TableSpec(
    policies=POLICIES,
    model=SiteEventByBucket,
    purge=Purge(PROBE_PARTITION, DELETE_PARTITION, Width.HOUR, Keys.HOUR_SHARDS),
    erasure="_delete_events",
    sizing="probe_site_events",
)

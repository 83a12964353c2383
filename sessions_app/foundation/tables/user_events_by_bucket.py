"""user_events_by_bucket: a user's events per time bucket (adaptive width per user).

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import NamedTuple

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model
from django.conf import settings

from sessions_app.foundation.tables import retention_specs
from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import Keys, Purge, TableSpec

SELECT_KEYS = """
SELECT type, name FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ? AND event_id >= ? AND event_id < ?
"""

SELECT_IDS = """
SELECT event_id, session_id, ts FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ?
"""

PROBE_PARTITION = """
SELECT event_id FROM {ks}.user_events_by_bucket WHERE site_id = ? AND user_key = ? AND bucket = ?
LIMIT 1
"""
DELETE_PARTITION = """
DELETE FROM {ks}.user_events_by_bucket WHERE site_id = ? AND user_key = ? AND bucket = ?
"""

SELECT_PRESENT = """
SELECT event_id FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ? AND event_id IN ?
"""

INSERT = """
INSERT INTO {ks}.user_events_by_bucket
  (site_id, user_key, bucket, event_id, session_id, type, name, ts, url, element, props, context,
   layout)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
USING TTL ?
"""


class Row(NamedTuple):
    """The parameters of INSERT, in its order (element, props, context, layout: JSON text)."""

    site_id: uuid.UUID
    user_key: str
    bucket: datetime
    event_id: uuid.UUID
    session_id: uuid.UUID
    type: str
    name: str | None
    ts: datetime
    url: str | None
    element: str | None
    props: str | None
    context: str | None
    layout: str | None
    ttl: int


COUNT = """
SELECT event_id FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ? LIMIT ?
"""

SAMPLE = """
SELECT event_id, session_id, type, name, ts, url, element, props, context, layout
FROM {ks}.user_events_by_bucket WHERE site_id = ? AND user_key = ? AND bucket = ? LIMIT ?
"""

SELECT_AFTER = """
SELECT event_id, session_id, type, name, ts, url, element, props, context, layout
FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ? AND event_id > ? AND event_id < ? LIMIT ?
"""

SELECT_IN_AFTER = """
SELECT bucket, event_id, session_id, type, name, ts, url, element, props, context, layout
FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket IN ? AND event_id > ? AND event_id < ?
PER PARTITION LIMIT ?
"""

POLICIES = (retention_specs.RAW_EVENTS,)


class UserEventByBucket(Model):
    """A user's events per time bucket: (site, user key, bucket start) partitions."""

    __table_name__ = "user_events_by_bucket"
    __options__ = table_options(policies=POLICIES, window=lambda: settings.USER_EVENTS_BUCKET)

    site_id = columns.UUID(partition_key=True)
    user_key = columns.Text(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    event_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    session_id = columns.TimeUUID(required=True)
    type = columns.Text(required=True)
    name = columns.Text()
    ts = columns.DateTime(required=True)
    url = columns.Text()
    element = columns.Text()
    props = columns.Text()
    context = columns.Text()  # JSON: the event's context (validation.CONTEXT_LIMITS)
    layout = columns.Text()  # JSON: viewport class; a click's position and flags


SPEC = TableSpec(
    policies=POLICIES,
    model=UserEventByBucket,
    purge=Purge(PROBE_PARTITION, DELETE_PARTITION, None, Keys.USERS_FROM_COUNTS),
    erasure="_delete_events",
    sizing="probe_user_events",
)

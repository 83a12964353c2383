"""failed_events: rejected events and requests with their reason, per site and day.

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

SELECT_PAYLOADS = """
SELECT failed_id, payload FROM {ks}.failed_events WHERE site_id = ? AND day = ?
"""

DELETE_ROW = "DELETE FROM {ks}.failed_events WHERE site_id = ? AND day = ? AND failed_id = ?"

SELECT_DAY = """
SELECT failed_id, received_at, reason, field, source, payload FROM {ks}.failed_events
WHERE site_id = ? AND day = ? LIMIT ?
"""

INSERT = """
INSERT INTO {ks}.failed_events
  (site_id, day, failed_id, received_at, reason, field, source, payload)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
USING TTL ?
"""


class Row(NamedTuple):
    """The parameters of INSERT, in its order."""

    site_id: uuid.UUID
    day: datetime
    failed_id: uuid.UUID
    received_at: datetime
    reason: str
    field: str
    source: str
    payload: str | None
    ttl: int


COUNT = "SELECT failed_id FROM {ks}.failed_events WHERE site_id = ? AND day = ? LIMIT ?"

SAMPLE = """
SELECT failed_id, received_at, reason, field, source, payload
FROM {ks}.failed_events WHERE site_id = ? AND day = ? LIMIT ?
"""

PROBE_PARTITION = "SELECT failed_id FROM {ks}.failed_events WHERE site_id = ? AND day = ? LIMIT 1"
DELETE_PARTITION = "DELETE FROM {ks}.failed_events WHERE site_id = ? AND day = ?"
POLICIES = (retention_specs.FAILED_EVENTS,)


class FailedEvent(Model):
    """A rejected event or request with its reason and raw payload (≤ 8 KB), kept with a TTL."""

    __table_name__ = "failed_events"
    __options__ = table_options(policies=POLICIES, window="day")

    site_id = columns.UUID(partition_key=True)
    day = columns.DateTime(partition_key=True)
    failed_id = columns.TimeUUID(primary_key=True, clustering_order="DESC")
    received_at = columns.DateTime(required=True)
    reason = columns.Text(required=True)
    field = columns.Text()
    source = columns.Text()
    payload = columns.Text()


SPEC = TableSpec(
    policies=POLICIES,
    model=FailedEvent,
    purge=Purge(PROBE_PARTITION, DELETE_PARTITION, Width.DAY, Keys.SITE_BUCKET, by_receipt=True),
    erasure="_delete_failed",
    sizing="probe_failed_events",
)

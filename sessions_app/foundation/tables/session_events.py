"""session_events: every event of a session in time order, as the API's JSON documents.

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import NamedTuple

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables import retention_specs
from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import TableSpec

SELECT_IDS = "SELECT event_id, ts FROM {ks}.session_events WHERE session_id = ?"
DELETE_PARTITION = "DELETE FROM {ks}.session_events WHERE session_id = ?"

# A session's events are read by one query only, the timeline's, which serves each
# event's JSON as the API renders it: `doc`, rendered once here (event_doc). The
# other columns are the row's keys and what erasure and the timeline probe read.
INSERT = """
INSERT INTO {ks}.session_events (session_id, event_id, site_id, user_key, ts, doc, touched)
VALUES (?, ?, ?, ?, ?, ?, true)
USING TTL ?
"""

# The same for an event older than TIMELINE_PREFIX_LAG / 2 when it is written (late,
# replayed, backfilled): it may sort inside a materialized prefix, so it marks the
# partition (domain/sessions/timeline.py).
INSERT_BACKFILLED = INSERT.replace("doc, touched)", "doc, touched, backfilled)").replace(
    "?, true)", "?, true, true)"
)


class Row(NamedTuple):
    """The parameters of INSERT and INSERT_BACKFILLED, in their order."""

    session_id: uuid.UUID
    event_id: uuid.UUID
    site_id: uuid.UUID
    user_key: str
    ts: datetime
    doc: bytes
    ttl: int


COUNT = "SELECT event_id FROM {ks}.session_events WHERE session_id = ? LIMIT ?"

SAMPLE = """
SELECT event_id, site_id, user_key, ts, doc FROM {ks}.session_events WHERE session_id = ? LIMIT ?
"""

# The timeline's read: the documents alone (one cell a row, nothing to decode).
SELECT_DOCS = "SELECT doc FROM {ks}.session_events WHERE session_id = ? LIMIT ?"

SELECT_DOCS_AFTER = """
SELECT doc FROM {ks}.session_events WHERE session_id = ? AND event_id > ? LIMIT ?
"""

# A session's events before an instant, newest first: the page views a path continues
# (domain/aggregates/paths.py).
SELECT_DOCS_BEFORE = """
SELECT event_id, doc FROM {ks}.session_events WHERE session_id = ? AND event_id < ?
ORDER BY event_id DESC
"""

SELECT_STATIC = """
SELECT timeline, timeline_site, writetime(timeline) AS built_us, writetime(touched) AS touched_us,
       ttl(touched) AS touched_ttl, prefix, prefix_upto, prefix_count, prefix_user,
       writetime(prefix) AS prefix_us, writetime(backfilled) AS backfilled_us,
       user_key AS first_user, site_id AS first_site
FROM {ks}.session_events WHERE session_id = ? LIMIT 1
"""

STORE_TIMELINE = """
UPDATE {ks}.session_events USING TIMESTAMP ? AND TTL ?
SET timeline = ?, timeline_site = ? WHERE session_id = ?
"""

STORE_PREFIX = """
UPDATE {ks}.session_events USING TIMESTAMP ? AND TTL ?
SET prefix = ?, prefix_upto = ?, prefix_count = ?, prefix_user = ?, timeline_site = ?
WHERE session_id = ?
"""

POLICIES = (retention_specs.RAW_EVENTS,)


class SessionEvent(Model):
    """Every event of one session, in time order (event TimeUUIDs sort by time)."""

    __table_name__ = "session_events"
    __options__ = table_options(policies=POLICIES, window="day")  # ≤ 24 h sessions

    session_id = columns.TimeUUID(partition_key=True)
    event_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    site_id = columns.UUID(required=True)
    user_key = columns.Text(required=True)
    ts = columns.DateTime(required=True)
    # The event's API JSON (core.eventdoc.EVENT_FIELDS), rendered when it is written: the
    # timeline reads this one cell a row.
    doc = columns.Blob()
    # Static (one per partition). Every event insert sets `touched`, so its write time
    # is the time of the partition's last write; `timeline` is the session's API
    # payload materialized once the session closed, valid while its write time is
    # later than touched's. An insert of an event older than TIMELINE_PREFIX_LAG / 2
    # also sets `backfilled`; `prefix` holds the JSON of the session's events up to
    # `prefix_upto` (all older than its write time minus the lag), valid while its
    # write time is later than backfilled's (sessions_app/domain/sessions/timeline.py).
    touched = columns.Boolean(static=True)
    timeline = columns.Blob(static=True)
    timeline_site = columns.UUID(static=True)
    backfilled = columns.Boolean(static=True)
    prefix = columns.Blob(static=True)
    prefix_upto = columns.TimeUUID(static=True)
    prefix_count = columns.Integer(static=True)
    prefix_user = columns.Text(static=True)


SPEC = TableSpec(
    policies=POLICIES,
    model=SessionEvent,
    purge=None,
    erasure="_delete_events",
    sizing="probe_session_events",
)

"""latest_sessions: the live feed of a site, partitioned by a non-time sentinel.

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

import uuid
import zlib
from datetime import datetime
from typing import NamedTuple

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model
from django.conf import settings

from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import TableSpec

SELECT_RANGE = """
SELECT seen_id, session_id, user_key FROM {ks}.latest_sessions
WHERE site_id = ? AND sentinel = ? AND seen_id >= ? AND seen_id <= ?
"""

DELETE_ROW = """
DELETE FROM {ks}.latest_sessions
WHERE site_id = ? AND sentinel = ? AND seen_id = ? AND session_id = ?
"""

INSERT = """
INSERT INTO {ks}.latest_sessions
  (site_id, sentinel, seen_id, session_id, user_key, started_at, last_seen_at, event_count,
   entry_url, exit_url, is_bot)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


def feed_sentinel(user_key: str) -> int:
    """Return the partition of a user's entries: a hash, never a time (a sentinel)."""
    return zlib.crc32(user_key.encode()) % settings.FEED_SHARDS


class Row(NamedTuple):
    """The parameters of INSERT, in its order."""

    site_id: uuid.UUID
    sentinel: int
    seen_id: uuid.UUID
    session_id: uuid.UUID
    user_key: str
    started_at: datetime
    last_seen_at: datetime
    event_count: int
    entry_url: str | None
    exit_url: str | None
    is_bot: bool


COUNT = """
SELECT seen_id FROM {ks}.latest_sessions WHERE site_id = ? AND sentinel = ? LIMIT ?
"""

SAMPLE = """
SELECT seen_id, session_id, user_key, started_at, last_seen_at, event_count, entry_url,
       exit_url, is_bot
FROM {ks}.latest_sessions WHERE site_id = ? AND sentinel = ? LIMIT ?
"""

SELECT_LATEST = """
SELECT session_id, user_key, started_at, last_seen_at, event_count, entry_url, exit_url, is_bot
FROM {ks}.latest_sessions WHERE site_id = ? AND sentinel = ? LIMIT ?
"""


class LatestSession(Model):
    """The live feed of sessions of a site, keyed by a non-time sentinel.

    Partitioning by time bucket alone would put every write of the moment on one
    hot partition; the sentinel is a hash of the user key into FEED_SHARDS.
    """

    __table_name__ = "latest_sessions"
    __options__ = table_options(ttl_days=1, window="hour")  # the feed's TTL, no policy

    site_id = columns.UUID(partition_key=True)
    sentinel = columns.SmallInt(partition_key=True)
    seen_id = columns.TimeUUID(primary_key=True, clustering_order="DESC")
    session_id = columns.TimeUUID(primary_key=True)
    user_key = columns.Text(required=True)
    started_at = columns.DateTime(required=True)
    last_seen_at = columns.DateTime(required=True)
    event_count = columns.Integer()
    entry_url = columns.Text()
    exit_url = columns.Text()
    is_bot = columns.Boolean(default=False)


SPEC = TableSpec(
    policies=(),
    model=LatestSession,
    purge=None,
    erasure="_delete_sessions",
    sizing="probe_latest_sessions",
)

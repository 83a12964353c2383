"""Cassandra tables for sessions and events (cqlengine; schema only, see cassandra.py).

Partition keys follow the queries (seed 002): a user's sessions newest first, a
session's events in order, and a user's events per time bucket so a range read
touches a known, bounded set of partitions.
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model


class UserSession(Model):
    """One row per session in the partition of (site, user key), newest first."""

    __table_name__ = "user_sessions"
    __options__ = {"compaction": {"class": "SizeTieredCompactionStrategy"}}

    site_id = columns.UUID(partition_key=True)
    user_key = columns.Text(partition_key=True)
    session_id = columns.TimeUUID(primary_key=True, clustering_order="DESC")
    started_at = columns.DateTime(required=True)
    last_seen_at = columns.DateTime(required=True)
    anonymous_id = columns.Text()
    user_id = columns.Text()
    event_count = columns.Integer(default=0)
    pageview_count = columns.Integer(default=0)
    click_count = columns.Integer(default=0)
    entry_url = columns.Text()
    exit_url = columns.Text()
    converted = columns.Boolean(default=False)
    is_bot = columns.Boolean(default=False)
    user_agent = columns.Text()
    ip_prefix = columns.Text()


class SessionEvent(Model):
    """Every event of one session, in time order (event TimeUUIDs sort by time)."""

    __table_name__ = "session_events"

    session_id = columns.TimeUUID(partition_key=True)
    event_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    site_id = columns.UUID(required=True)
    user_key = columns.Text(required=True)
    type = columns.Text(required=True)
    name = columns.Text()
    ts = columns.DateTime(required=True)
    url = columns.Text()
    referrer = columns.Text()
    title = columns.Text()
    element = columns.Text()  # JSON: tag, id, classes, text, href, selector
    props = columns.Text()  # JSON object
    late = columns.Boolean(default=False)


class UserEventByBucket(Model):
    """A user's events per time bucket: (site, user key, bucket start) partitions."""

    __table_name__ = "user_events_by_bucket"

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


class PipelineHeartbeat(Model):
    """Last beat → broker → worker → Cassandra round trip, one row per worker host."""

    __table_name__ = "pipeline_heartbeats"
    __options__ = {"default_time_to_live": 86400}

    worker = columns.Text(partition_key=True)
    beat_at = columns.DateTime(required=True)
    written_at = columns.DateTime(required=True)

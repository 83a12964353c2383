"""The statements the erasure job runs (each table's by its full key or partition)."""

from __future__ import annotations

SELECT_USER_SESSIONS = """
SELECT session_id, started_at, last_seen_at FROM {ks}.user_sessions
WHERE site_id = ? AND user_key = ?
"""


SELECT_SESSION_EVENT_IDS = "SELECT event_id, ts FROM {ks}.session_events WHERE session_id = ?"


SELECT_USER_BUCKET_IDS = """
SELECT event_id, session_id, ts FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ?
"""


SELECT_FEED_RANGE = """
SELECT seen_id, session_id, user_key FROM {ks}.latest_sessions
WHERE site_id = ? AND sentinel = ? AND seen_id >= ? AND seen_id <= ?
"""


SELECT_FAILED_PAYLOADS = """
SELECT failed_id, payload FROM {ks}.failed_events WHERE site_id = ? AND day = ?
"""


SELECT_LOG_ENTRIES = """
SELECT batch_id, received_at, payload FROM {ks}.transaction_log
WHERE site_id = ? AND minute = ? AND shard = ?
"""


SELECT_BUCKET_USER = """
SELECT user_key FROM {ks}.bucket_users
WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key = ?
"""


SELECT_ROLLING_KEYS = """
SELECT event_key FROM {ks}.rolling_counts
WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ?
"""


DELETE_USER_SESSIONS = "DELETE FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ?"


DELETE_SESSION_EVENTS = "DELETE FROM {ks}.session_events WHERE session_id = ?"


DELETE_USER_BUCKET = """
DELETE FROM {ks}.user_events_by_bucket WHERE site_id = ? AND user_key = ? AND bucket = ?
"""


DELETE_SITE_EVENT = """
DELETE FROM {ks}.site_events_by_bucket
WHERE site_id = ? AND bucket = ? AND shard = ? AND event_id = ?
"""


DELETE_PARTIALS = "DELETE FROM {ks}.bucket_partials WHERE site_id = ? AND bucket = ? AND shard = ?"


DELETE_FEED = """
DELETE FROM {ks}.latest_sessions
WHERE site_id = ? AND sentinel = ? AND seen_id = ? AND session_id = ?
"""


DELETE_LINKS = "DELETE FROM {ks}.identity_links WHERE site_id = ? AND user_id = ?"


DELETE_FAILED = "DELETE FROM {ks}.failed_events WHERE site_id = ? AND day = ? AND failed_id = ?"


DELETE_LOG = """
DELETE FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ? AND batch_id = ?
"""


REWRITE_LOG = """
UPDATE {ks}.transaction_log USING TTL ? SET payload = ?, event_count = ?
WHERE site_id = ? AND minute = ? AND shard = ? AND batch_id = ?
"""


DELETE_BUCKET_USER = """
DELETE FROM {ks}.bucket_users WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key = ?
"""


DELETE_ROLLING = """
DELETE FROM {ks}.rolling_counts
WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ?
"""

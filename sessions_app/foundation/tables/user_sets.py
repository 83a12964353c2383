"""user_sets: the users active in a sealed bucket of a site, and those who did each event
(roaring bitmaps of user numbers): retention cohorts, lifecycle and stickiness.

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import AGGREGATES as _AGGREGATES
from sessions_app.foundation.tables.spec import Keys, Purge, TableSpec

UPSERT = """
INSERT INTO {ks}.user_sets (site_id, granularity, bucket, name, users, names, complete)
VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ?
"""

# A week's sets (the union of its stored days, rewritten at each day's rollup) at the time
# its days were read: of two rewrites racing, the one that read later wins.
UPSERT_AT = """
INSERT INTO {ks}.user_sets (site_id, granularity, bucket, name, users, names, complete)
VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?
"""

SELECT_BUCKET = """
SELECT name, users, names, complete FROM {ks}.user_sets
WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

SELECT_NAMES = """
SELECT name, users, names, complete FROM {ks}.user_sets
WHERE site_id = ? AND granularity = ? AND bucket = ? AND name IN ?
"""

SELECT_ERASED = """
SELECT name, users, TTL(users) AS ttl FROM {ks}.user_sets
WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

PROBE_PARTITION = """
SELECT name FROM {ks}.user_sets WHERE site_id = ? AND granularity = ? AND bucket = ? LIMIT 1
"""

DELETE_PARTITION = """
DELETE FROM {ks}.user_sets WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

UPDATE_USERS = """
UPDATE {ks}.user_sets USING TTL ? SET users = ?
WHERE site_id = ? AND granularity = ? AND bucket = ? AND name = ?
"""

# Erasure: a set that cannot be read (aggregates/usersets.user_remove).
DELETE_ROW = """
DELETE FROM {ks}.user_sets WHERE site_id = ? AND granularity = ? AND bucket = ? AND name = ?
"""

POLICIES = _AGGREGATES


class UserSets(Model):
    """One sealed bucket's user sets (an hour, a day, a month; a week: the union of its
    stored days, for weekly cohorts): the row named "" holds every active user and lists
    the event names the bucket keeps (`names`: a row of a name not listed is stale, left
    by an earlier seal); one row per kept event name. `complete` is false when the
    bucket (or one it was merged from) had more event names than it keeps."""

    __table_name__ = "user_sets"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    granularity = columns.Text(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    name = columns.Text(primary_key=True)
    users = columns.Blob()  # pyroaring BitMap.serialize(): the portable roaring format
    names = columns.Set(columns.Text, frozen=True)
    complete = columns.Boolean()


SPEC = TableSpec(
    policies=POLICIES,
    model=UserSets,
    purge=Purge(PROBE_PARTITION, DELETE_PARTITION, None, Keys.GRANULARITIES, weeks=True),
    erasure="_delete_counts",
    sizing=None,
)

"""bucket_users: each user's event counts in a sealed bucket of a site (the rollup source).

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
INSERT INTO {ks}.bucket_users (site_id, granularity, bucket, user_key, counts)
VALUES (?, ?, ?, ?, ?) USING TTL ?
"""

SELECT_COUNTS = """
SELECT user_key, counts FROM {ks}.bucket_users WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

SELECT_USER = """
SELECT user_key FROM {ks}.bucket_users
WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key = ?
"""

DELETE_USER = """
DELETE FROM {ks}.bucket_users WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key = ?
"""

COUNT = """
SELECT user_key FROM {ks}.bucket_users WHERE site_id = ? AND granularity = ? AND bucket = ? LIMIT ?
"""

SAMPLE = """
SELECT user_key, counts FROM {ks}.bucket_users
WHERE site_id = ? AND granularity = ? AND bucket = ? LIMIT ?
"""

PROBE_PARTITION = """
SELECT user_key FROM {ks}.bucket_users WHERE site_id = ? AND granularity = ? AND bucket = ?
LIMIT 1
"""

DELETE_PARTITION = """
DELETE FROM {ks}.bucket_users WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

SELECT_USERS_AFTER = """
SELECT user_key FROM {ks}.bucket_users
WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key > ?
"""

POLICIES = _AGGREGATES


class BucketUsers(Model):
    """Each user's events by event key in one sealed bucket of a site: the rollup source.

    Site-partitioned so a day's rollup reads its 24 hour partitions (and a month
    its days) without knowing the users beforehand. One row per user of the
    bucket, its counts one frozen map (a single cell: a seal writes ~1/4.5 the
    rows and cells of one row per (user, key) pair, and overwrites a user's map
    whole without a tombstone). About 20 bytes plus 12 per event key.
    """

    __table_name__ = "bucket_users"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    granularity = columns.Text(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    user_key = columns.Text(primary_key=True)
    counts = columns.Map(columns.Text, columns.BigInt, frozen=True)  # event key -> events


SPEC = TableSpec(
    policies=POLICIES,
    model=BucketUsers,
    purge=Purge(PROBE_PARTITION, DELETE_PARTITION, None, Keys.GRANULARITIES),
    erasure="_delete_counts",
    sizing="probe_bucket_users",
)

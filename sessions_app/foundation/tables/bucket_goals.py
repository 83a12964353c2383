"""bucket_goals: each sealed bucket's conversions, converting sessions and users per goal,
in total and per breakdown value (domain/aggregates/goal_counts.py).

One partition per (site, resolution, bucket); a row per (goal definition's digest,
dimension, value), the total's dimension and value empty. Counts are exact for the bucket;
HyperLogLog sketches of its sessions and users (domain/aggregates/sketch.py) merge an hour into
its day and a day into its month. Overwritten whole by every seal; an erasure reseals
(no user key is stored, only the sketches' registers).

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import AGGREGATES as _AGGREGATES
from sessions_app.foundation.tables.spec import RESEAL, TableSpec

UPSERT = """
INSERT INTO {ks}.bucket_goals (site_id, granularity, bucket, goal, dimension, value,
  conversions, sessions, users, sessions_sketch, users_sketch)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?
"""

# A reseal that no longer finds a goal, a dimension or a value clears its older row.
DELETE_BUCKET = """
DELETE FROM {ks}.bucket_goals USING TIMESTAMP ?
WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

# Every row of a bucket (a rollup merges its children whole): paged.
SELECT_BUCKET = """
SELECT goal, dimension, value, conversions, sessions, users, sessions_sketch, users_sketch
FROM {ks}.bucket_goals WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

# The rows of some goals for one dimension value (the total: dimension and value empty).
SELECT_VALUE = """
SELECT goal, dimension, value, conversions, sessions, users, sessions_sketch, users_sketch
FROM {ks}.bucket_goals
WHERE site_id = ? AND granularity = ? AND bucket = ? AND goal IN ? AND dimension = ? AND value = ?
"""

# The same without the sketches a read does not merge: its visitors' only (the dashboard's
# table), or none (the comparison period's conversions).
SELECT_VALUE_USERS = """
SELECT goal, dimension, value, conversions, users, users_sketch FROM {ks}.bucket_goals
WHERE site_id = ? AND granularity = ? AND bucket = ? AND goal IN ? AND dimension = ? AND value = ?
"""

SELECT_VALUE_CONVERSIONS = """
SELECT goal, dimension, value, conversions FROM {ks}.bucket_goals
WHERE site_id = ? AND granularity = ? AND bucket = ? AND goal IN ? AND dimension = ? AND value = ?
"""

POLICIES = _AGGREGATES


class BucketGoal(Model):
    """One goal's numbers in one sealed bucket of a site: in total or for one value."""

    __table_name__ = "bucket_goals"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    granularity = columns.Text(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    goal = columns.Text(primary_key=True)  # the definition's digest (domain/goals/defs.py)
    dimension = columns.Text(primary_key=True)  # "" for the goal's total
    value = columns.Text(primary_key=True)
    conversions = columns.BigInt()
    sessions = columns.Integer()
    users = columns.Integer()
    sessions_sketch = columns.Blob()
    users_sketch = columns.Blob()


SPEC = TableSpec(
    policies=POLICIES,
    model=BucketGoal,
    purge=None,
    erasure=RESEAL,
    sizing=None,
)

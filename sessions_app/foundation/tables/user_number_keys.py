"""user_number_keys: which user key a per-site user number stands for (a cohort cell's users).

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables.retention_specs import MAX_DAYS, table_options
from sessions_app.foundation.tables.spec import TableSpec

BLOCK_BITS = 16  # 65,536 numbers a partition (a roaring container's span)

UPSERT = """
INSERT INTO {ks}.user_number_keys (site_id, block, number, user_key) VALUES (?, ?, ?, ?)
USING TTL ?
"""

SELECT_KEYS = """
SELECT number, user_key FROM {ks}.user_number_keys
WHERE site_id = ? AND block = ? AND number IN ?
"""

# Erasure of a user whose number row lost its number: the site's blocks read whole.
SELECT_BLOCK = "SELECT number, user_key FROM {ks}.user_number_keys WHERE site_id = ? AND block = ?"

DELETE_NUMBER = """
DELETE FROM {ks}.user_number_keys WHERE site_id = ? AND block = ? AND number = ?
"""


class UserNumberKeys(Model):
    """The reverse of user_numbers: numbers by block of 65,536, each with its key."""

    __table_name__ = "user_number_keys"
    __options__ = table_options(ttl_days=MAX_DAYS)

    site_id = columns.UUID(partition_key=True)
    block = columns.BigInt(partition_key=True)
    number = columns.BigInt(primary_key=True)
    user_key = columns.Text()


SPEC = TableSpec(
    policies=(),
    model=UserNumberKeys,
    purge=None,
    erasure="_delete_counts",
    sizing=None,
)

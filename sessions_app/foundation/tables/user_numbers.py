"""user_numbers: each user key's per-site number (the members of the sealed user sets).

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).

A user gets a number the first time a seal counts them (domain/aggregates/usersets.py): one
lightweight transaction per new user, none for a user already numbered. The site's next
free number is the row of the key `NEXT` (taken in blocks by compare-and-set).
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables.retention_specs import MAX_DAYS, table_options
from sessions_app.foundation.tables.spec import TableSpec

# The site's next free number; no user key is empty (the collector refuses one).
NEXT = ""
# A number outlives every set that holds it: the longest any aggregate may be kept.
TTL_SECONDS = MAX_DAYS * 86_400

SELECT_NUMBER = """
SELECT number FROM {ks}.user_numbers WHERE site_id = ? AND user_key = ?
"""

# Up to KEYS_PER_READ users' numbers in one request (a seal numbers thousands of users:
# one request per user cost the driver and the node more than the reads themselves).
SELECT_NUMBERS = """
SELECT user_key, number FROM {ks}.user_numbers WHERE site_id = ? AND user_key IN ?
"""
KEYS_PER_READ = 100

INSERT_NEW = """
INSERT INTO {ks}.user_numbers (site_id, user_key, number) VALUES (?, ?, ?)
IF NOT EXISTS USING TTL ?
"""

NEXT_MOVE = """
UPDATE {ks}.user_numbers USING TTL ? SET number = ? WHERE site_id = ? AND user_key = ?
IF number = ?
"""

DELETE_KEY = """
DELETE FROM {ks}.user_numbers WHERE site_id = ? AND user_key = ?
"""


class UserNumbers(Model):
    """A user key's number on one site: dense per site (from 0), never reused.

    One partition per key: a seal looks up the hour's users concurrently.
    """

    __table_name__ = "user_numbers"
    __options__ = table_options(ttl_days=MAX_DAYS)

    site_id = columns.UUID(partition_key=True)
    user_key = columns.Text(partition_key=True)
    number = columns.BigInt()


SPEC = TableSpec(
    policies=(),
    model=UserNumbers,
    purge=None,
    erasure="_delete_counts",
    sizing=None,
)

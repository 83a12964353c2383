"""user_properties: the latest value of each trait of a user, with when it was first
and last set.

Written from `identify` traits (domain/ingest/session_rows.py, property_rows): `value` and
`last_set_at` with the event's time as write timestamp, so the latest event wins
whatever order batches arrive or replay in; `first_set_at` with the negated event
time, so the earliest wins. A value's stamp is at most its request's receipt plus the
allowed skew (foundation/core/stamps.py), and the erasure's delete is stamped above any such stamp,
so it shadows every cell, also one of an event dated hours ahead.
Every cell has the sessions policy's TTL, so a trait set once and never again is gone
after the retention period, and `first_set_at` is the first time within it.

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

SET_VALUE = """
UPDATE {ks}.user_properties USING TIMESTAMP ? AND TTL ?
SET value = ?, last_set_at = ? WHERE site_id = ? AND user_key = ? AND name = ?
"""

SET_FIRST = """
UPDATE {ks}.user_properties USING TIMESTAMP ? AND TTL ?
SET first_set_at = ? WHERE site_id = ? AND user_key = ? AND name = ?
"""


class SetValue(NamedTuple):
    """The parameters of SET_VALUE, in its order (value: JSON text)."""

    timestamp: int
    ttl: int
    value: str
    last_set_at: datetime
    site_id: uuid.UUID
    user_key: str
    name: str


class SetFirst(NamedTuple):
    """The parameters of SET_FIRST, in its order."""

    timestamp: int
    ttl: int
    first_set_at: datetime
    site_id: uuid.UUID
    user_key: str
    name: str


SELECT = """
SELECT name, value, first_set_at, last_set_at FROM {ks}.user_properties
WHERE site_id = ? AND user_key = ? LIMIT ?
"""

# Stamped core/stamps.erasure_us(): the cells may be stamped up to the skew ahead of now.
DELETE_PARTITION = """
DELETE FROM {ks}.user_properties USING TIMESTAMP ? WHERE site_id = ? AND user_key = ?
"""

POLICIES = (retention_specs.SESSIONS,)


class UserProperty(Model):
    """One trait of one user: its latest value (JSON) and when it was first and last set."""

    __table_name__ = "user_properties"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    user_key = columns.Text(partition_key=True)
    name = columns.Text(primary_key=True)
    value = columns.Text()
    first_set_at = columns.DateTime()
    last_set_at = columns.DateTime()


SPEC = TableSpec(
    policies=POLICIES,
    model=UserProperty,
    purge=None,
    erasure="_delete_properties",
    sizing=None,
)

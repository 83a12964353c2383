"""identity_links: the anonymous ids identify() linked to a user id.

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

DELETE_PARTITION = "DELETE FROM {ks}.identity_links WHERE site_id = ? AND user_id = ?"

DELETE_ROW = """
DELETE FROM {ks}.identity_links WHERE site_id = ? AND user_id = ? AND anonymous_id = ?
"""

INSERT = """
INSERT INTO {ks}.identity_links (site_id, user_id, anonymous_id, linked_at) VALUES (?, ?, ?, ?)
USING TTL ?
"""


class Row(NamedTuple):
    """The parameters of INSERT, in its order."""

    site_id: uuid.UUID
    user_id: str
    anonymous_id: str
    linked_at: datetime
    ttl: int


SELECT_LINKED = """
SELECT anonymous_id, linked_at FROM {ks}.identity_links WHERE site_id = ? AND user_id = ? LIMIT ?
"""

POLICIES = retention_specs.LINKS  # written with the longest of their TTLs


class IdentityLink(Model):
    """Anonymous ids that identify() linked to a user id, for the user's profile."""

    __table_name__ = "identity_links"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    user_id = columns.Text(partition_key=True)
    anonymous_id = columns.Text(primary_key=True)
    linked_at = columns.DateTime(required=True)


SPEC = TableSpec(
    policies=POLICIES,
    model=IdentityLink,
    purge=None,
    erasure="_delete_links",
    sizing=None,
)

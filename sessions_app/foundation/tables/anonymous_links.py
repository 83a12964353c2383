"""anonymous_links: the user ids an anonymous id was linked to (identify, alias).

The reverse of identity_links, written beside it, so that erasing an anonymous id finds
the links in its users' partitions by the key itself.

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

INSERT = """
INSERT INTO {ks}.anonymous_links (site_id, anonymous_id, user_id, linked_at) VALUES (?, ?, ?, ?)
USING TTL ?
"""


class Row(NamedTuple):
    """The parameters of INSERT, in its order."""

    site_id: uuid.UUID
    anonymous_id: str
    user_id: str
    linked_at: datetime
    ttl: int


SELECT_USERS = """
SELECT user_id FROM {ks}.anonymous_links WHERE site_id = ? AND anonymous_id = ? LIMIT ?
"""

DELETE_PARTITION = "DELETE FROM {ks}.anonymous_links WHERE site_id = ? AND anonymous_id = ?"

DELETE_ROW = """
DELETE FROM {ks}.anonymous_links WHERE site_id = ? AND anonymous_id = ? AND user_id = ?
"""

POLICIES = retention_specs.LINKS  # written with the longest of their TTLs


class AnonymousLink(Model):
    """User ids that identify() or alias linked an anonymous id to (erasure reads it)."""

    __table_name__ = "anonymous_links"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    anonymous_id = columns.Text(partition_key=True)
    user_id = columns.Text(primary_key=True)
    linked_at = columns.DateTime(required=True)


SPEC = TableSpec(
    policies=POLICIES,
    model=AnonymousLink,
    purge=None,
    erasure="_delete_links",
    sizing=None,
)

"""user_directory: a site's users found by the prefix of a user id, an anonymous id or an
email trait (the Users page's search).

Cassandra has no prefix query across partitions, and an SAI index on this Cassandra 5.0
matches a text column exactly or by a range only within a partition key it is given
(its LIKE/prefix support is not in 5.0), so the directory is a table made for the one
question: each search term (lowercased) is a row in the partitions of its first 1, 2
and 3 characters, clustered by (term, user key); a query of q reads the partition of
q[:3] with `term >= q AND term < q + U+10FFFF`, one slice of one partition, LIMIT a
page. A user's own partition ("key:" + user key; a prefix is at most 3 characters, so
the two never meet) lists the terms written for it: erasure finds every row by the key.

Written at ingest (ingest/session_rows.directory_rows) when a session starts, an
anonymous id is linked to a user id, or an identify sets an email; with the sessions'
TTL, renewed by each new session.
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables import retention_specs
from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import TableSpec

PREFIX_LENGTHS = (1, 2, 3)
KEY_PARTITION = "key:"  # + the user key: the terms written for one user
TERM_MAX = 256  # a longer term is cut (a user key is at most 256 characters)
END = "\U0010ffff"  # above every character a term may continue with

USER_ID, ANONYMOUS_ID, EMAIL = "user_id", "anonymous_id", "email"

INSERT = """
INSERT INTO {ks}.user_directory (site_id, prefix, term, user_key, kind) VALUES (?, ?, ?, ?, ?)
USING TTL ?
"""


class Row(NamedTuple):
    """The parameters of INSERT, in its order."""

    site_id: uuid.UUID
    prefix: str
    term: str
    user_key: str
    kind: str
    ttl: int


SEARCH = """
SELECT term, user_key, kind FROM {ks}.user_directory
WHERE site_id = ? AND prefix = ? AND term >= ? AND term < ? LIMIT ?
"""

SELECT_TERMS = """
SELECT term, user_key FROM {ks}.user_directory WHERE site_id = ? AND prefix = ? LIMIT ?
"""

DELETE_ROW = """
DELETE FROM {ks}.user_directory WHERE site_id = ? AND prefix = ? AND term = ? AND user_key = ?
"""

DELETE_PARTITION = "DELETE FROM {ks}.user_directory WHERE site_id = ? AND prefix = ?"


def term_of(text: str) -> str:
    """The form a term is stored and searched in: stripped, lowercased, at most TERM_MAX."""
    return text.strip().lower()[:TERM_MAX]


def prefixes(term: str) -> list[str]:
    """The partitions a term is written to: its first 1, 2 and 3 characters."""
    return list(dict.fromkeys(term[:n] for n in PREFIX_LENGTHS if term[:n]))


def rows_for(site_id: uuid.UUID, *, text: str, user_key: str, kind: str, ttl: int) -> list[Row]:
    """The rows of one search term of a user: under each prefix and in the user's own
    partition."""
    term = term_of(text)
    if not term:
        return []
    return [
        Row(site_id, prefix, term, user_key, kind, ttl)
        for prefix in (*prefixes(term), KEY_PARTITION + user_key)
    ]


def search_bounds(query: str) -> tuple[str, str, str] | None:
    """(partition, from, to) of a prefix query, None when it has no character."""
    term = term_of(query)
    if not term:
        return None
    return term[: PREFIX_LENGTHS[-1]], term, term + END


class UserDirectory(Model):
    """Search terms of a site's users by prefix (see the module's docstring)."""

    __table_name__ = "user_directory"
    __options__ = table_options(policies=(retention_specs.SESSIONS,))

    site_id = columns.UUID(partition_key=True)
    prefix = columns.Text(partition_key=True)
    term = columns.Text(primary_key=True)
    user_key = columns.Text(primary_key=True)
    kind = columns.Text()


SPEC = TableSpec(
    policies=(retention_specs.SESSIONS,),
    model=UserDirectory,
    purge=None,
    erasure="_delete_directory",
    sizing=None,
)
